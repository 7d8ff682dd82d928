"""Turn a letter template and a recipient into an e-mail message.

One place for the context every template sees (``name``, ``email``,
``service``, ``unsubscribe_url``, ``manage_url``, ``web_url``, ``date``, the
reader's ``fields``, and ``confirm_url`` in confirmation requests), the sender's name and address, the list headers, and
the envelope sender (docs/reference/transports.md#transports-envelope): every letter made here leaves from its own
tagged bounce address, which also stands in ``List-Unsubscribe`` as the
``mailto:``. Letters are returned written out (:class:`mail.Outgoing`), with
that envelope sender on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict

from vykhukhol import archive, mail, render, returntag, tokens
from vykhukhol.datadir import DataDir
from vykhukhol.i18n import known_language
from vykhukhol.mail import texts
from vykhukhol.mail.senders import bounce_address, sender_of, site_domain  # noqa: F401 - callers' names
from vykhukhol.render import footer
from vykhukhol.services import Letter, Service, given_html, load_services
from vykhukhol.settings import Settings


def senders(data: DataDir, settings: Settings) -> dict[str, str]:
    """Each service's From address (for the status pages' DKIM alignment check)."""
    return {service.name: sender_of(service, settings)[1] for service in load_services(data)}


def context(service: Service, settings: Settings, email: str, name: str,
            moment: datetime, job: str | None = None, web_url: str = "",
            fields: Mapping[str, str] | None = None, *,
            language: str | None = None) -> dict[str, Any]:
    """What a template sees; no value can end a line of the letter (see
    :func:`render.one_line_values`). A newsletter ``job``'s unsubscribe link
    names it, so the newsletters' history counts who left from it.
    ``web_url``: the letter "in the browser" (:func:`vykhukhol.archive.web_url`;
    empty in a confirmation request). ``fields``: the reader's values of the
    site's fields (``Subscriber.fields``; docs/using/fields.md#fields-templates).
    ``language``: the reader's own, which the links carry to the pages they
    open (docs/using/languages.md#reader-language)."""
    return render.one_line_values({
        "fields": render.fields_context(fields),
        "name": name,
        "email": email,
        "service": service.title,
        "unsubscribe_url": tokens.unsubscribe_link(settings["site_url"], settings.secret,
                                                   service.name, email, job, language=language),
        "manage_url": tokens.manage_link(settings["site_url"], settings.secret, email,
                                         language=language),
        "web_url": web_url,
        "date": moment.date().isoformat(),  # strftime("%Y-%m-%d"), at a tenth
    })


#: A run's presses, one per service, kind of letter and run id (see :class:`mail.Press`).
Presses = dict[tuple[str, bool, str], mail.Press]


def footed_parts(service: Service, settings: Settings, ctx: dict[str, str], text: str,
                 html: str | None, budget: render.Budget | None = None,
                 run_id: str = "", lang: str | None = None) -> tuple[str, str | None]:
    """The text and HTML parts of a list letter rendered with their footer:
    where the template places ``{{ footer }}``, else at the end (docs/using/services.md#footer).
    ``run_id``: a sender's run, which looks the footer files up once; ``lang``:
    the letter's language (None: the site's)."""
    budget = budget or render.Budget()
    found = _footer(service, settings, ctx, run_id, lang)  # looked up once for both parts
    body = footed_text(service, settings, ctx, text, budget, found)
    return body, footed_html(service, settings, ctx, html, budget, found) \
        if html is not None else None


#: The footer's templates (text, HTML) and the values they are rendered with.
Footer = tuple[tuple[str, str], dict[str, str]]


def _footer(service: Service, settings: Settings, ctx: dict[str, str],
            run_id: str = "", lang: str | None = None) -> Footer:
    sources = footer.sources(service.folder, service.folder.parents[2],
                             lang or settings["language"], run_id, settings["language"])
    # ctx is one line a value already (see context()); the address is new here.
    return sources, {**ctx, **render.one_line_values({"postal_address": settings["postal_address"]})}


def footed_text(service: Service, settings: Settings, ctx: dict[str, str], text: str,
                budget: render.Budget | None = None, found: Footer | None = None,
                lang: str | None = None) -> str:
    """The text part with the service's footer (see :func:`footed_parts`)."""
    (source, _), values = found or _footer(service, settings, ctx, lang=lang)
    foot = render.render(source, values, "footer", budget)
    body = render.render(text, {**ctx, "footer": foot}, "text", budget)
    return body if footer.placed(text) else footer.add_text(body, foot)


def footed_html(service: Service, settings: Settings, ctx: dict[str, str], html: str,
                budget: render.Budget | None = None, found: Footer | None = None,
                lang: str | None = None) -> str:
    """The HTML part with the service's footer (see :func:`footed_parts`)."""
    from markupsafe import Markup

    (_, source), values = found or _footer(service, settings, ctx, lang=lang)
    foot = render.render_html(source, values, "footer", budget)
    part = render.render_html(html, {**ctx, "footer": Markup(foot)}, "HTML", budget)
    return part if footer.placed(html) else footer.add_html(part, foot)


class _Shared(TypedDict):
    """What every copy of a service's letter has in common (a :class:`mail.Press`'s arguments)."""

    from_name: str
    from_email: str
    run_id: str
    list_id: str | None


class _Fields(TypedDict):
    """What one recipient's copy has of its own (:meth:`mail.Press.write`'s arguments)."""

    to_email: str
    to_name: str
    subject: str
    text: str
    html: str | None
    unsubscribe_url: str | None
    unsubscribe_mailto: str | None
    tag: str | None


def _shared(service: Service, settings: Settings, run_id: str, list_letter: bool) -> _Shared:
    """What every copy of a service's letter has in common."""
    from_name, from_email = sender_of(service, settings)
    return {"from_name": from_name, "from_email": from_email, "run_id": run_id,
            "list_id": f"{service.name}.{site_domain(settings)}" if list_letter else None}


def _message(service: Service, settings: Settings, email: str, name: str, subject: str,
             text: str, html: str | None, run_id: str, ctx: dict[str, str], bounce: str,
             list_letter: bool = True, presses: Presses | None = None,
             tag: str | None = None, footed: bool | None = None,
             lang: str | None = None) -> mail.Outgoing:
    """The letter written by the e-mail package, or by the run's press when
    ``presses`` is given (the same bytes, made faster), leaving from ``bounce``.
    A list letter (or one ``footed``) carries the footer in both parts, in
    ``lang`` (None: the site's language)."""
    budget = render.Budget()  # the letter's parts share one time budget (docs/using/services.md#template-bounds)
    html = given_html(html)
    if list_letter if footed is None else footed:
        body, html_part = footed_parts(service, settings, ctx, text, html, budget,
                                       run_id if presses is not None else "", lang)
    else:
        body = render.render(text, ctx, "text", budget)
        html_part = render.render_html(html, ctx, "HTML", budget) if html else None
    fields: _Fields = {
        "to_email": email, "to_name": name,
        "subject": render.render(subject, ctx, "subject", budget),
        "text": body,
        "html": html_part,
        "unsubscribe_url": ctx["unsubscribe_url"] if list_letter else None,
        "unsubscribe_mailto": bounce if list_letter else None,
        "tag": tag,
    }
    if presses is None:
        shared = _shared(service, settings, run_id, list_letter)
        message = mail.build_message(**shared, **fields)
        return mail.Outgoing(message.as_bytes(policy=mail.POLICY),
                             mail.check_address(shared["from_email"]), bounce)
    key = (service.name, list_letter, run_id)
    press = presses.get(key)
    if press is None:
        press = presses[key] = mail.Press(**_shared(service, settings, run_id, list_letter))
    written = press.write(**fields)
    return mail.Outgoing(written.data, written.from_address, bounce)


def series_letter(service: Service, letter: Letter, settings: Settings, email: str,
                  name: str, run_id: str, moment: datetime,
                  presses: Presses | None = None,
                  fields: Mapping[str, str] | None = None, lang: str | None = None) -> mail.Outgoing:
    """Series ``letter`` as written in ``lang`` (None: the site's language),
    whose footer it gets and whose pages its links open
    (docs/using/services.md#letter-languages); ``fields``: the reader's values."""
    web_url = archive.web_url(settings, service, str(letter.number), email, letter.public, lang)
    ctx = context(service, settings, email, name, moment, web_url=web_url, fields=fields,
                  language=lang)
    made = returntag.make(settings.secret, returntag.SERVICE, service.name, email)
    bounce = bounce_address(service, settings, returntag.SERVICE, service.name, email, made)
    text, html = letter.parts()
    return _message(service, settings, email, name, letter.subject, text, html,
                    run_id, ctx, bounce, presses=presses, tag=made, lang=lang)


def confirmation(service: Service, settings: Settings, email: str, name: str, run_id: str,
                 moment: datetime,
                 presses: Presses | None = None, reminder: bool = False,
                 fields: Mapping[str, str] | None = None, *,
                 language: str | None = None) -> mail.Outgoing:
    """The confirmation request; reminders are the same letter (docs/design/run.md#run-steps),
    with the list letters' footer (the request itself has none: docs/using/services.md#footer).
    In the reader's own ``language`` when the site speaks it, else the site's."""
    language = known_language(language)
    ctx = context(service, settings, email, name, moment, fields=fields, language=language)
    ctx["confirm_url"] = tokens.confirm_link(settings["site_url"], settings.secret,
                                             service.name, email, language=language)
    lang = language or settings["language"]
    subject = service.confirm_subject or texts.CONFIRM_SUBJECT[lang]
    body = service.confirm_body or texts.CONFIRM_BODY[lang]
    bounce = bounce_address(service, settings, returntag.SERVICE, service.name, email)
    return _message(service, settings, email, name, subject, body, None, run_id, ctx, bounce,
                    list_letter=False, presses=presses, footed=reminder, lang=language)


def newsletter(service: Service, subject: str, text: str, html: str | None,
               settings: Settings, email: str, name: str, run_id: str,
               moment: datetime, presses: Presses | None = None,
               job: str | None = None, lang: str | None = None,
               fields: Mapping[str, str] | None = None) -> mail.Outgoing:
    """A letter of newsletter ``job``; ``service`` is the one of the job's
    services the recipient is subscribed to, so its unsubscribe link works and
    its From address is the envelope's. Without ``job`` (the admin's test
    letter) the envelope is tagged for the service. ``lang``: the language
    the body is in, whose footer it gets and whose pages its links open
    (None: the site's); ``fields``: the reader's values as the job was made
    (docs/using/newsletters.md#newsletter-languages)."""
    # A newsletter's archive page is written when the job ends, so while it
    # is sent its letters link the recipient's own copy, which then leads on
    # to the archive page (README "The public archive").
    ctx = context(service, settings, email, name, moment, job,
                  archive.web_url(settings, service, job or archive.PREVIEW, email, False, lang),
                  fields, language=lang)
    kind, target = (returntag.SERVICE, service.name) if job is None else (returntag.NEWSLETTER, job)
    made = returntag.make(settings.secret, kind, target, email)
    bounce = bounce_address(service, settings, kind, target, email, made)
    return _message(service, settings, email, name, subject, text, html, run_id, ctx, bounce,
                    presses=presses, tag=made, lang=lang)


def plain_letter(settings: Settings, email: str, subject: str, text: str,
                 moment: datetime) -> mail.Outgoing:
    """A letter of the site itself, not of a list (the link to a subscriber's
    own page): plain text as given, no template, no list headers, from the
    site's address."""
    import secrets

    from_name, from_email = sender_of(None, settings)
    message = mail.build_message(from_name=from_name, from_email=from_email, to_email=email,
                                 subject=subject, text=text, run_id=f"web-{secrets.token_hex(4)}",
                                 date=moment)
    return mail.Outgoing(message.as_bytes(policy=mail.POLICY),
                         mail.check_address(from_email), from_email)
