"""A letter's second language on the admin's letter forms: the series letter
editor and the "Letter to all users" form carry an optional subject, text and
HTML in the language that is not the site's (docs/using/services.md#letter-languages,
docs/using/newsletters.md#newsletter-languages). Readers of that language get
it; the forms show its preview beside the main one's.

It reads the form's ``other_*`` fields and writes a series letter's version;
the pages themselves stay in :mod:`.series` and :mod:`.newsletters`.
"""

from __future__ import annotations

from vykhukhol import services as svc
from vykhukhol.web.admin.core import Admin

FIELDS = ("other_subject", "other_body", "other_html")  # the form's names


def other_language(admin: Admin) -> str:
    """The language a letter may carry beside the site's."""
    return next(lang for lang in svc.LANGUAGES if lang != admin.settings["language"])


def from_form(admin: Admin) -> dict[str, str]:
    """The form's fields, and ``other_language``, the language they are in."""
    form = admin.request.form()
    return {**{name: form.get(name, "") for name in FIELDS},
            "other_language": other_language(admin)}


def blank(admin: Admin) -> dict[str, str]:
    return {**dict.fromkeys(FIELDS, ""), "other_language": other_language(admin)}


def of_letter(admin: Admin, letter: svc.Letter) -> dict[str, str]:
    """The form's fields of a saved series letter's version (blank: none)."""
    version = letter.versions.get(other_language(admin))
    if version is None:
        return blank(admin)
    return {"other_subject": version.subject, "other_body": version.body,
            "other_html": version.html or "", "other_language": other_language(admin)}


def of_job(admin: Admin, sources: dict[str, tuple[str, str, str | None, bool]]) -> dict[str, str]:
    """The form's fields of a waiting newsletter's letter in the other
    language (``sources``: :func:`newsletters.read_version_sources`)."""
    found = sources.get(other_language(admin))
    if found is None:
        return blank(admin)
    subject, text, html, _ = found
    return {"other_subject": subject, "other_body": text, "other_html": html or "",
            "other_language": other_language(admin)}


def changes(admin: Admin, fields: dict[str, str]) -> dict[str, tuple[str, str, str | None] | None]:
    """The letter in the other language as the form has it, for
    ``newsletters.edit_letter``: None when the form's fields are empty (it goes)."""
    return {other_language(admin): versions(admin, fields).get(other_language(admin))}


def given(fields: dict[str, str]) -> bool:
    """Whether the form carries the letter in the other language at all."""
    return any(fields.get(name, "").strip() for name in FIELDS)


def versions(admin: Admin, fields: dict[str, str]) -> dict[str, tuple[str, str, str | None]]:
    """The letter in the other language, as ``newsletters.create`` takes it."""
    if not given(fields):
        return {}
    return {other_language(admin): (fields["other_subject"], fields["other_body"],
                                    fields["other_html"] or None)}


def check(admin: Admin, fields: dict[str, str], markdown: bool) -> None:
    """Refuse (BadInput) a version that cannot be made, before anything is saved."""
    for subject, body, html in versions(admin, fields).values():
        svc.check_letter(subject, "0s", body, html, markdown)


def save(admin: Admin, service: svc.Service, number: int, fields: dict[str, str],
         markdown: bool) -> None:
    """Series letter ``number``'s version as the form has it: written, or
    removed when the form's fields are empty."""
    language = other_language(admin)
    if given(fields):
        svc.set_version(service, number, language, fields["other_subject"], fields["other_body"],
                        fields["other_html"] or None, markdown)
    else:
        svc.remove_version(service, number, language)


def as_letter(fields: dict[str, str], markdown: bool) -> dict[str, str]:
    """The version as the preview takes a letter's fields."""
    return {"subject": fields["other_subject"], "body": fields["other_body"],
            "html": fields["other_html"], "markdown": "yes" if markdown else ""}
