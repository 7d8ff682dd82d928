"""A service's series of letters: the letter editor, its preview for a sample
subscriber, a test letter, moving and deleting letters."""

from __future__ import annotations

from functools import partial

import vykhukhol.web.admin.letter_versions as letter_versions
from vykhukhol import archive, render
from vykhukhol import services as svc
from vykhukhol.archive import pages
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.mail import compose
from vykhukhol.timeutil import format_duration, now
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.admin.services import _service
from vykhukhol.web.admin.testletters import SAMPLE, mark, sample_name, send_test
from vykhukhol.web.http import Response

__all__ = ["SAMPLE", "preview_both", "preview_letter"]
_SAID = {"subject": "subject", "body": "text", "html": "HTML"}


def _letter_form(admin: Admin) -> dict[str, str]:
    form = admin.request.form()
    fields = {k: form.get(k, "") for k in ("subject", "delay", "body", "html", "position", "test_to")}
    fields["public"] = "yes" if form.get("public") == "yes" else ""
    fields["clicks"] = "yes" if form.get("clicks") == "yes" else ""
    fields["markdown"] = "yes" if form.get("markdown") == "yes" else ""
    return {**fields, **letter_versions.from_form(admin)}


def preview_both(admin: Admin, service: svc.Service, fields: dict[str, str]) -> dict:
    """:func:`preview_letter` of the form's letter and, under ``other``, of
    the letter in the other language when the form has one."""
    out = preview_letter(admin, service, fields)
    if letter_versions.given(fields):
        out["other"] = preview_letter(
            admin, service, letter_versions.as_letter(fields, fields.get("markdown") == "yes"),
            letter_versions.other_language(admin))
    return out


def preview_letter(admin: Admin, service: svc.Service, fields: dict[str, str],
                   lang: str | None = None) -> dict:
    """Render a letter for a sample subscriber as it goes out (with its footer
    in ``lang``, None: the site's, and ``web_url``); template errors and
    unknown variables come back as text.
    The HTML part is shown in a sandboxed frame (admin/preview.html); a
    Markdown letter (``fields["markdown"]``) shows the two parts made from it."""
    email = SAMPLE["email"]
    web_url = archive.web_url(admin.settings, service, archive.PREVIEW, email, False)
    ctx = compose.context(service, admin.settings, email, sample_name(admin), now(), web_url=web_url)
    out: dict = {"warnings": unknown_warnings(admin, fields)}
    budget = render.Budget()  # one letter's budget, as when it is sent: a preview is as short
    markdown = fields.get("markdown") == "yes"
    try:
        if markdown:  # its errors name the lines as written, not those of the parts made
            render.check_syntax(fields.get("body", ""), "text")
        text, html = svc.sent_parts(fields.get("body", ""), fields.get("html"), markdown)
    except BadInput as exc:
        out["body_error"] = exc.text(admin.lang)
        text, html = "", None
    sources = {"subject": fields.get("subject", ""), "body": text, "html": html}
    for key, make in (("subject", lambda source: render.render(source, ctx, "subject", budget)),
                      ("body", lambda source: compose.footed_text(service, admin.settings, ctx,
                                                                  source, budget, lang=lang)),
                      ("html", lambda source: compose.footed_html(service, admin.settings, ctx,
                                                                  source, budget, lang=lang))):
        source = sources[key]
        if source is None or f"{key}_error" in out:
            continue
        try:
            out[key] = make(source)
        except BadInput as exc:
            out[f"{key}_error"] = exc.text(admin.lang)
    return out


def unknown_warnings(admin: Admin, fields: dict[str, str]) -> list[str]:
    """A warning for each variable a letter reads that no letter is given
    (``{{ nmae }}``): it would stay empty in every letter."""
    names = sorted({name for key in ("subject", "body", "html")
                    for name in render.unknown_variables(fields.get(key) or "")})
    return [admin._("{name} is not a variable letters are given: it stays empty in every letter "
                    "(a typo?).", name="{{ " + name + " }}") for name in names]


def saved_message(admin: Admin, message: str, fields: dict[str, str]) -> str:
    """What a save says: done, and any unknown variable (saved all the same)."""
    return " ".join([message, *unknown_warnings(admin, fields)])


def letter_add(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    fields = _letter_form(admin)
    action = admin.request.form().get("action", "save")
    if action == "preview":
        return admin.page("letter.html", service=service, number=None, fields=fields,
                          preview=preview_both(admin, service, fields), error="")
    if action == "test":
        return letter_test(admin, service, None, fields)
    try:
        position = int(fields["position"]) if fields["position"].strip() else None
    except ValueError:
        position = None
    markdown = fields["markdown"] == "yes"
    try:
        letter_versions.check(admin, fields, markdown)  # before anything is written
        number = svc.add_letter(service, fields["subject"], fields["delay"] or "0s", fields["body"],
                                fields["html"] or None, position, public=fields["public"] == "yes",
                                clicks=fields["clicks"] == "yes", markdown=markdown)
        letter_versions.save(admin, service, number, fields, markdown)
    except BadInput as exc:
        return admin.page("letter.html", 400, service=service, number=None, fields=fields,
                          preview={}, error=exc.text(admin.lang))
    return admin.done(f"/services/{service.name}",
                      saved_message(admin, admin._("Letter {number} added.", number=number), fields))


def letter_new(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    # Letter 1 goes as soon as the subscription is confirmed; later ones a day apart.
    first = not svc.letter_count(service) or admin.request.query.get("position", "") == "1"
    fields = {"subject": "", "delay": "0s" if first else "1d", "body": "", "html": "", "public": "",
              "clicks": "", "markdown": "",
              "position": admin.request.query.get("position", ""),
              "test_to": admin.settings["admin_email"], **letter_versions.blank(admin)}
    return admin.page("letter.html", service=service, number=None, fields=fields, preview={}, error="")


def letter_page(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    letter = _letter(service, int(args["number"]))
    fields = {"subject": letter.subject, "delay": format_duration(letter.delay),
              "body": letter.body, "html": letter.html or "", "position": "",
              "public": "yes" if letter.public else "", "test_to": admin.settings["admin_email"],
              "clicks": "yes" if letter.clicks else "", "markdown": "yes" if letter.markdown else "",
              **letter_versions.of_letter(admin, letter)}
    return admin.page("letter.html", service=service, number=letter.number, fields=fields,
                      preview={}, error="")


def _letter(service: svc.Service, number: int) -> svc.Letter:
    letters = svc.load_letters(service)
    if not 1 <= number <= len(letters):
        raise NotFound("no letter {number}", number=number)
    return letters[number - 1]


def letter_save(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    number = int(args["number"])
    fields = _letter_form(admin)
    action = admin.request.form().get("action", "save")
    if action == "preview":
        return admin.page("letter.html", service=service, number=number, fields=fields,
                          preview=preview_both(admin, service, fields), error="")
    if action == "test":
        return letter_test(admin, service, number, fields)
    markdown = fields["markdown"] == "yes"
    try:
        letter_versions.check(admin, fields, markdown)  # before anything is written
        svc.edit_letter(service, number, fields["subject"], fields["delay"] or "0s",
                        fields["body"], fields["html"] or None, public=fields["public"] == "yes",
                        clicks=fields["clicks"] == "yes", markdown=markdown)
        letter_versions.save(admin, service, number, fields, markdown)
    except BadInput as exc:
        return admin.page("letter.html", 400, service=service, number=number, fields=fields,
                          preview={}, error=exc.text(admin.lang))
    rebuild_archive(admin, service)
    return admin.done(f"/services/{service.name}",
                      saved_message(admin, admin._("Letter {number} saved.", number=number), fields))


def letter_test(admin: Admin, service: svc.Service, number: int | None, fields: dict) -> Response:
    """A test of the letter as it stands on the form (saved or not, ``number``
    None for a new one) to the address typed beside the button."""
    markdown = fields.get("markdown") == "yes"
    both = letter_versions.given(fields)  # then one letter in each language, each saying which

    def made(letter: dict, language: str | None, email: str, name: str):
        subject, delay = svc.check_letter(letter["subject"], fields["delay"] or "0s",
                                          letter["body"], letter["html"] or None, markdown)
        marked = mark(admin, subject, (language or admin.settings["language"]) if both else None)
        test = svc.Letter(number or 0, marked, delay, letter["body"], letter["html"] or None,
                          {"format": svc.MARKDOWN} if markdown else {})
        return compose.series_letter(service, test, admin.settings, email, name,
                                     "admin-test", now(), lang=language)

    other = partial(made, letter_versions.as_letter(fields, markdown),
                    letter_versions.other_language(admin)) if both else None
    try:
        said = send_test(admin, fields.get("test_to", ""), partial(made, fields, None), other)
    except BadInput as exc:
        return admin.page("letter.html", 400, service=service, number=number, fields=fields,
                          preview={}, error=exc.text(admin.lang))
    # In place, the form as typed: a test of an unsaved letter must not lose it.
    admin.outcome = (f"/services/{service.name}" + (f"/letters/{number}" if number else ""), said)
    admin.flash.append(said)
    return admin.page("letter.html", service=service, number=number, fields=fields,
                      preview={}, error="")


def letter_move(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    number = int(args["number"])
    if args["action"] == "delete":
        if admin.request.form().get("confirm") != "yes":  # the list's button: ask first
            letter = _letter(service, number)
            return admin.page(
                "confirm.html", title=admin._("Delete letter {number}?", number=number),
                warning=admin._("Letter {number} “{subject}” of {service} is deleted and the later letters move up. Subscribers who have not received it yet never will; nothing is sent again.",
                                number=number, subject=letter.subject, service=service.name),
                action=admin.url(f"/services/{service.name}/letters/{number}/delete"), hidden={},
                cancel=admin.url(f"/services/{service.name}"))
        svc.remove_letter(service, number)
        message = admin._("Letter {number} deleted; later letters moved up.", number=number)
    else:
        to = number - 1 if args["action"] == "up" else number + 1
        svc.move_letter(service, number, to)
        message = admin._("Letter {number} moved to position {to}.", number=number, to=to)
    rebuild_archive(admin, service)
    return admin.done(f"/services/{service.name}", message)


def rebuild_archive(admin: Admin, service: svc.Service) -> None:
    """A changed series changes what its archive shows (a letter no longer
    public leaves it at once); rebuilt only when the archive is on."""
    if service.archive:
        pages.build(admin.data, admin.settings, service)
