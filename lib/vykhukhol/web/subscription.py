"""The subscriber's pages (docs/using/subscriber-pages.md#subscriber-pages): subscribe, confirm, unsubscribe.

GET and HEAD never change anything (mail scanners open every link); each
action is a POST behind one button. Answers never tell a stranger whether an
address is subscribed: the subscribe page is the same for a new, an
unconfirmed and a confirmed address, and the unsubscribe page is the same
whether the link was valid or not.

A subscribe post answers before the subscriber file is even read: the
address is looked up, stored and sent its confirmation letter after the page
(:mod:`vykhukhol.web.joining`, see ``Request.after``), so the answer's time
does not tell a new address from a known one, nor where it lies in the file. Posts are capped per client
address and hour (``subscribe_hourly_limit``, every accepted post counted
alike); over it the page is the same, nothing is stored or sent, and the run
log says so. Bots are kept out by :mod:`vykhukhol.web.bots`.

The subscriber files' machinery (:mod:`vykhukhol.members.membership`) is imported by
the actions that change them, after the answer of a subscribe post, and not by the GET pages (a CGI process pays for
every import: docs/design/startup.md#startup).
"""

from __future__ import annotations

from collections.abc import Callable

from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.addresses import check_email
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import LANGUAGES, accepted_language, known_language, reader_language, t, tr
from vykhukhol.web import templating
from vykhukhol.web.http import HttpError, Request, Response, wsgi_app

SUBSCRIBE_WINDOW = 3600  # seconds: subscribe_hourly_limit counts within this


class Site:
    """The data directory and its settings, read once per request; ``reader``:
    the language the page speaks to its reader, when not the site's
    (docs/using/languages.md#reader-language)."""

    def __init__(self, data: DataDir, reader: str | None = None) -> None:
        self.data = data
        self.reader = reader
        self._settings: settings_mod.Settings | None = None

    def _loaded(self) -> settings_mod.Settings:
        if self._settings is None:
            if not self.data.settings.exists():
                raise HttpError(503, "this installation is not initialised yet")
            self._settings = settings_mod.load(self.data.settings)
        return self._settings

    @property
    def settings(self) -> settings_mod.Settings:
        """The settings; a 503 page while there is no secret to sign links with
        (docs/reference/security.md#security-secrets: every page refuses, rather
        than trust or make forgeable links)."""
        settings = self._loaded()
        if settings.secret_problem:
            raise HttpError(503, t(self.lang, "error.no_secret"))
        return settings

    @property
    def lang(self) -> str:
        if self.reader:
            return self.reader
        try:
            return self._loaded()["language"]
        except HttpError:
            return "en"

    def service(self, name: str) -> svc.Service:
        """The list a page is about. Every public page starts here, so here each
        one refuses (503) while there is no secret, even a page that signs
        nothing: a form whose confirmation letter could carry no link helps nobody."""
        try:
            service = svc.find_service(self.data, name or "")
        except BadInput:
            raise NotFound("no such list") from None
        self.settings  # noqa: B018 - reading them is the check
        return service

    def page(self, template: str, owner: svc.Service | None = None, status: int = 200,
             **context: object) -> Response:
        """Render ``template``; ``owner`` is the service whose pages/ may override it."""
        override = owner.folder / "pages" if owner else None
        return templating.render(template, self.lang, status, override, **context)

    def message(self, title_key: str, text_key: str, owner: svc.Service | None = None,
                status: int = 200, **values: object) -> Response:
        # A result page leads back to the owner's site, where the visitor came from.
        return self.page("message.html", owner, status, title=t(self.lang, title_key),
                         text=t(self.lang, text_key, **values), home=self._loaded()["site_url"],
                         home_text=t(self.lang, "page.home"))


def link_language(request: Request) -> str | None:
    """The language of a page a letter's link opens: the link's own ``hl``
    (the reader's, unsigned: it changes the words, never what is done), else
    the best of the browser's ``Accept-Language``, else None (the site's)."""
    return known_language(request.query.get("hl")) \
        or accepted_language(request.environ.get("HTTP_ACCEPT_LANGUAGE", ""))


def _only(request: Request, *methods: str) -> None:
    if request.method not in methods:
        raise HttpError(405, allow=methods)


def subscribe(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        _only(request, "GET", "HEAD", "POST")
        site = Site(data)
        from vykhukhol.web import bots  # docs/using/subscriber-pages.md#subscriber-bots

        if request.method != "POST":
            if request.query.get("part"):
                return bots.part(site.settings, request.query["part"])
            service = site.service(request.query.get("service", ""))
            if service.form_language:  # the form asks: it is drawn in the browser's language
                site.reader = link_language(request)
            if service.closed:
                return _closed(site, service, 200)
            return _form(site, service, 200)
        form = request.form()
        service = site.service(form.get("service", ""))
        language = reader_language(form.get("language"), request.environ.get(
            "HTTP_ACCEPT_LANGUAGE", ""))
        if service.form_language:  # the answer in the language the reader chose
            site.reader = language
        if service.closed:
            return _closed(site, service, 403)
        email, name = form.get("email", "").strip(), form.get("name", "")
        client = request.client(site.settings["trusted_proxies"])
        caught = bots.caught(data, site.settings, form)
        if caught:  # a bot's: the person's answer, nothing stored, one log line
            hourly_cap(data, site, client)(False)  # counted as any post: the same time taken
            request.after(lambda: bots.log_caught(data, "subscribe", client, caught))
            return site.message("subscribe.check_title", "subscribe.check_text", service,
                                email=email[:254], service=service.title)
        try:
            address = check_email(email)
        except BadInput:
            return _form(site, service, 400, email, name, t(site.lang, "form.invalid_email"), form)
        values = None
        if service.form_fields:  # docs/using/fields.md#fields-forms
            from vykhukhol.web import field_inputs

            asked = _asked(site, service)
            try:
                values = field_inputs.read(asked, form, site.lang)
            except BadInput as exc:
                return _form(site, service, 400, email, name, exc.text(site.lang), form)
        # Counted alike for every post; the file is read after the answer
        # (web/joining.py), so the answer's cost does not depend on the address.
        allowed = hourly_cap(data, site, client)(True)

        def join_after() -> None:
            from vykhukhol.web.joining import join

            join(data, site.settings, service.name, address, name, client, allowed, values,
                 language=language)

        request.after(join_after)
        return site.message("subscribe.check_title", "subscribe.check_text", service,
                            email=address, service=service.title)

    return wsgi_app(handle, lambda: Site(data).lang)


def _choice(site: Site, service: svc.Service) -> list[dict[str, object]]:
    """The form's language choice (none unless the service offers it), the
    page's own language chosen: each its code, its name in itself, and
    whether it is the one chosen."""
    if not service.form_language:
        return []
    return [{"code": code, "name": t(code, "language.name"), "chosen": code == site.lang}
            for code in LANGUAGES]


def _asked(site: Site, service: svc.Service) -> list:
    """The fields the service's form asks for; 503 while a hand edit has left
    fields.ini unreadable (what it says is the owner's, not a visitor's)."""
    from vykhukhol.web import field_inputs

    try:
        return field_inputs.asked(site.data.root, service.form_fields)
    except BadInput:
        raise HttpError(503, tr(site.lang, "the form is being changed")) from None


def _form(site: Site, service: svc.Service, status: int, email: str = "", name: str = "",
          error: str = "", form: dict[str, str] | None = None) -> Response:
    """The subscribe form: empty, or again with ``error`` and what the post typed."""
    from vykhukhol.web import bots

    asking: dict[str, object] = {}
    if service.form_fields:
        from vykhukhol.web import field_inputs

        fields = _asked(site, service)
        asking["form_fields"] = field_inputs.inputs(fields, site.lang,
                                                    field_inputs.typed(fields, form or {}))
    extra = {"error": error} if error else {}
    return bots.allow_widget(site.page(
        "subscribe.html", service, status, service=service, email=email[:254], name=name[:100],
        languages=_choice(site, service), **extra, **asking, **bots.fields(site.settings)),
        site.settings)


def _closed(site: Site, service: svc.Service, status: int) -> Response:
    """A list closed to newcomers (docs/using/services.md#service-switches)
    says so, in the page's language; nothing is stored or sent."""
    return site.message("subscribe.closed_title", "subscribe.closed_text", service, status,
                        service=service.title)


def hourly_cap(data: DataDir, site: Site, client: str) -> Callable[[bool], bool]:
    """The hourly cap: at most ``subscribe_hourly_limit``
    accepted posts per client address and hour, each counted alike whether it
    sends a letter or not. (Counting only those that send let a client learn
    from its next post whether an address it posted was already on the list:
    own1, own2, target, own3 under a cap of 3.) Over the cap nothing is stored
    or sent, for a new address and a known one alike."""
    def may_mail(sends: bool) -> bool:
        from vykhukhol.web.clients import Counter, client_key

        counter = Counter(data.state / "subscribes", SUBSCRIBE_WINDOW, synced=False)
        return not counter.take(f"ip {client_key(client)}",
                                site.settings["subscribe_hourly_limit"])

    return may_mail


def _link(request: Request, site: Site) -> tuple[svc.Service, str, str]:
    service = site.service(request.value("s"))
    return service, request.value("e")[:254], request.value("t")[:100]


def _from_test_letter(site: Site, service: svc.Service, email: str, token: str) -> bool:
    """A link of an admin's test letter: signed for the sample address, which no
    subscriber can have (its page changes nothing and says why)."""
    from vykhukhol.tokens import TEST_ADDRESS

    return email == TEST_ADDRESS and _token_ok(site, service, email, "unsubscribe", token)


def _job(request: Request) -> str:
    """The newsletter a link came from (``n``), or "" for none or a malformed one."""
    from vykhukhol.datadir import NAME_RE

    job = request.value("n")[:40]
    return job if NAME_RE.fullmatch(job) else ""


def _count_unsubscribe(data: DataDir, job: str) -> None:
    """One more unsubscribe in the newsletter's history line, if it has one (the
    name comes from a link: it never makes a line). A history that cannot be
    written costs the count, not the unsubscribe already done."""
    from vykhukhol.errors import VykhukholError
    from vykhukhol.newsletters import history

    try:
        history.count(data, {(job, "unsubscribed"): 1}, create=False)
    except VykhukholError:
        pass


def _button_page(site: Site, purpose: str, service: svc.Service, email: str, token: str,
                 job: str = "", *, hl: str | None = None) -> Response:
    """The GET side of a signed link: one button that POSTs the same fields back.
    Nothing changes on GET or HEAD, so mail scanners that open links are harmless.

    The address (and the service's title) are shown only when the token is
    theirs; any other link gets the generic "not valid" page. Else a stranger
    could make the site print any text under its name ("Confirm that
    <your bank wants your password>"). The token says nothing of whether the
    address is subscribed, so this tells nobody who is. The link's language
    (``hl``) goes on to the page the button opens."""
    if not _token_ok(site, service, email, purpose, token):
        return site.message("link.invalid_title", "link.invalid_text", service, 400)
    extra: dict[str, str] = {}
    if purpose == "unsubscribe":
        # The way to every other list of the address, and to its data
        # (docs/using/own-page.md#own-page).
        from vykhukhol import tokens

        extra = {"manage_url": tokens.manage_link(site.settings["site_url"], site.settings.secret,
                                                  email, language=hl),
                 "manage_text": t(site.lang, "unsubscribe.manage")}
    return site.page("button.html", service, 200, title=t(site.lang, f"{purpose}.title"),
                     text=t(site.lang, f"{purpose}.text", email=email, service=service.title),
                     button=t(site.lang, f"{purpose}.button"),
                     action=f"{purpose}.py?hl={hl}" if hl else f"{purpose}.py",
                     s=service.name, e=email, token=token, n=job, **extra)


def _token_ok(site: Site, service: svc.Service, email: str, purpose: str, token: str) -> bool:
    """Whether ``token`` signs (service, email, purpose); compared in constant time."""
    from vykhukhol import tokens

    return tokens.check(site.settings.secret, service.name, email or "", purpose, token or "")


def confirm(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        _only(request, "GET", "HEAD", "POST")
        site = Site(data, link_language(request))
        service, email, token = _link(request, site)
        if request.method != "POST":
            return _button_page(site, "confirm", service, email, token,
                                hl=known_language(request.query.get("hl")))
        from vykhukhol.members import membership

        if not _token_ok(site, service, email, "confirm", token) \
                or not membership.confirm(data, site.settings, service.name, email):
            return site.message("link.invalid_title", "link.invalid_text", service, 400)
        return site.message("confirm.done_title", "confirm.done_text", service,
                            email=email, service=service.title)

    return wsgi_app(handle, lambda: Site(data).lang)


def unsubscribe(data: DataDir) -> Callable:
    def handle(request: Request) -> Response:
        _only(request, "GET", "HEAD", "POST")
        site = Site(data, link_language(request))
        service, email, token = _link(request, site)
        job = _job(request)
        if _from_test_letter(site, service, email, token):
            return site.message("test_link.title", "test_link.text", service)
        if request.method != "POST":
            return _button_page(site, "unsubscribe", service, email, token, job,
                                hl=known_language(request.query.get("hl")))
        # RFC 8058 one-click: the POST body is "List-Unsubscribe=One-Click" and the
        # fields come in the query string; request.value() reads either.
        if _token_ok(site, service, email, "unsubscribe", token):
            from vykhukhol.members import membership

            if membership.unsubscribe(data, service.name, email) and job:
                _count_unsubscribe(data, job)
        elif request.form().get("List-Unsubscribe") == "One-Click":
            # A mail provider's one-click POST is told the truth: a 200 would
            # have it tell its user the list is left while letters keep coming.
            # (A person's button keeps the generic page: nothing tells a guess.)
            return site.message("link.invalid_title", "link.invalid_text", service, 400)
        return site.message("unsubscribe.done_title", "unsubscribe.done_text", service)

    return wsgi_app(handle, lambda: Site(data).lang)
