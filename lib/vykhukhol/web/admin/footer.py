"""The site's letter footer on the Settings page: data/footer.txt and
footer.html, the text and HTML footer every list letter carries
(docs/using/services.md#footer). Saving checks them as a letter is checked (they compile and
render inside the bounds) and refuses one without ``{{ unsubscribe_url }}``:
a list letter must show its reader the way out. An empty field, or one left
as the shipped default, removes the file, so the default (in the site's
language) is used again."""

from __future__ import annotations

from vykhukhol import files, render
from vykhukhol.errors import BadInput
from vykhukhol.render import footer
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response

FIELDS = (("footer_text", footer.TEXT_NAME, False), ("footer_html", footer.HTML_NAME, True))


def shown(admin: Admin, values: dict[str, str] | None = None,
          errors: dict[str, str] | None = None, warnings: list[str] | None = None) -> dict:
    """What the footer form shows: the site's files, else the defaults."""
    text, html = footer.sources(None, admin.data.root, admin.settings["language"])
    return {"values": values or {"footer_text": text, "footer_html": html},
            "errors": errors or {}, "warnings": warnings or []}


def check(source: str, html: bool) -> None:
    """Refuse a footer (:class:`BadInput`) that cannot be made or has no way out."""
    render.check_template(source, "footer", html=html)
    if not render.uses(source, "unsubscribe_url"):
        raise BadInput("footer: must contain the {link} link: every list letter shows its "
                       "reader how to leave", link="{{ unsubscribe_url }}")


def footer_save(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    values = {name: form.get(name, "").replace("\r\n", "\n") for name, _, _ in FIELDS}
    errors, lang = {}, admin.settings["language"]
    defaults = {"footer_text": footer.DEFAULT_TEXT, "footer_html": footer.DEFAULT_HTML}
    for name, _, html in FIELDS:
        source = values[name]
        if source.strip() and source.strip() != defaults[name][lang].strip():
            try:
                check(source, html)
            except BadInput as exc:
                errors[name] = exc.text(admin.lang)
    if errors:  # the typed text stays, with the reason beside it
        return admin.page("footer.html", 400, footer_form=shown(admin, values, errors))
    for name, file_name, _ in FIELDS:
        path = admin.data.root / file_name
        source = values[name]
        if not source.strip() or source.strip() == defaults[name][lang].strip():
            files.remove(path)  # the default of the site's language again
        else:
            files.atomic_write(path, source if source.endswith("\n") else source + "\n")
    message = admin._("Footer saved.")
    unknown = sorted({n for name, _, _ in FIELDS for n in render.unknown_variables(values[name])})
    if unknown:
        message += " " + admin._("Warning: {names} is not a variable letters are given, so it stays empty.",
                                 names=", ".join("{{ " + n + " }}" for n in unknown))
    return admin.done("/settings", message)
