"""Joining and leaving a service: the rules of SPEC 7, shared by the public
pages, the admin pages and the CLI.

``subscribe`` answers the same way whatever the address's state, so callers
can show one page to everybody and nobody learns who is subscribed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from vykhukhol import services as svc
from vykhukhol import state, tokens
from vykhukhol import subscribers as subs
from vykhukhol.addresses import check_email, clean_name
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, Conflict, NotFound
from vykhukhol.series import Rules, next_action
from vykhukhol.settings import Settings
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now, seconds_between

RESEND_AFTER = 600  # seconds: a known unconfirmed address is asked again at most this often


def _rules(service: svc.Service, settings: Settings) -> Rules:
    return Rules(tuple(svc.letter_delays(service)), settings["reminder_period"],
                 settings["reminder_count"], service.delete_finished)


def _note_due(data: DataDir, service: svc.Service, settings: Settings,
              sub: subs.Subscriber | None) -> None:
    """Tell the service's next-due summary about a change we just made."""
    if not state.has_due(data, service.name):
        return  # no summary: the next run computes one anyway
    try:
        due = next_action(sub, _rules(service, settings)).due if sub else None
    except BadInput:  # a letter file broken by hand: let the sender read the whole file
        state.forget_due(data, service.name)
        return
    state.lower_due(data, service.name, due, service.subscribers_path)


def send_confirmation(data: DataDir, settings: Settings, service: svc.Service,
                      email: str, name: str) -> bool:
    """Mail the confirmation request now; False if the transport failed (the
    subscriber stays unconfirmed and gets a reminder later)."""
    import secrets

    from vykhukhol import compose, mail  # the e-mail package and Jinja2: only to send

    message = compose.confirmation(service, settings, email, name, f"web-{secrets.token_hex(4)}", now())
    try:
        with mail.open_transport(settings.mail_config(data.outbox)) as transport:
            transport.send(message, email)
    except mail.DeliveryError:
        return False
    return True


def subscribe(data: DataDir, settings: Settings, service_name: str, email: str, name: str = "",
              ip: str = "-", confirmed: bool = False, notify: bool = True) -> str:
    """Add or re-ask an address. Returns what happened ("added", "asked again",
    "too soon", "known") for logs and the CLI — never for a public page."""
    service = svc.find_service(data, service_name)
    email = check_email(email)
    name = clean_name(name)
    moment = now()
    new = subs.Subscriber(
        email=email, name=name,
        state=SubscriberState.ACTIVE if confirmed else SubscriberState.NEW,
        subscribed=moment, confirmed=moment if confirmed else None, ip=ip or "-")
    try:
        subs.add(service.subscribers_path, new)
    except Conflict:
        return _known(data, settings, service, email, moment, confirmed, notify)
    _note_due(data, service, settings, new)
    if not confirmed and notify:
        send_confirmation(data, settings, service, email, name)
    return "added"


def _known(data: DataDir, settings: Settings, service: svc.Service, email: str,
           moment: datetime, confirmed: bool, notify: bool) -> str:
    current = subs.find(service.subscribers_path, email)
    if current is None or current.state.confirmed:
        return "known"
    if confirmed:
        confirm(data, settings, service.name, email)
        return "confirmed"
    last = max(filter(None, (current.subscribed, current.last_reminder)), default=None)
    if last is not None and 0 <= seconds_between(moment, last) < RESEND_AFTER:
        return "too soon"
    subs.update_one(service.subscribers_path, email, lambda s: s.replace(last_reminder=moment))
    _note_due(data, service, settings, None)
    if notify:
        send_confirmation(data, settings, service, current.email, current.name)
    return "asked again"


def confirm(data: DataDir, settings: Settings, service_name: str, email: str) -> bool:
    """The subscriber becomes active (already active: no change). False if gone."""
    service = svc.find_service(data, service_name)
    moment = now()
    result: list[subs.Subscriber] = []

    def activate(sub: subs.Subscriber) -> subs.Subscriber:
        if sub.state is SubscriberState.NEW:
            sub = sub.replace(state=SubscriberState.ACTIVE, confirmed=moment)
        result.append(sub)
        return sub

    if not subs.update_one(service.subscribers_path, email, activate):
        return False
    _note_due(data, service, settings, result[0])
    return True


def unsubscribe(data: DataDir, service_name: str, email: str) -> bool:
    """Delete the subscriber and skip its pending newsletter rows. False if it was not there."""
    from vykhukhol import newsletters

    service = svc.find_service(data, service_name)
    removed = subs.remove(service.subscribers_path, email)
    if removed:
        state.lower_due(data, service.name, None, service.subscribers_path)
    newsletters.skip_address(data, service.name, email)
    return removed


def check_token(settings: Settings, service_name: str, email: str, purpose: str, token: str) -> bool:
    return tokens.check(settings.secret, service_name, email or "", purpose, token or "")


def remove(data: DataDir, service_name: str, email: str) -> None:
    """The admin's delete: like unsubscribe, but NotFound (and nothing changed)
    when the address is not there."""
    service = svc.find_service(data, service_name)
    if subs.find(service.subscribers_path, email) is None:
        raise NotFound("{email} is not a subscriber of {service}", email=email, service=service_name)
    unsubscribe(data, service_name, email)


def parse_import(text: str) -> tuple[list[tuple[str, str]], list[tuple[int, str, BadInput]]]:
    """CSV with an ``email`` column (and ``name``), header-less ``email,name``
    lines, or one address a line. Returns (valid (email, name) pairs, invalid
    (line number, text, reason)); every line that is neither blank nor a
    ``#`` comment is one or the other, so the counts always add up."""
    import csv
    import io

    lines = [line.rstrip("\r") for line in text.lstrip("\ufeff").split("\n")]
    first = lines[0] if lines else ""
    delimiter = ";" if first.count(";") > first.count(",") else ","
    header = [h.strip().lower() for h in next(csv.reader([first], delimiter=delimiter))] if first else []
    valid: list[tuple[str, str]] = []
    invalid: list[tuple[int, str, BadInput]] = []  # the reason: str() in English, .text(lang)
    if "email" in header:
        body, start = lines[1:], 2
        at, name_at = header.index("email"), header.index("name") if "name" in header else None
    else:  # no header: "address" or "address,name" a line
        body, start, at, name_at = lines, 1, 0, 1
    for lineno, line in enumerate(body, start=start):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = next(csv.reader(io.StringIO(line), delimiter=delimiter), [])
        address = row[at] if len(row) > at else ""
        person = row[name_at] if name_at is not None and len(row) > name_at else ""
        if not address.strip():
            invalid.append((lineno, line[:200], BadInput("no e-mail address on this line")))
            continue
        try:
            valid.append((check_email(address), clean_name(person)))
        except BadInput as exc:
            invalid.append((lineno, line[:200], exc))
    return valid, invalid


def import_addresses(data: DataDir, settings: Settings, service_name: str, text: str,
                     confirmed: bool = False) -> dict:
    """Add every valid address at once. Unconfirmed imports are asked to confirm
    by the sender's reminders (no mass mailing from a web request)."""
    service = svc.find_service(data, service_name)
    valid, invalid = parse_import(text)
    moment = now()
    # Unconfirmed imports are dated one reminder period back, so the sender's
    # next runs ask them to confirm, in its polite batches.
    asked = moment if confirmed else moment - timedelta(seconds=settings["reminder_period"])
    new = [subs.Subscriber(email=e, name=n, state=SubscriberState.ACTIVE if confirmed
                           else SubscriberState.NEW, subscribed=asked,
                           confirmed=moment if confirmed else None, ip="import")
           for e, n in valid]
    added, duplicates = subs.add_many(service.subscribers_path, new)
    state.forget_due(data, service.name)
    return {"added": added, "duplicates": duplicates, "invalid": invalid}
