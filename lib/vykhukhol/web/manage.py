"""The subscriber's own page (docs/using/own-page.md#own-page): ``cgi/manage.py``.

A link signed by the address alone (:func:`tokens.manage_link`, in every list
letter as ``{{ manage_url }}``) opens a page with every service of the site
and the address's state in each: public services it is not in come with a
join button, private and closed ones are shown only where it is subscribed. Each change
is one POST of a form that carries the signed fields (``e``, ``t``) as hidden
inputs and an ``action``: ``leave``, ``join``, ``name``, ``fields`` (the
reader's values of the site's fields, docs/using/fields.md#fields-own-page),
``pause``, ``resume``, ``language``, ``leave_all``, ``export`` (a JSON download)
and ``erase``.

The page speaks the reader's language (docs/using/languages.md#reader-language):
the link's ``hl``, else the one the address's lines keep, else the browser's,
else the site's.

As on the other public pages: a GET or HEAD changes nothing; a link whose
token does not sign its address shows the generic "not valid" page and
nothing of anyone; a POST without the signed token changes nothing, and one
a browser says came from another site's page is refused (403) as well.

Without a link the page asks for an address and mails the link — only to an
address that is subscribed somewhere, after the answer, under the subscribe
form's hourly cap per client — and answers every address alike, so it tells
nobody who is subscribed.

The page's HTML is the templates ``manage.html``, ``manage_ask.html`` and
``manage_note.html`` (on ``manage_base.html``), drawn by their generated plain
form (:mod:`vykhukhol.web.plain_templates`: no Jinja2 in the CGI process); no
service overrides them, as the page is about an address, not a service.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial

from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.i18n import LANGUAGES, known_language, t, tr
from vykhukhol.web import templating
from vykhukhol.web.http import HttpError, Request, Response, wsgi_app
from vykhukhol.web.subscription import Site, hourly_cap, link_language

ACTIONS = ("leave", "join", "name", "fields", "pause", "resume", "language", "leave_all", "export",
           "erase")
LINK_WINDOW = 3600  # seconds: the link letters one address may be sent count within this
LINK_LIMIT = 3      # link letters per address and hour, whoever asks

def _only(request: Request, *methods: str) -> None:
    if request.method not in methods:
        raise HttpError(405, allow=methods)


def app(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        _only(request, "GET", "HEAD", "POST")
        site = Site(data)
        settings = site.settings  # 503 while there is no secret to sign with
        email, token = request.value("e").strip()[:254], request.value("t")[:100]
        if not email and not token:
            site.reader = link_language(request)
            return _ask(request, site)
        from vykhukhol import tokens

        if not tokens.check_for_address(settings.secret, email, "manage", token):
            site.reader = link_language(request)
            return site.message("link.invalid_title", "link.invalid_text", status=400)
        # A GET reads the address's lines once: for the language they keep and
        # for the page (a POST changes them, so its page reads them again).
        from vykhukhol.members import personal

        known = None if request.method == "POST" else personal.memberships(data, email)
        site.reader = known_language(request.query.get("hl")) or _kept_language(site, email, known) \
            or link_language(request)
        if known is not None:
            return _own_page(site, email, token, known=known)
        from vykhukhol.web.session import cross_site

        if cross_site(request.environ):
            raise HttpError(403)
        return _act(request, site, email, token)

    return wsgi_app(handle, lambda: Site(data).lang)


# --- the page without a link ---------------------------------------------------------

def _kept_language(site: Site, email: str, known: list | None = None) -> str | None:
    """The language the address's lines keep (the first the site speaks), or
    None; ``known``: the lines, when the caller has read them."""
    from vykhukhol.members import personal

    lines = personal.memberships(site.data, email) if known is None else known
    return next((known_language(sub.language) for _, sub in lines
                 if sub is not None and known_language(sub.language)), None)


def _ask(request: Request, site: Site) -> Response:
    lang = site.lang
    if request.method != "POST":
        return _ask_page(site)
    from vykhukhol.web.session import cross_site

    if cross_site(request.environ):  # another site's page must not make visitors ask
        raise HttpError(403)
    form = request.form()
    if form.get("action", "send_link") != "send_link":
        return _ask_page(site, tr(lang, "Unknown action."), 400)
    from vykhukhol.addresses import check_email

    try:
        address = check_email(form.get("email", ""))
    except BadInput:
        return _ask_page(site, tr(lang, "This e-mail address is not valid."), 400)
    from vykhukhol.web import bots  # docs/using/subscriber-pages.md#subscriber-bots

    client = request.client(site.settings["trusted_proxies"])
    caught = bots.caught(site.data, site.settings, form)
    # The cap is counted for every post, a bot's too, and the letter goes
    # after the answer, so neither the page nor its time tells a subscribed
    # address from any other, nor a bot that it was caught.
    allowed = hourly_cap(site.data, site, client)(True)
    if caught:  # a bot's: the person's answer, nothing sent, one log line
        request.after(lambda: bots.log_caught(site.data, "manage", client, caught))
    elif allowed:
        request.after(lambda: _mail_link(site, address))
    return _note(lang, tr(lang, "Check your mailbox"), tr(
        lang, "If {email} is subscribed to any of our lists, a letter with the link to its own "
              "page is on its way.", email=address))


def _ask_page(site: Site, error: str = "", status: int = 200) -> Response:
    from vykhukhol.web import bots

    return bots.allow_widget(_page("manage_ask.html", site.lang, status, error=error,
                                   **bots.fields(site.settings)), site.settings)


def _mail_link(site: Site, address: str) -> None:
    """The link letter, to a subscribed address only, at most LINK_LIMIT an hour."""
    from vykhukhol.members import personal

    if not any(sub is not None for _, sub in personal.memberships(site.data, address)):
        return
    from vykhukhol.addresses import email_key
    from vykhukhol.members.suppression import hashed
    from vykhukhol.web.clients import Counter

    counter = Counter(site.data.state / "manage-links", LINK_WINDOW)
    # The counter's key is the address's keyed hash: the file names nobody.
    if counter.take(hashed(site.settings.secret, email_key(address)), LINK_LIMIT):
        return
    from vykhukhol import mail, tokens
    from vykhukhol.mail import compose
    from vykhukhol.timeutil import now

    settings = site.settings
    lang = _kept_language(site, address) or site.lang  # theirs, else the asking page's
    link = tokens.manage_link(settings["site_url"], settings.secret, address, language=lang)
    subject = tr(lang, "The page of your subscriptions")
    text = tr(lang, "Hello,\n\nsomeone (you, we hope) asked for the page where {email} "
                    "manages its subscriptions. Here it is:\n\n{link}\n\nIf it was not you, "
                    "ignore this letter: nothing changes until the page is used.\n",
              email=address, link=link)
    message = compose.plain_letter(settings, address, subject, text, now())
    try:
        with mail.open_transport(mail.config_from_settings(settings, site.data.outbox)) as transport:
            transport.send(message, address)
    except mail.DeliveryError:
        pass  # the page promised nothing; the visitor may ask again


# --- the page of one address ---------------------------------------------------------

def _state_label(lang: str, sub) -> str:
    from vykhukhol.states import SubscriberState

    if sub is None:
        return tr(lang, "not subscribed")
    if sub.state is SubscriberState.NEW:
        return tr(lang, "waiting for your confirmation")
    if sub.state is SubscriberState.DONE:
        return tr(lang, "subscribed (the series is over)")
    return tr(lang, "subscribed")


def _own_page(site: Site, email: str, token: str, notice: str = "", error: str = "",
              status: int = 200, kept_name: str = "", typed: dict[str, str] | None = None,
              known: list | None = None) -> Response:
    """The own page; ``kept_name`` is the name of a list just left, which the
    join buttons carry when no list holds a name any more (a re-join keeps it;
    the site stores nothing of a person who left). ``typed``: field values a
    post typed that did not fit, shown again."""
    from vykhukhol.members import personal
    from vykhukhol.timeutil import now

    lang, settings = site.lang, site.settings
    moment = now()
    memberships = personal.memberships(site.data, email) if known is None else known
    rows, name, paused = [], "", None
    for service, sub in memberships:
        if not personal.offered(service, sub):
            continue  # a private or closed list is shown only to its subscribers
        if sub is not None:
            name = name or sub.name
            until = sub.paused_until
            if until is not None and until > moment:
                paused = max(paused or until, until)
        rows.append({"title": service.title, "name": service.name,
                     "state": _state_label(lang, sub), "member": sub is not None})
    return _page("manage.html", lang, status, email=email, token=token, notice=notice,
                 error=error, rows=rows, name=name or kept_name,
                 member=any(sub is not None for _, sub in memberships),
                 paused=_local_date(settings, paused) if paused is not None else "",
                 today=moment.strftime("%Y-%m-%d"),
                 languages=[{"code": code, "name": t(code, "language.name"), "chosen": code == lang}
                            for code in LANGUAGES],
                 form_fields=_field_inputs(site, [sub for _, sub in memberships if sub], typed))


def _field_inputs(site: Site, lines: list, typed: dict[str, str] | None) -> list[dict]:
    """The inputs of the site's fields, if it has any: a site without
    fields.ini (:data:`vykhukhol.settings.fields.FILE`, named here so that
    its module stays off the page's start-up) loads none of their machinery."""
    if not lines or not (site.data.root / "fields.ini").exists():
        return []
    from vykhukhol.web import field_inputs

    try:
        return field_inputs.own_inputs(site.data.root, site.lang, lines, typed or {})
    except BadInput:  # a hand edit broke the file: the rest of the page still serves the reader
        return []


def _local_date(settings, moment: datetime) -> str:
    """The day of ``moment`` in the site's time zone. (Reading the zone brings
    zoneinfo: only a page that shows a pause's date pays for it; the date
    field's ``min`` is the UTC day, and the POST checks the real bound.)"""
    from zoneinfo import ZoneInfo

    return moment.astimezone(ZoneInfo(settings["timezone"])).strftime("%Y-%m-%d")


def _page(template: str, lang: str, status: int = 200, **context: object) -> Response:
    """One of the own page's templates, its sentences (``_()``) in ``lang``."""
    return templating.render(template, lang, status, None, _=partial(tr, lang), **context)


def _note(lang: str, title: str, text: str) -> Response:
    """A page of one sentence under a title, in the own page's style."""
    return _page("manage_note.html", lang, title=title, text=text)


# --- the actions -----------------------------------------------------------------------

def _act(request: Request, site: Site, email: str, token: str) -> Response:
    from vykhukhol.members import personal
    from vykhukhol.timeutil import now

    lang, data = site.lang, site.data
    form = request.form()
    action = form.get("action", "")

    def again(notice: str = "", error: str = "", status: int = 200) -> Response:
        return _own_page(site, email, token, notice, error, status)

    if action not in ACTIONS:
        return again(error=tr(lang, "Unknown action."), status=400)
    try:
        if action in ("leave", "join"):
            return _leave_or_join(request, site, email, token, action, form.get("service", ""))
        if action == "name":
            personal.rename(data, email, form.get("name", ""))
            return again(tr(lang, "The name is saved."))
        if action == "fields":
            return _save_fields(site, email, token, form)
        if action == "pause":
            until = _pause_end(site, form.get("until", ""), now())
            personal.pause(data, email, until)
            return again(tr(lang, "No letters until {date}.", date=_local_date(site.settings, until)))
        if action == "resume":
            personal.pause(data, email, None)
            return again(tr(lang, "The letters go on."))
        if action == "language":
            return _language(site, email, token, form.get("language", ""))
        if action == "leave_all":
            personal.leave_all(data, email)
            return again(tr(lang, "You left every list."))
        if action == "export":
            return _export(site, email)
        return _erase(site, email, token, form.get("sure") == "yes")
    except BadInput as exc:
        return again(error=exc.text(lang), status=400)


def _leave_or_join(request: Request, site: Site, email: str, token: str, action: str,
                   name: str) -> Response:
    from vykhukhol.members import membership, personal

    lang = site.lang
    rows = {service.name: (service, sub) for service, sub in personal.memberships(site.data, email)}
    service, sub = rows.get(name, (None, None))
    if service is None or not personal.offered(service, sub):
        # No such list, or a private or closed one the address is not in: the same answer.
        return _own_page(site, email, token, error=tr(lang, "There is no such list."), status=400)
    if action == "leave":
        membership.unsubscribe(site.data, service.name, email)
        return _own_page(site, email, token, tr(lang, "You left \"{service}\".",
                                                   service=service.title),
                         kept_name=sub.name if sub is not None else "")
    if sub is not None:
        return _own_page(site, email, token, tr(lang, "You are on \"{service}\" already.",
                                                   service=service.title))
    client = request.client(site.settings["trusted_proxies"])
    name_now = next((s.name for _, s in rows.values() if s is not None and s.name), "")
    if not name_now:  # the name the join button carries from a list just left
        try:
            name_now = personal.check_name(request.form().get("name", ""))
        except BadInput:
            name_now = ""
    membership.subscribe(site.data, site.settings, service.name, email, name_now,
                         ip=client or "-", may_mail=hourly_cap(site.data, site, client),
                         later=request.after, language=site.reader)  # the page's, as the form's
    return _own_page(site, email, token, tr(
        lang, "A letter with a confirmation link is on its way: open it to join \"{service}\".",
        service=service.title))


def _language(site: Site, email: str, token: str, chosen: str) -> Response:
    """The reader's own language, on every line of the address; the page
    answers in it (docs/using/languages.md#reader-language)."""
    from vykhukhol.members import personal

    language = known_language(chosen)
    if language is None:
        return _own_page(site, email, token, error=tr(
            site.lang, "Choose Russian or English."), status=400)
    personal.set_language(site.data, email, language)
    site.reader = language
    return _own_page(site, email, token, tr(
        language, "Your letters and these pages are in English from now on."))


def _save_fields(site: Site, email: str, token: str, form: dict[str, str]) -> Response:
    """The reader's values, on every line of the address; a value that does
    not fit changes nothing and shows the page again with what was typed."""
    from vykhukhol.members import personal
    from vykhukhol.web import field_inputs

    lang = site.lang
    try:
        fields = field_inputs.asked(site.data.root)
    except BadInput:  # the owner's fields.ini, broken by a hand edit: not the reader's to read
        return _own_page(site, email, token, status=503, error=tr(
            lang, "Your details cannot be saved right now; please try again later."))
    try:
        values = field_inputs.read(fields, form, lang, partial=True)
    except BadInput as exc:
        return _own_page(site, email, token, error=exc.text(lang), status=400,
                         typed=field_inputs.typed(fields, form))
    personal.set_fields(site.data, email, values)
    return _own_page(site, email, token, tr(lang, "Your details are saved."))


def _pause_end(site: Site, typed: str, moment: datetime) -> datetime:
    """The pause's end: the start of the day typed, in the site's time zone."""
    from vykhukhol.members import personal
    from vykhukhol.timeutil import parse_local_time

    typed = typed.strip()
    if len(typed) != 10:
        raise BadInput("the date must look like 2026-12-31")
    until = parse_local_time(typed + " 00:00", site.settings["timezone"])
    return personal.check_pause(until, moment)


def _export(site: Site, email: str) -> Response:
    import json

    from vykhukhol.members import personal
    from vykhukhol.timeutil import now

    found = personal.export(site.data, site.settings, email, now())
    body = json.dumps(found, ensure_ascii=False, indent=2) + "\n"
    return Response(body.encode("utf-8"), 200, "application/json; charset=utf-8", headers=[
        ("Content-Disposition", "attachment; filename=\"my-data.json\"")])


def _erase(site: Site, email: str, token: str, sure: bool) -> Response:
    from vykhukhol.files.runlog import page_log
    from vykhukhol.members import personal
    from vykhukhol.timeutil import now

    lang = site.lang
    if not sure:
        return _own_page(site, email, token, error=tr(
            lang, "Tick the box to say you want everything erased."), status=400)
    moment = now()
    if not personal.stored(site.data, site.settings, email, moment):
        return _note(lang, tr(lang, "Nothing to erase"),
                     tr(lang, "Nothing stored here names this address any more."))
    personal.erase(site.data, site.settings, email, moment)
    # The log says that an erase happened, never whose.
    page_log(site.data).write("manage: an address was erased at its owner's request")
    return _note(lang, tr(lang, "Erased"), tr(
        lang, "Everything that named this address is erased. It will get no more letters "
              "from us."))
