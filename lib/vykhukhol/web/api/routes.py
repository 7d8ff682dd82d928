"""The API's endpoints (docs/using/api.md#api-endpoints), one function each,
in a table that the dispatcher (:mod:`vykhukhol.web.api`) and the OpenAPI
document (:mod:`.openapi`) both read: method, path, scope, the body's
fields, what it does.

A handler takes the call (:class:`Call`) and returns (status, JSON object);
it raises :class:`Refused` (or lets BadInput / NotFound through) to refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import NamedTuple

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.addresses import check_email, clean_name
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import LANGUAGES
from vykhukhol.members import membership, personal, suppression
from vykhukhol.newsletters import letter as newsletter_letter
from vykhukhol.newsletters import segments
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import Settings
from vykhukhol.settings import fields as site_fields
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import format_time, now, parse_time
from vykhukhol.web.bots import Gate


class Refused(Exception):
    """A refusal with its HTTP status and a code a program can test."""

    def __init__(self, status: int, code: str, message: str,
                 headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or []


@dataclass
class Call:
    data: DataDir
    settings: Settings
    params: dict[str, str]
    body: dict
    remote: str
    scopes: frozenset[str] = frozenset()


#: A body field: its name, JSON type, whether it is required, what it is.
@dataclass(frozen=True)
class Field:
    name: str
    type: str  # string, boolean, array, object (of strings or nulls)
    required: bool = False
    what: str = ""


@dataclass(frozen=True)
class Route:
    method: str
    path: str          # /v1/subscribers/{service}/{email}
    scope: str
    handler: Callable[[Call], tuple[int, dict]]
    summary: str
    fields: tuple[Field, ...] = ()
    pattern: re.Pattern = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path)
        object.__setattr__(self, "pattern", re.compile(f"^{regex}$"))


def _when(moment: datetime | None) -> str | None:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def _service(call: Call) -> svc.Service:
    return svc.find_service(call.data, call.params["service"])


# --- services ----------------------------------------------------------------

def list_services(call: Call) -> tuple[int, dict]:
    return 200, {"services": [{"name": s.name, "title": s.title, "db": s.db, "enabled": s.enabled,
                               "closed": bool(getattr(s, "closed", False))}
                              for s in svc.load_services(call.data)]}


# --- subscribers ----------------------------------------------------------------

def _subscriber(sub: Subscriber, service: str, names: list[str]) -> dict:
    values = sub.fields
    return {"service": service, "email": sub.email, "name": sub.name, "state": sub.state.value,
            "subscribed": _when(sub.subscribed), "confirmed": _when(sub.confirmed),
            "letters_sent": sub.sent, "language": sub.language,
            "fields": {name: values[name] for name in names if name in values}}


class Details(NamedTuple):
    """A body's ``fields`` and ``language``, checked as a form checks them."""

    fields: dict[str, str | None]
    language: str | None
    given: bool  # whether the body said either

    def apply(self, sub: Subscriber) -> Subscriber:
        changed = sub.with_fields(self.fields)
        return changed.with_language(self.language) if self.language is not None else changed


def _details(call: Call, defined: list[site_fields.Field], partial: bool) -> Details:
    """The body's values of the site's fields (docs/using/fields.md#fields) in
    their canonical form, and its language; 400 naming the field and why when a
    value does not fit it, is missing though required (``partial``: a change,
    which leaves what it does not name), or the site has no such field."""
    raw = call.body.get("fields", {})
    by_name = {f.name: f for f in defined}
    unknown = [name for name in raw if name not in by_name]
    if unknown:
        raise Refused(400, "field", f"fields.{unknown[0][:60]}: no such field; the site's fields "
                                    f"are {', '.join(by_name) or 'none'}")
    for f in defined:
        value = raw.get(f.name)
        try:
            if f.name in raw and value is not None:
                # named by its name, not its label: a program reads this
                site_fields.Field(f.name, f.kind, f.required, {}, f.choices).value_of(value)
            if f.required and (value in ("", None) if f.name in raw else not partial):
                raise BadInput("{field} is required", field=f.name)
        except BadInput as exc:
            raise Refused(400, "field", f"fields.{exc.text('en')}") from None
    values = site_fields.check_values(defined, {k: v or "" for k, v in raw.items()}, partial=True)
    language = call.body.get("language")
    if language is not None and language not in LANGUAGES:
        raise Refused(400, "language", f"language: one of {', '.join(LANGUAGES)}")
    return Details(values, language, "fields" in call.body or "language" in call.body)


def add_subscriber(call: Call) -> tuple[int, dict]:
    """Double opt-in: the answer is the same whether the address was new or
    on the list already (a token that may only subscribe learns nothing of
    who is subscribed); a suppressed address is refused, saying so."""
    body = call.body
    confirmed = body.get("confirmed", False)
    if confirmed and "manage" not in call.scopes:
        raise Refused(403, "scope", "adding a confirmed subscriber needs the manage scope; "
                                    "leave confirmed out for double opt-in")
    if not confirmed and svc.find_service(call.data, body["service"]).closed:
        raise Refused(409, "closed", "the service is closed to sign-ups (the owner may still "
                                     "add a confirmed subscriber, with the manage scope)")
    details = _details(call, site_fields.load(call.data.root), partial=False)
    # The line's fields and language are written before its letter goes (the
    # letter may speak the reader's language): subscribe leaves the rest for later.
    pending: list[Callable[[], None]] = []
    # the per-address daily cap and the alarm hold an API's requests as a form's
    joined = membership.subscribe(call.data, call.settings, body["service"], body["email"],
                                  body.get("name", ""), ip=call.remote, confirmed=bool(confirmed),
                                  hold=Gate(call.data, call.settings).hold, later=pending.append)
    # A known address keeps its values, unless a manager's token says otherwise:
    # a token that may only subscribe changes nobody's details.
    if details.given and (joined is membership.Joined.ADDED or (
            "manage" in call.scopes and joined not in _NOTHING_STORED)):
        subs.update_one(svc.find_service(call.data, body["service"]).subscribers_path,
                        check_email(body["email"]), details.apply)
    for action in pending:
        action()
    if joined is membership.Joined.SUPPRESSED:
        raise Refused(422, "suppressed", "the address is on the suppression list: it is never "
                                         "written to again")
    return 202, {"accepted": True, "double_opt_in": not confirmed}


_NOTHING_STORED = (membership.Joined.SUPPRESSED, membership.Joined.OVER_THE_LIMIT)


def _names(call: Call) -> list[str]:
    return [f.name for f in site_fields.load(call.data.root)]


def get_subscriber(call: Call) -> tuple[int, dict]:
    service = _service(call)
    sub = subs.find(service.subscribers_path, check_email(call.params["email"]))
    if sub is None:
        raise NotFound("no such subscriber")
    return 200, _subscriber(sub, service.name, _names(call))


def update_subscriber(call: Call) -> tuple[int, dict]:
    """The name, the fields named (null removes a value) and the language,
    each only when the body says it."""
    service = _service(call)
    email = check_email(call.params["email"])
    if not call.body:
        raise Refused(422, "missing_field", "missing name, fields or language")
    defined = site_fields.load(call.data.root)
    details = _details(call, defined, partial=True)
    name = clean_name(call.body["name"]) if "name" in call.body else None

    def change(sub: Subscriber) -> Subscriber:
        return details.apply(sub if name is None else sub.replace(name=name))

    if not subs.update_one(service.subscribers_path, email, change):
        raise NotFound("no such subscriber")
    sub = subs.find(service.subscribers_path, email)
    assert sub is not None
    return 200, _subscriber(sub, service.name, [f.name for f in defined])


def unsubscribe(call: Call) -> tuple[int, dict]:
    service = _service(call)
    return 200, {"unsubscribed": membership.unsubscribe(call.data, service.name,
                                                        check_email(call.params["email"]))}


def erase(call: Call) -> tuple[int, dict]:
    email = check_email(call.params["email"])
    personal.erase(call.data, call.settings, email, now())
    return 200, {"erased": True}


# --- newsletters ----------------------------------------------------------------

def _start(text: object) -> datetime | None:
    if text in (None, ""):
        return None
    moment = parse_time(str(text))
    if moment is None:
        raise BadInput("start: a time like 2026-12-24T09:00:00+03:00")
    return newsletters.check_start(moment, str(text))


def _job(call: Call, name: str) -> dict:
    job = newsletters.read_job(call.data, name)
    _, _, list_path = newsletters.paths(call.data, name)
    count = newsletters.counts(list_path)
    return {"id": job.name, "services": job.services, "start": _when(job.start),
            "created": _when(job.created), "recipients": count.pop("total", 0),
            "where": job.values.get("where") or None,
            # the languages it has a second body in (docs/using/newsletters.md#newsletter-languages)
            "languages": sorted(newsletter_letter.read_version_sources(call.data, name)),
            "counts": {k.replace(" ", "_"): v for k, v in count.items()}}


def list_newsletters(call: Call) -> tuple[int, dict]:
    jobs = [_job(call, job.name) for job in newsletters.list_jobs(call.data)]
    past = [{"id": e.job, "subject": e.subject, "services": list(e.services), "started": e.started,
             "finished": e.finished, "handed_over": e.handed, "failed": e.failed,
             "in_doubt": e.in_doubt, "bounced": e.bounced, "complaints": e.complaints,
             "unsubscribed": e.unsubscribed, "cancelled": e.cancelled,
             "where": e.where or None}
            for e in newsletters.history_now(call.data)]
    return 200, {"newsletters": jobs, "history": past}


def create_newsletter(call: Call) -> tuple[int, dict]:
    body = call.body
    try:  # docs/using/newsletters.md#newsletter-segments
        where = segments.of_site(call.data, str(body.get("where") or ""), call.settings["language"])
    except BadInput as exc:
        raise BadInput("where: {reason}", reason=exc) from None
    name = newsletters.create(call.data, list(body["services"]), body["subject"], body["text"],
                              body.get("html") or None, _start(body.get("start")), where=where,
                              versions=_versions(body))
    return 201, _job(call, name)


def _versions(body: dict) -> dict[str, tuple[str, str, str | None]]:
    """The letter in other languages (docs/using/newsletters.md#newsletter-languages):
    ``subject_en``, ``text_en`` and ``html_en`` (or ``_ru``), checked as the
    CLI checks ``--subject-en`` and ``--body-en``; 422 names the field."""
    found = {}
    for language in LANGUAGES:
        subject, text, html = (body.get(f"{part}_{language}") for part in ("subject", "text", "html"))
        if subject is None and text is None and html is None:
            continue
        if subject is None or text is None:
            raise Refused(422, "invalid", f"{'text' if subject is not None else 'subject'}_{language}:"
                                          f" the letter in {language} needs its subject and text")
        try:
            newsletter_letter.check_letter(subject, text, html or None)
        except BadInput as exc:
            part, said, reason = exc.text("en").partition(":")
            field = f"{part.lower()}_{language}" if said and part.lower() in ("subject", "text", "html") \
                else f"the letter in {language}"
            raise Refused(422, "invalid", f"{field}:{reason if said else ' ' + part}") from None
        found[language] = (subject, text, html or None)
    return found


def get_newsletter(call: Call) -> tuple[int, dict]:
    return 200, _job(call, call.params["id"])


def schedule_newsletter(call: Call) -> tuple[int, dict]:
    start = _start(call.body["start"])
    assert start is not None
    newsletters.reschedule(call.data, call.params["id"], start)
    return 200, _job(call, call.params["id"])


def cancel_newsletter(call: Call) -> tuple[int, dict]:
    newsletters.cancel(call.data, call.params["id"])
    return 200, {"cancelled": call.params["id"]}


# --- suppression and figures ------------------------------------------------------

def suppress(call: Call) -> tuple[int, dict]:
    email = check_email(call.body["email"])
    added = suppression.add(call.data, suppression.secret_of(call.settings), email,
                            suppression.Why.ADMIN, "api", now())
    return (201 if added else 200), {"suppressed": True, "new": added}


def check_suppressed(call: Call) -> tuple[int, dict]:
    email = check_email(call.params["email"])
    return 200, {"suppressed": suppression.blocked(call.data, call.settings, email)}


def stats(call: Call) -> tuple[int, dict]:
    per_service = {}
    for service in svc.load_services(call.data):
        states = {state.value: 0 for state in SubscriberState}
        for sub in subs.subscribers(service.subscribers_path):
            states[sub.state.value] += 1
        per_service[service.name] = states
    suppressed = sum(1 for _ in suppression.entries(call.data))
    return 200, {"services": per_service, "suppressed": suppressed,
                 "newsletters_waiting": len(newsletters.list_jobs(call.data)),
                 "time": format_time(now())}


EMAIL = Field("email", "string", True, "the address")
FIELDS = Field("fields", "object", False, "values of the site's fields by name, each checked as "
               "the form checks it (400 names the field and why); null removes one")
LANGUAGE = Field("language", "string", False, "the reader's own language: ru or en")
ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/services", "read", list_services, "The services (mailing lists)."),
    Route("POST", "/v1/subscribers", "subscribe", add_subscriber,
          "Subscribe an address: it gets the confirmation request (double opt-in). The answer is "
          "the same for a new address and a known one; a suppressed one is refused (422).",
          (Field("service", "string", True, "the service's name"), EMAIL,
           Field("name", "string", False, "the subscriber's name"),
           Field("confirmed", "boolean", False, "add as confirmed, without a request (needs manage)"),
           FIELDS, LANGUAGE)),
    Route("GET", "/v1/subscribers/{service}/{email}", "read", get_subscriber,
          "One subscriber of a service."),
    Route("PATCH", "/v1/subscribers/{service}/{email}", "manage", update_subscriber,
          "Change a subscriber's name, fields or language (each only when given).",
          (Field("name", "string", False, "the new name"), FIELDS, LANGUAGE)),
    Route("POST", "/v1/subscribers/{service}/{email}/unsubscribe", "manage", unsubscribe,
          "Unsubscribe an address from a service."),
    Route("DELETE", "/v1/subscribers/{email}", "manage", erase,
          "Erase an address everywhere (the suppression list keeps only its keyed hash)."),
    Route("GET", "/v1/newsletters", "read", list_newsletters, "The newsletters waiting or going out."),
    Route("POST", "/v1/newsletters", "send", create_newsletter,
          "Create a newsletter to the confirmed subscribers of some services.",
          (Field("services", "array", True, "service names"), Field("subject", "string", True),
           Field("text", "string", True, "the plain-text body"),
           Field("html", "string", False, "an HTML body"),
           Field("start", "string", False, "when to start, ISO 8601 (default: now)"),
           Field("where", "string", False, "a condition choosing part of the subscribers"),
           *(Field(f"{part}_{language}", "string", False, f"{what} of the letter in {language}, "
                   f"for the readers whose language it is")
             for language in LANGUAGES
             for part, what in (("subject", "the subject"), ("text", "the plain-text body"),
                                ("html", "an HTML body"))))),
    Route("GET", "/v1/newsletters/{id}", "read", get_newsletter, "One newsletter and its counts."),
    Route("POST", "/v1/newsletters/{id}/schedule", "send", schedule_newsletter,
          "Move a newsletter's start.", (Field("start", "string", True, "ISO 8601"),)),
    Route("DELETE", "/v1/newsletters/{id}", "send", cancel_newsletter, "Cancel a newsletter."),
    Route("POST", "/v1/suppression", "manage", suppress, "Suppress an address.", (EMAIL,)),
    Route("GET", "/v1/suppression/{email}", "read", check_suppressed,
          "Whether an address is suppressed."),
    Route("GET", "/v1/stats", "read", stats, "Subscribers by state per service, and other figures."),
)
