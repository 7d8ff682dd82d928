"""The admin pages (SPEC 10): where the site owner lives.

One WSGI app, routed on PATH_INFO, the same under ``admin/index.py`` (CGI) and
``/admin/`` under ``vykhukhol serve``. Every page but the login needs a
session; every POST needs the session's CSRF token. Forms are checked as a
whole before anything is written: a page with an error shows the values the
person typed and changes nothing.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from vykhukhol import (
    auth,
    compose,
    mail,
    membership,
    newsletters,
    render,
    runlog,
    runtime,
    state,
)
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol import subscribers as subs
from vykhukhol.datadir import CHECKOUT, DataDir, check_name
from vykhukhol.errors import BadInput, Forbidden, NoSecret, NotFound, VykhukholError
from vykhukhol.health import NO_SECRET
from vykhukhol.i18n import SETTING_LABELS, tr
from vykhukhol.states import LedgerState, SubscriberState
from vykhukhol.timeutil import UTC, format_duration, now, parse_local_time
from vykhukhol.web import session
from vykhukhol.web.http import HttpError, Request, Response, redirect, wsgi_app
from vykhukhol.web.pages import render as render_page

PAGE_SIZE = 50          # subscribers per page
OUTBOX_SHOWN = 200      # newest outbox letters listed
BOUNCES_SHOWN = 200     # newest bounce results and kept messages listed
CHART_DAYS = 30
SAMPLE = {"name": "Ivan", "email": "ivan@example.org"}
SETTINGS_SHOWN = [k for k, spec in settings_mod.KEYS.items() if spec.web and k not in (
    "mode", "security.secret", "security.admin_password")]
# What names a program or a path on the host: shown, never changed from the web (SPEC 13).
SETTINGS_HOST_ONLY = [k for k, spec in settings_mod.KEYS.items() if not spec.web]


class Admin:
    """One request's view of the installation: data, settings, session."""

    def __init__(self, data: DataDir, request: Request, cgi_dir: Path) -> None:
        self.data = data
        self.cgi_dir = cgi_dir
        self.request = request
        if not data.settings.exists():
            raise NotFound("this installation is not initialised: run `vykhukhol init`")
        self.settings = settings_mod.load(data.settings)
        self.lang = self.settings["language"]
        self.sid = request.cookies.get(session.COOKIE)
        self.base = request.script.rstrip("/")
        self.flash: list[str] = []

    def _(self, text_: str, **values: object) -> str:
        return tr(self.lang, text_, **values)

    @property
    def key(self) -> bytes:
        """What signs this admin's CSRF tokens and messages: the secret; while
        there is none (the status page says why), the stored password hash,
        which only the owner's settings.ini holds, so the owner can still log
        in and read why links, pages and runs refuse."""
        if self.settings.secret_problem:
            return ("admin|" + self.settings["security.admin_password"]).encode()
        return self.settings.secret

    def url(self, path: str = "/", **query: object) -> str:
        return self.base + path + (("?" + urlencode(query)) if query else "")

    @property
    def logged_in(self) -> bool:
        return session.valid(self.data, self.sid)

    def page(self, template: str, status: int = 200, **context: object) -> Response:
        response = render_page(
            f"admin/{template}", self.lang, status, _=self._, url=self.url,
            csrf=session.csrf_token(self.key, self.sid or ""),
            flash=self.flash + self._flash_from_query(), nav=NAV, path=self.request.path or "/",
            **context)
        return response

    def done(self, path: str, message: str) -> Response:
        """After a POST: back to a page, with a message to show there. The message
        is signed, so nobody can craft a link that shows the admin a text of theirs."""
        return redirect(self.url(path, msg=message, sig=self._sign(message)))

    def _sign(self, message: str) -> str:
        return session.csrf_token(self.key, f"flash|{self.sid}|{message}")[:32]

    def _flash_from_query(self) -> list[str]:
        message, sig = self.request.query.get("msg", ""), self.request.query.get("sig", "")
        if message and sig.isascii() and hmac.compare_digest(self._sign(message), sig):
            return [message]
        return []


NAV = [("/", "Status"), ("/settings", "Settings"), ("/services", "Services"),
       ("/newsletters/new", "Letter to all users"), ("/newsletters", "Newsletters"),
       ("/outbox", "Outbox"), ("/bounces", "Bounces"), ("/password", "Password")]

Route = Callable[[Admin, dict], Response]
ROUTES: list[tuple[str, str, re.Pattern, Route]] = []


def route(method: str, pattern: str) -> Callable[[Route], Route]:
    def register(handler: Route) -> Route:
        ROUTES.append((method, pattern, re.compile(pattern + r"\Z"), handler))
        return handler
    return register


def find_route(method: str, path: str) -> tuple[Route, re.Match]:
    for verb, _, pattern, handler in ROUTES:
        match = pattern.match(path)
        if match and verb == method:
            return handler, match
    allowed = tuple(sorted({verb for verb, _, pattern, _ in ROUTES if pattern.match(path)}))
    if allowed:
        raise HttpError(405, allow=allowed + (("HEAD",) if "GET" in allowed else ()))
    raise HttpError(404)


def app(data: DataDir, cgi_dir: Path | None = None) -> Callable:
    """The admin app; ``cgi_dir`` is where the cron script lives (for its URL)."""
    cgi_dir = cgi_dir or CHECKOUT / "cgi"

    def handle(request: Request) -> Response:
        admin = Admin(data, request, cgi_dir)
        method = "GET" if request.method == "HEAD" else request.method
        handler, match = find_route(method, request.path or "/")
        public = handler in (login_form, login)
        if not public and not admin.logged_in:
            if method == "POST":
                raise HttpError(403, admin._("Your session has ended; log in again."))
            return redirect(admin.url("/login"))
        if method == "POST" and not public:
            token = request.form(20 * 1024 * 1024).get("csrf")
            if not session.csrf_ok(admin.key, admin.sid, token):
                raise HttpError(403, admin._("The form has expired; open the page again."))
        try:
            return handler(admin, match.groupdict())
        except NoSecret:  # a page that makes links (a preview, a test letter) says why
            raise HttpError(503, admin._(NO_SECRET)) from None

    def lang() -> str:
        try:
            return settings_mod.load(data.settings)["language"]
        except VykhukholError:
            return "en"

    return wsgi_app(handle, lang)


# --- login --------------------------------------------------------------------

@route("GET", "/login")
def login_form(admin: Admin, args: dict) -> Response:
    return login_page(admin)


def login_page(admin: Admin, status: int = 200, error: str = "") -> Response:
    return admin.page("login.html", status, error=error)


@route("POST", "/login")
def login(admin: Admin, args: dict) -> Response:
    request = admin.request
    if session.cross_site(request.environ):
        # Another site's page made the browser post this: refused before the
        # password is looked at, and not counted (issue 9 item 5).
        return login_page(admin, 403, admin._("Log in from this site's own login page."))
    form = request.form()
    stored = admin.settings["security.admin_password"]
    client = request.client(admin.settings["trusted_proxies"])
    browser = session.known_browser(stored, request.cookies.get(session.BROWSER_COOKIE))
    wait = session.begin_attempt(admin.data, client, browser)
    if wait:
        return login_page(admin, 429, admin._(
            "Too many wrong passwords. Try again in {minutes} minutes.",
            minutes=session.LOCKOUT // 60))
    if not stored or not auth.verify_password(form.get("password", ""), stored):
        return login_page(admin, 403, admin._(
            "Wrong password." if stored else "No admin password is set: run `vykhukhol password`."))
    session.attempt_succeeded(admin.data, client, browser)
    response = redirect(admin.url("/"))
    response.set_cookie(session.COOKIE, session.create(admin.data), secure=request.https,
                        path=admin.base or "/")
    return response


def remember_browser(admin: Admin, response: Response) -> Response:
    """A logged-in browser without a valid known-browser cookie gets one. Done
    on the status page the login leads to, not on the login's own answer, so
    that answer sets one cookie only (simple clients keep one)."""
    stored = admin.settings["security.admin_password"]
    if stored and not session.known_browser(stored, admin.request.cookies.get(session.BROWSER_COOKIE)):
        response.set_cookie(session.BROWSER_COOKIE, session.known_browser_cookie(stored),
                            secure=admin.request.https, path=admin.base or "/",
                            max_age=session.BROWSER_SECONDS)
    return response


@route("POST", "/logout")
def logout(admin: Admin, args: dict) -> Response:
    session.end(admin.data, admin.sid)
    response = redirect(admin.url("/login"))
    response.set_cookie(session.COOKIE, "", max_age=0, secure=admin.request.https,
                        path=admin.base or "/")
    return response


# --- the admin password -------------------------------------------------------------

@route("GET", "/password")
def password_form(admin: Admin, args: dict) -> Response:
    return admin.page("password.html")


@route("POST", "/password")
def password_change(admin: Admin, args: dict) -> Response:
    """Asks the current password (counted like a login, per session); the new
    one ends every other session and every other known browser."""
    form = admin.request.form()
    current, new, again = (form.get(k, "") for k in ("current", "new", "again"))
    stored = admin.settings["security.admin_password"]

    def refuse(status: int, message: str) -> Response:
        return admin.page("password.html", status, error=message)

    if session.begin_password_check(admin.data, admin.sid or ""):
        return refuse(429, admin._("Too many wrong passwords. Try again in {minutes} minutes.",
                                   minutes=session.LOCKOUT // 60))
    if not stored or not auth.verify_password(current, stored):
        return refuse(403, admin._("The current password is wrong; nothing changed."))
    if new != again:
        return refuse(400, admin._("The new passwords differ; nothing changed."))
    try:
        hashed = auth.hash_password(new)
    except BadInput:
        return refuse(400, admin._("The new password must be one line of at least {count} characters; nothing changed.",
                                   count=auth.MIN_PASSWORD))
    settings_mod.update(admin.data.settings, {"security.admin_password": hashed})
    session.end_all(admin.data, keep=admin.sid)
    # This browser's known-browser cookie is renewed on its next status page.
    return admin.done("/password", admin._("Password changed. Every other session has ended."))


# --- status -------------------------------------------------------------------

@route("GET", "/")
def status(admin: Admin, args: dict) -> Response:
    data, settings = admin.data, admin.settings
    locks = []
    for lock in [newsletters.lock(data)] + [svc.db_lock(data, db) for db in svc.list_dbs(data)]:
        holder = lock.holder()
        if holder:
            age = int(datetime.now(UTC).timestamp() - holder.since)
            locks.append((str(lock.busy.relative_to(data.root)), holder.lease, format_duration(max(age, 0))))
    entries = runlog.recent(data, 2000)
    cron = cron_url(settings, admin.cgi_dir)
    return remember_browser(admin, admin.page(
        "status.html", mode=settings["mode"], block=state.block_reason(data), locks=locks,
        runs=recent_runs(entries)[:15], alerts=[e for e in entries if e.level == "alert"][-15:][::-1],
        cron_url=cron, crontab=f"*/5 * * * * wget -q -t 1 -O /dev/null {cron}" if cron else "",
        warnings=warnings(admin), chart=chart(admin), local=lambda t: local_time(settings, t)))


def cron_url(settings: settings_mod.Settings, cgi_dir: Path) -> str:
    scripts = sorted(cgi_dir.glob("cron-*.py"))
    return f"{settings['site_url']}/cgi/{scripts[0].name}" if scripts else ""


def recent_runs(entries: list[runlog.Entry]) -> list[dict]:
    """Runs from the log, newest first: lease, start, duration, letters, why it stopped."""
    runs: dict[str, dict] = {}
    for entry in entries:
        run = runs.setdefault(entry.lease, {"lease": entry.lease, "start": entry.time,
                                            "end": "", "letters": "", "why": "", "alerts": 0})
        if entry.message.startswith("run ended"):
            run["end"] = entry.time
            # Anchored at both ends: a search would retry its lazy middle at every
            # "after" in a long line, in time growing with the square of its length.
            found = re.fullmatch(r"run ended after ([\d.]+)s: (.*); letters (\d+)", entry.message)
            if found:
                run["duration"], run["why"], run["letters"] = found.groups()
        if entry.level == "alert":
            run["alerts"] += 1
    return [r for r in runs.values() if not r["lease"].startswith("web-")][::-1]


def warnings(admin: Admin) -> list[str]:
    from vykhukhol import health

    return health.warnings(admin.data, admin.settings, admin.cgi_dir, admin._)


def _local_date(settings: settings_mod.Settings, header: str) -> str:
    """A Date header shown in the settings' time zone, like every other time here."""
    from email.utils import parsedate_to_datetime

    try:
        moment = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):  # not a date: shown as written
        return header
    try:
        return moment.astimezone(ZoneInfo(settings["timezone"])).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError):  # a date at the calendar's ends: shown as written
        return header


def local_time(settings: settings_mod.Settings, stamp: str) -> str:
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return moment.astimezone(ZoneInfo(settings["timezone"])).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, ValueError):  # not a time, or one at the calendar's ends
        return stamp


def chart(admin: Admin) -> dict:
    """Subscriptions and letters per day over the last 30 days, as SVG bars."""
    zone = ZoneInfo(admin.settings["timezone"])
    today = now().astimezone(zone).date()
    days = [today - timedelta(days=i) for i in range(CHART_DAYS - 1, -1, -1)]
    joined = dict.fromkeys(days, 0)
    # Only times near the chart are moved to the zone: one at the calendar's
    # ends (0001-01-01 typed into a file) would overflow there.
    since, until = now() - timedelta(days=CHART_DAYS + 1), now() + timedelta(days=1)
    for service in svc.load_services(admin.data):
        for sub in subs.subscribers(service.subscribers_path):
            if sub.subscribed and since <= sub.subscribed <= until:
                day = sub.subscribed.astimezone(zone).date()
                if day in joined:
                    joined[day] += 1
    sent_by_day = state.read_kv(admin.data.state / "daily")
    sent = {day: int(sent_by_day.get(day.isoformat(), "0") or 0) for day in days}
    top = max([1, *joined.values(), *sent.values()])
    width, height = 600, 120
    step = width / CHART_DAYS
    bars, columns, labels = [], [], []
    for index, day in enumerate(days):
        x = index * step
        for offset, value, kind in ((0.1, joined[day], "joined"), (0.5, sent[day], "sent")):
            h = round(value / top * (height - 10), 1)
            bars.append({"x": round(x + offset * step, 1), "y": round(height - h, 1),
                         "w": round(step * 0.38, 1), "h": h, "kind": kind})
        # One invisible column a day carries both values, so hovering anywhere
        # over a day shows them.
        columns.append({"x": round(x, 1), "w": round(step, 1), "title": admin._(
            "{day}: {joined} subscriptions, {sent} letters sent",
            day=day.isoformat(), joined=joined[day], sent=sent[day])})
        if (CHART_DAYS - 1 - index) % 7 == 0:  # a label a week, today's included
            labels.append({"x": round(x + step / 2, 1), "text": f"{day:%d.%m}"})
    return {"bars": bars, "columns": columns, "labels": labels, "width": width,
            "height": height, "top": top, "joined": sum(joined.values()),
            "sent": sum(sent.values()), "first": days[0].isoformat(), "last": days[-1].isoformat()}


@route("POST", "/mode")
def change_mode(admin: Admin, args: dict) -> Response:
    mode = admin.request.form().get("mode", "")
    if mode not in ("debug", "working"):
        raise BadInput(admin._("Unknown mode."))
    cleared = runtime.set_mode(admin.data, admin.data.settings, mode)
    message = admin._("Mode: {mode}.", mode=mode)
    if cleared:
        message += " " + admin._("Cleared: {what}.", what=", ".join(cleared))
    return admin.done("/", message)


# --- settings -------------------------------------------------------------------

def _settings_values(admin: Admin) -> dict[str, str]:
    return {k: admin.settings.raw.get(k, settings_mod.KEYS[k].default)
            for k in SETTINGS_SHOWN + SETTINGS_HOST_ONLY}


@route("GET", "/settings")
def settings_page(admin: Admin, args: dict) -> Response:
    return admin.page("settings.html", keys=settings_mod.KEYS, shown=SETTINGS_SHOWN,
                      host_only=SETTINGS_HOST_ONLY, values=_settings_values(admin), errors={},
                      labels=SETTING_LABELS)


@route("POST", "/settings")
def settings_save(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    # The form has no such field: a POST that has one was made by hand. Refuse it
    # whole (nothing saved), rather than save the rest as if all were well.
    for key in SETTINGS_HOST_ONLY:
        if key in form:
            raise Forbidden(admin._("{key} is changed only with the command line (`vykhukhol settings set`) or in settings.ini, never from the web; nothing was saved.", key=key))
    values, errors = {}, {}
    for key in SETTINGS_SHOWN:
        spec = settings_mod.KEYS[key]
        value = form.get(key, "")
        if spec.secret and value == "":
            continue  # an empty password field keeps the stored password
        values[key] = value
        try:
            settings_mod.check(key, value)
        except BadInput as exc:
            errors[key] = exc.message
    if not errors:
        try:
            admin.lang = settings_mod.update(admin.data.settings, values)["language"]
        except BadInput as exc:  # values fine one by one; the DKIM key they name is not
            errors["mail.dkim_domain"] = exc.message
    if errors:
        shown = _settings_values(admin)
        shown.update(values)
        return admin.page("settings.html", 400, keys=settings_mod.KEYS, shown=SETTINGS_SHOWN,
                          host_only=SETTINGS_HOST_ONLY, values=shown, errors=errors,
                          labels=SETTING_LABELS)
    return admin.done("/settings", admin._("Settings saved."))


@route("POST", "/settings/test")
def settings_test(admin: Admin, args: dict) -> Response:
    to = admin.settings["admin_email"]
    if not to:
        return admin.done("/settings", admin._("Set admin_email first."))
    message = mail.build_message(
        from_name="Vykhukhol", from_email=admin.settings["mail.from_email"] or to, to_email=to,
        subject=admin._("Vykhukhol test letter"),
        text=admin._("If you read this, the mail settings work."), run_id="admin-test")
    return admin.done("/settings", send_now(admin, message, to))


def send_now(admin: Admin, message, to: str) -> str:
    try:
        with mail.open_transport(admin.settings.mail_config(admin.data.outbox)) as transport:
            transport.send(message, to)
    except mail.DeliveryError as exc:
        return admin._("The letter could not be sent: {detail}", detail=exc.detail)
    except BadInput as exc:  # the mail settings themselves (a sendmail_path that cannot run)
        return admin._("The letter could not be sent: {detail}", detail=exc.message)
    return admin._("A test letter went to {to}.", to=to)


# --- services -------------------------------------------------------------------

@route("GET", "/services")
def services_page(admin: Admin, args: dict) -> Response:
    rows = []
    for service in svc.load_services(admin.data):
        rows.append({"service": service, "counts": subs.counts(service.subscribers_path),
                     "letters": svc.letter_count(service)})
    return admin.page("services.html", rows=rows, dbs=svc.list_dbs(admin.data), form={}, error="")


@route("POST", "/dbs")
def db_add(admin: Admin, args: dict) -> Response:
    name = admin.request.form().get("db", "").strip()
    svc.add_db(admin.data, name)
    return admin.done("/services", admin._("DB {name} created.", name=name))


@route("POST", "/services")
def service_add(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    name = form.get("name", "").strip()
    try:
        svc.add_service(admin.data, name, form.get("db", ""), {
            k: form.get(k, "") for k in ("title", "from_name", "from_email", "delete_finished",
                                         "send_window")})
    except VykhukholError as exc:
        rows = [{"service": s, "counts": subs.counts(s.subscribers_path),
                 "letters": svc.letter_count(s)} for s in svc.load_services(admin.data)]
        return admin.page("services.html", 400, rows=rows, dbs=svc.list_dbs(admin.data),
                          form=form, error=exc.message)
    return admin.done(f"/services/{name}", admin._("Service {name} created; it is disabled until you enable it.", name=name))


def _service(admin: Admin, name: str) -> svc.Service:
    try:
        return svc.find_service(admin.data, name)
    except BadInput:
        raise NotFound(admin._("No such service.")) from None


def _series_notes(service: svc.Service, letters: list[svc.Letter]) -> dict[int, int]:
    """For each position, how many subscribers are already past it (they skip
    a letter inserted there)."""
    counts: dict[int, int] = {}
    for sub in subs.subscribers(service.subscribers_path):
        counts[sub.sent] = counts.get(sub.sent, 0) + 1
    past = {}
    for position in range(1, len(letters) + 2):
        past[position] = sum(c for sent, c in counts.items() if sent >= position)
    return past


@route("GET", "/services/(?P<name>[^/]+)")
def service_page(admin: Admin, args: dict, error: str = "", status: int = 200,
                 form: dict | None = None) -> Response:
    service = _service(admin, args["name"])
    try:
        letters = svc.load_letters(service)
        letters_error = ""
    except BadInput as exc:
        letters, letters_error = [], exc.message
    snippet = form_snippet(admin.settings, service)
    return admin.page("service.html", status, service=service, letters=letters,
                      letters_error=letters_error, counts=subs.counts(service.subscribers_path),
                      past=_series_notes(service, letters), snippet=snippet, error=error,
                      form=form or {}, format_duration=format_duration)


def form_snippet(settings: settings_mod.Settings, service: svc.Service) -> str:
    action = f"{settings['site_url']}/cgi/subscribe.py"
    return (f'<form method="post" action="{action}">\n'
            f'  <input type="hidden" name="service" value="{service.name}">\n'
            '  <input type="email" name="email" required placeholder="e-mail">\n'
            '  <input type="text" name="name" placeholder="name">\n'
            '  <input type="text" name="website" value="" tabindex="-1" autocomplete="off" '
            'style="position:absolute;left:-10000px" aria-hidden="true">\n'
            '  <button type="submit">Subscribe</button>\n</form>')


@route("POST", "/services/(?P<name>[^/]+)")
def service_edit(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    form = admin.request.form()
    fields = {k: form.get(k, "") for k in svc.SERVICE_FIELDS if k != "enabled"}
    try:
        svc.edit_service(admin.data, service.name, fields)
    except BadInput as exc:
        return service_page(admin, args, exc.text(admin.lang), 400, form)
    return admin.done(f"/services/{service.name}", admin._("Saved."))


@route("POST", "/services/(?P<name>[^/]+)/(?P<action>enable|disable)")
def service_toggle(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    enable = args["action"] == "enable"
    svc.edit_service(admin.data, service.name, {"enabled": "yes" if enable else "no"})
    return admin.done(f"/services/{service.name}",
                      admin._("Enabled.") if enable else admin._("Disabled."))


@route("GET", "/services/(?P<name>[^/]+)/delete")
def service_delete_form(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    return admin.page("confirm_delete.html", service=service,
                      counts=subs.counts(service.subscribers_path))


@route("POST", "/services/(?P<name>[^/]+)/delete")
def service_delete(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    if admin.request.form().get("confirm_name") != service.name:
        return admin.page("confirm_delete.html", 400, service=service,
                          counts=subs.counts(service.subscribers_path),
                          error=admin._("Type the service's name to confirm."))
    svc.remove_service(admin.data, service.name)
    state.forget_due(admin.data, service.name)
    return admin.done("/services", admin._("Service {name} deleted.", name=service.name))


# --- the series editor ------------------------------------------------------------

def _letter_form(admin: Admin) -> dict[str, str]:
    form = admin.request.form()
    return {k: form.get(k, "") for k in ("subject", "delay", "body", "html", "position")}


def preview_letter(admin: Admin, service: svc.Service, fields: dict[str, str]) -> dict:
    """Render a letter for a sample subscriber; template errors come back as text."""
    ctx = compose.context(service, admin.settings, SAMPLE["email"], SAMPLE["name"], now())
    out = {}
    budget = render.Budget()  # one letter's budget, as when it is sent: a preview is as short
    for key, renderer in (("subject", render.render), ("body", render.render),
                          ("html", render.render_html)):
        if key == "html" and not fields.get("html"):
            continue
        try:
            out[key] = renderer(fields.get(key, ""), ctx, key, budget)
        except BadInput as exc:
            out[f"{key}_error"] = exc.text(admin.lang)
    return out


@route("POST", "/services/(?P<name>[^/]+)/letters")
def letter_add(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    fields = _letter_form(admin)
    action = admin.request.form().get("action", "save")
    if action == "preview":
        return admin.page("letter.html", service=service, number=None, fields=fields,
                          preview=preview_letter(admin, service, fields), error="")
    try:
        position = int(fields["position"]) if fields["position"].strip() else None
    except ValueError:
        position = None
    try:
        number = svc.add_letter(service, fields["subject"], fields["delay"] or "0s", fields["body"],
                                fields["html"] or None, position)
    except BadInput as exc:
        return admin.page("letter.html", 400, service=service, number=None, fields=fields,
                          preview={}, error=exc.text(admin.lang))
    state.forget_due(admin.data, service.name)
    return admin.done(f"/services/{service.name}", admin._("Letter {number} added.", number=number))


@route("GET", "/services/(?P<name>[^/]+)/letters/new")
def letter_new(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    fields = {"subject": "", "delay": "1d", "body": "", "html": "",
              "position": admin.request.query.get("position", "")}
    return admin.page("letter.html", service=service, number=None, fields=fields, preview={}, error="")


@route("GET", "/services/(?P<name>[^/]+)/letters/(?P<number>\\d{1,3})")
def letter_page(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    letter = _letter(service, int(args["number"]))
    fields = {"subject": letter.subject, "delay": format_duration(letter.delay),
              "body": letter.body, "html": letter.html or "", "position": ""}
    return admin.page("letter.html", service=service, number=letter.number, fields=fields,
                      preview={}, error="")


def _letter(service: svc.Service, number: int) -> svc.Letter:
    letters = svc.load_letters(service)
    if not 1 <= number <= len(letters):
        raise NotFound(f"no letter {number}")
    return letters[number - 1]


@route("POST", "/services/(?P<name>[^/]+)/letters/(?P<number>\\d{1,3})")
def letter_save(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    number = int(args["number"])
    fields = _letter_form(admin)
    action = admin.request.form().get("action", "save")
    if action == "preview":
        return admin.page("letter.html", service=service, number=number, fields=fields,
                          preview=preview_letter(admin, service, fields), error="")
    if action == "test":
        return letter_test(admin, service, number, fields)
    try:
        svc.edit_letter(service, number, fields["subject"], fields["delay"] or "0s",
                        fields["body"], fields["html"] or None)
    except BadInput as exc:
        return admin.page("letter.html", 400, service=service, number=number, fields=fields,
                          preview={}, error=exc.text(admin.lang))
    state.forget_due(admin.data, service.name)
    return admin.done(f"/services/{service.name}", admin._("Letter {number} saved.", number=number))


def letter_test(admin: Admin, service: svc.Service, number: int, fields: dict) -> Response:
    to = admin.settings["admin_email"]
    if not to:
        return admin.done(f"/services/{service.name}/letters/{number}", admin._("Set admin_email first."))
    try:
        subject, delay = svc.check_letter(fields["subject"], fields["delay"] or "0s",
                                          fields["body"], fields["html"] or None)
        letter = svc.Letter(number, subject, delay, fields["body"], fields["html"] or None)
        message = compose.series_letter(service, letter, admin.settings, to, SAMPLE["name"],
                                        "admin-test", now())
    except BadInput as exc:
        return admin.page("letter.html", 400, service=service, number=number, fields=fields,
                          preview={}, error=exc.text(admin.lang))
    return admin.done(f"/services/{service.name}/letters/{number}", send_now(admin, message, to))


@route("POST", "/services/(?P<name>[^/]+)/letters/(?P<number>\\d{1,3})/(?P<action>up|down|delete)")
def letter_move(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    number = int(args["number"])
    if args["action"] == "delete":
        if admin.request.form().get("confirm") != "yes":  # the list's button: ask first
            letter = _letter(service, number)
            return admin.page(
                "confirm.html", title=admin._("Delete letter {number}?", number=number),
                warning=admin._("Letter {number} «{subject}» of {service} is deleted and the later letters move up. Subscribers who have not received it yet never will; nothing is sent again.",
                                number=number, subject=letter.subject, service=service.name),
                action=admin.url(f"/services/{service.name}/letters/{number}/delete"), hidden={},
                cancel=admin.url(f"/services/{service.name}"))
        svc.remove_letter(service, number)
        message = admin._("Letter {number} deleted; later letters moved up.", number=number)
    else:
        to = number - 1 if args["action"] == "up" else number + 1
        svc.move_letter(service, number, to)
        message = admin._("Letter {number} moved to position {to}.", number=number, to=to)
    state.forget_due(admin.data, service.name)
    return admin.done(f"/services/{service.name}", message)


# --- subscribers -----------------------------------------------------------------------

@route("GET", "/services/(?P<name>[^/]+)/subscribers")
def subscribers_page(admin: Admin, args: dict, result: dict | None = None,
                     error: str = "", status: int = 200) -> Response:
    service = _service(admin, args["name"])
    query = admin.request.query.get("q", "").strip().lower()[:100]
    try:
        page = max(1, int(admin.request.query.get("page", "1")))
    except ValueError:
        page = 1
    found, total = [], 0
    start = (page - 1) * PAGE_SIZE
    for item in subs.read(service.subscribers_path):
        if isinstance(item, subs.Malformed):
            continue
        if query and query not in item.email.lower() and query not in item.name.lower():
            continue
        if start <= total < start + PAGE_SIZE:
            found.append(item)
        total += 1
    pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
    return admin.page("subscribers.html", status, service=service, found=found, total=total,
                      page=page, pages=pages, q=query, result=result, error=error,
                      states=SubscriberState, local=lambda t: local_time(admin.settings, t))


@route("POST", "/services/(?P<name>[^/]+)/subscribers")
def subscriber_add(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    form = admin.request.form()
    confirmed = form.get("confirmed") == "yes"
    try:
        outcome = membership.subscribe(admin.data, admin.settings, service.name,
                                       form.get("email", ""), form.get("name", ""), ip="admin",
                                       confirmed=confirmed)
    except BadInput as exc:
        return subscribers_page(admin, args, error=exc.message, status=400)
    messages = {"added": admin._("Added."), "known": admin._("Already subscribed; nothing changed."),
                "confirmed": admin._("Confirmed."), "too soon": admin._("Asked to confirm less than 10 minutes ago."),
                "asked again": admin._("Asked to confirm again.")}
    return admin.done(f"/services/{service.name}/subscribers", messages[outcome])


@route("POST", "/services/(?P<name>[^/]+)/subscribers/delete")
def subscriber_delete(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    email = admin.request.form().get("email", "")
    if admin.request.form().get("confirm") != "yes":  # the list's button: ask first
        return admin.page(
            "confirm.html", title=admin._("Delete {email}?", email=email),
            warning=admin._("{email} is deleted from {service} with its progress; its pending letters to all users are skipped. It cannot be undone.",
                            email=email, service=service.name),
            action=admin.url(f"/services/{service.name}/subscribers/delete"),
            hidden={"email": email}, cancel=admin.url(f"/services/{service.name}/subscribers"))
    membership.remove(admin.data, service.name, email)
    return admin.done(f"/services/{service.name}/subscribers", admin._("{email} deleted.", email=email))


@route("POST", "/services/(?P<name>[^/]+)/import")
def subscribers_import(admin: Admin, args: dict) -> Response:
    service = _service(admin, args["name"])
    form = admin.request.form(20 * 1024 * 1024)
    raw = admin.request.upload("file")
    content = form.get("text", "")
    if raw:
        try:
            content = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            return subscribers_page(admin, args, error=admin._("The file is not UTF-8 text."), status=400)
    if not content.strip():
        return subscribers_page(admin, args, error=admin._("Nothing to import."), status=400)
    result = membership.import_addresses(admin.data, admin.settings, service.name, content,
                                         form.get("confirmed") == "yes")
    return subscribers_page(admin, args, result=result)


@route("GET", "/services/(?P<name>[^/]+)/export.csv")
def subscribers_export(admin: Admin, args: dict) -> Response:
    import io

    from vykhukhol.export import write_csv

    service = _service(admin, args["name"])
    out = io.StringIO()
    write_csv(service.subscribers_path, out)
    response = Response(out.getvalue(), content_type="text/csv; charset=utf-8")
    response.headers.append(("Content-Disposition", f'attachment; filename="{service.name}.csv"'))
    return response


# --- letters to all users -------------------------------------------------------------

def _audience(admin: Admin) -> tuple[list[dict], int]:
    rows, seen = [], set()
    for service in svc.load_services(admin.data):
        count = 0
        for sub in subs.subscribers(service.subscribers_path):
            if sub.state.confirmed:
                count += 1
                seen.add(sub.key)
        rows.append({"service": service, "confirmed": count})
    return rows, len(seen)


@route("GET", "/newsletters/new")
def newsletter_form(admin: Admin, args: dict, fields: dict | None = None, error: str = "",
                    preview: dict | None = None, status: int = 200) -> Response:
    audience, unique = _audience(admin)
    fields = fields or {"services": [], "subject": "", "text": "", "html": "", "at": ""}
    return admin.page("newsletter_new.html", status, audience=audience, unique=unique,
                      fields=fields, error=error, preview=preview or {})


@route("POST", "/newsletters/new")
def newsletter_create(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    chosen = [k[len("svc_"):] for k in form if k.startswith("svc_")]
    fields = {"services": chosen, "subject": form.get("subject", ""), "text": form.get("text", ""),
              "html": form.get("html", ""), "at": form.get("at", "").replace("T", " ")}
    action = form.get("action", "create")
    if action in ("preview", "test"):
        service = None
        for name in chosen:
            try:
                service = svc.find_service(admin.data, name)
                break
            except VykhukholError:
                continue
        if service is None:
            return newsletter_form(admin, args, fields, admin._("Choose at least one service."), status=400)
        letter = {"subject": fields["subject"], "body": fields["text"], "html": fields["html"]}
        if action == "preview":
            return newsletter_form(admin, args, fields, preview=preview_letter(admin, service, letter))
        to = admin.settings["admin_email"]
        if not to:
            return newsletter_form(admin, args, fields, admin._("Set admin_email first."), status=400)
        try:
            message = compose.newsletter(service, fields["subject"], fields["text"],
                                         fields["html"] or None, admin.settings, to, SAMPLE["name"],
                                         "admin-test", now())
        except BadInput as exc:
            return newsletter_form(admin, args, fields, exc.text(admin.lang), status=400)
        return newsletter_form(admin, args, fields, send_now(admin, message, to))
    try:
        start = newsletters.check_start(parse_local_time(fields["at"], admin.settings["timezone"])) \
            if fields["at"].strip() else None
        name = newsletters.create(admin.data, chosen, fields["subject"], fields["text"],
                                  fields["html"] or None, start)
    except BadInput as exc:
        return newsletter_form(admin, args, fields, exc.text(admin.lang), status=400)
    return admin.done("/newsletters", admin._("Newsletter {name} created.", name=name))


@route("GET", "/newsletters")
def newsletters_page(admin: Admin, args: dict) -> Response:
    jobs = []
    for job in newsletters.list_jobs(admin.data):
        count = newsletters.counts(admin.data.job(job.name, "list"))
        try:
            subject = newsletters.read_letter(admin.data, job.name)[0]
        except NotFound:
            subject = "?"
        failed = [r.email for r in newsletters.read_rows(admin.data.job(job.name, "list"))
                  if r.state is LedgerState.FAILED][:20]
        start_local = job.start.astimezone(ZoneInfo(admin.settings["timezone"]))
        jobs.append({"job": job, "count": count, "subject": subject, "failed": failed,
                     "start": start_local.strftime("%Y-%m-%d %H:%M"),
                     "start_input": start_local.strftime("%Y-%m-%dT%H:%M"),
                     "due": job.start <= now()})
    return admin.page("newsletters.html", jobs=jobs, states=LedgerState)


def _job(admin: Admin, name: str) -> str:
    try:
        return check_name(name, "newsletter name")
    except BadInput:
        raise NotFound(admin._("No such newsletter.")) from None


@route("POST", "/newsletters/(?P<job>[^/]+)/cancel")
def newsletter_cancel(admin: Admin, args: dict) -> Response:
    name = _job(admin, args["job"])
    newsletters.cancel(admin.data, name)
    return admin.done("/newsletters", admin._("Newsletter {name} cancelled.", name=name))


@route("POST", "/newsletters/(?P<job>[^/]+)/start")
def newsletter_start(admin: Admin, args: dict) -> Response:
    name = _job(admin, args["job"])
    at = admin.request.form().get("at", "").replace("T", " ")
    newsletters.reschedule(admin.data, name, parse_local_time(at, admin.settings["timezone"]))
    return admin.done("/newsletters", admin._("Start time changed."))


# --- outbox -------------------------------------------------------------------------

@route("GET", "/outbox")
def outbox_page(admin: Admin, args: dict) -> Response:
    letters = []
    for path in mail.list_outbox(admin.data.outbox)[:OUTBOX_SHOWN]:
        try:
            shown = mail.show_outbox(path)
        except VykhukholError:
            continue
        letters.append({"file": path.name, "to": shown.header("To"),
                        "subject": shown.header("Subject"),
                        "date": _local_date(admin.settings, shown.header("Date"))})
    return admin.page("outbox.html", letters=letters, total=len(mail.list_outbox(admin.data.outbox)))


@route("GET", "/outbox/(?P<file>[A-Za-z0-9@._+-]{1,300}\\.eml)")
def outbox_letter(admin: Admin, args: dict) -> Response:
    path = admin.data.outbox / args["file"]
    if path.parent != admin.data.outbox or not path.is_file():
        raise NotFound(admin._("No such letter."))
    shown = mail.show_outbox(path)  # whatever the file holds: never a 500
    return admin.page("outbox_letter.html", file=args["file"], headers=shown.headers,
                      plain=shown.plain, html=shown.html)


# --- bounces -------------------------------------------------------------------------

def _bounce_kind(admin: Admin, kind: str) -> str:
    labels = {
        "permanent": admin._("permanent failure"), "temporary": admin._("temporary failure"),
        "complaint": admin._("spam complaint: unsubscribed"),
        "unsubscribe": admin._("unsubscribed by mail"), "auto-reply": admin._("automatic reply"),
        "kept": admin._("kept for the admin"), "refused": admin._("not read (too big or broken)"),
        "unknown tag": admin._("a tag that matches nobody"),
        "deleted": admin._("subscriber deleted"), "problem": admin._("mailbox problem"),
    }
    return labels.get(kind, kind)


def _bounce_target(admin: Admin, target: str) -> str:
    kind, _, name = target.partition(" ")
    if kind == "service" and name:
        return admin._("service {name}", name=name)
    if kind == "newsletter" and name:
        return admin._("newsletter {name}", name=name)
    return target


@route("GET", "/bounces")
def bounces_page(admin: Admin, args: dict) -> Response:
    from vykhukhol.bounces import record

    rows = [{"when": local_time(admin.settings, line.time), "kind": _bounce_kind(admin, line.kind),
             "target": _bounce_target(admin, line.target), "address": line.address,
             "source": line.source, "reason": line.reason}
            for line in record.recent(admin.data, BOUNCES_SHOWN)]
    kept = record.kept_messages(admin.data)[:BOUNCES_SHOWN]
    return admin.page("bounces.html", rows=rows, kept=kept,
                      mailbox=bool(admin.settings["mail.bounce_mailbox"]))


@route("GET", "/bounces/kept/(?P<file>[0-9]{8}-[0-9]{6}-[0-9a-f]{16}\\.eml)")
def bounce_kept(admin: Admin, args: dict) -> Response:
    from vykhukhol.bounces import record

    text = record.read_kept(admin.data, args["file"])
    if text is None:
        raise NotFound(admin._("No such message."))
    return admin.page("bounce_kept.html", file=args["file"], text=text)
