"""Joining and leaving a service: the rules of docs/using/subscriber-pages.md#subscriber-pages, shared by the public
pages, the admin pages and the CLI.

``subscribe`` answers the same way whatever the address's state, so callers
can show one page to everybody and nobody learns who is subscribed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import Enum

from vykhukhol import files, tokens
from vykhukhol import services as svc
from vykhukhol.addresses import check_email, clean_name
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files import events
from vykhukhol.members import unsent
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.rules import next_action, rules_of
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import Settings
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now, seconds_between

TYPE_CHECKING = False  # typing is not imported for this: the subscribe page pays for every import
if TYPE_CHECKING:
    from vykhukhol.members.suppression import Why

RESEND_AFTER = 600  # seconds: a known unconfirmed address is asked again at most this often


def _note_due(data: DataDir, service: svc.Service, settings: Settings,
              sub: Subscriber | None) -> None:
    """Tell the service's next-due summary about a change we just made."""
    if not due_summary.has_due(data, service.name):
        return  # no summary: the next run computes one anyway
    try:
        due = next_action(sub, rules_of(settings, service)).due if sub else None
    except BadInput:  # a letter file broken by hand: let the sender read the whole file
        due_summary.forget_due(data, service.name)
        return
    due_summary.lower_due(data, service.name, due, service.subscribers_path)


def send_confirmation(data: DataDir, settings: Settings, service: svc.Service,
                      email: str, name: str, fields: dict[str, str] | None = None, *,
                      language: str | None = None) -> bool:
    """Mail the confirmation request now, in the reader's own ``language``
    (None: the site's); False if the transport failed (the subscriber stays
    unconfirmed and gets a reminder later). ``fields``: the reader's values,
    for a service's own text that reads them."""
    import os

    from vykhukhol.mail import confirm_letter

    run_id, moment = f"web-{os.urandom(4).hex()}", now()
    handed = confirm_letter.hand_over(data.outbox, service, settings, email, name, run_id,
                                      moment, language=language)  # without the e-mail package, when it can
    if handed is not None:
        return handed
    from vykhukhol import mail  # the e-mail package, Jinja2 only for a service's own text

    message = confirm_letter.confirmation(service, settings, email, name, run_id, moment,
                                          fields=fields, language=language)
    try:
        with mail.open_transport(mail.config_from_settings(settings, data.outbox)) as transport:
            transport.send(message, email)
    except mail.DeliveryError:
        return False
    return True


class Joined(str, Enum):
    """What :func:`subscribe` did, for logs, the admin and the CLI — never for
    a public page. Each is its old word too (``Joined.ADDED == "added"``)."""

    ADDED = "added"                  # a new line, and its confirmation request
    ASKED_AGAIN = "asked again"      # unconfirmed: the request sent once more
    TOO_SOON = "too soon"            # unconfirmed, asked within RESEND_AFTER: nothing sent
    KNOWN = "known"                  # confirmed already: nothing changes
    CONFIRMED = "confirmed"          # an unconfirmed address confirmed by the admin or CLI
    OVER_THE_LIMIT = "over the limit"  # may_mail said no: nothing stored, nothing sent
    SUPPRESSED = "suppressed"        # on the suppression list: nothing stored or sent

    def __str__(self) -> str:  # the word itself, on every Python (3.12 changed Enum's)
        return self.value


def subscribe(data: DataDir, settings: Settings, service_name: str, email: str, name: str = "",
              ip: str = "-", confirmed: bool = False, notify: bool = True,
              may_mail: Callable[[bool], bool] | None = None,
              later: Callable[[Callable[[], None]], None] | None = None,
              hold: Callable[[str, str], bool] | None = None,
              fields: dict[str, str | None] | None = None, *,
              language: str | None = None) -> Joined:
    """Add or re-ask an address. Returns what happened (:class:`Joined`) for
    logs, the admin and the CLI — never for a public page. A suppressed address
    (docs/deliverability/suppression.md#suppression-list) is neither stored nor mailed, by the same steps under the same
    lock as any other, so the page's answer is the same.

    The look at the file and the change are one step under the file's lock, so
    parallel posts of one address send one letter per ``RESEND_AFTER``.
    ``may_mail(sends)`` is asked once, inside that step, whether this request
    may go on: ``sends`` says whether it would mail a confirmation; False stores
    and sends nothing ("over the limit"). ``later`` runs what may wait for the
    answer (default: now): the sync of a new line, the due summary, the letter.
    ``hold(service, address)``, asked just before the letter would go, may
    keep it back (True: not sent now; held for the owner, or over a cap).
    ``fields``: values of the site's fields, checked already, stored with the
    line, a new one or an unconfirmed one there (a re-subscribe updates those it
    gives; a confirmed line's only when ``confirmed``; docs/using/fields.md#fields-forms).
    ``language``: the reader's own (docs/using/languages.md#reader-language),
    stored with a new line or an unconfirmed one asked again; one the site does
    not speak is not stored.
    """
    from vykhukhol.i18n import known_language

    language = known_language(language)
    service = svc.find_service(data, service_name)
    email = check_email(email)
    name = clean_name(name)
    moment = now()
    path = service.subscribers_path
    letter: tuple[str, str, dict[str, str], str | None] | None = None
    from vykhukhol.members import suppression  # light; here so the pages' imports stay few

    suppressed = suppression.blocked(data, settings, email)
    with files.record_lock(path):
        current = subs.find(path, email)
        given: dict[str, str | None] = {k: v for k, v in (fields or {}).items() if v}
        if suppressed:
            if may_mail is not None:
                may_mail(False)  # the counter is written as for anyone: the same time taken
            return Joined.SUPPRESSED
        if current is None:
            sends = notify and not confirmed
        else:
            sends = notify and not confirmed and not current.state.confirmed \
                and _may_ask_again(current, moment)
        if may_mail is not None and not may_mail(sends):
            return Joined.OVER_THE_LIMIT
        if current is None:
            new = Subscriber(
                email=email, name=name,
                state=SubscriberState.ACTIVE if confirmed else SubscriberState.NEW,
                subscribed=moment, confirmed=moment if confirmed else None,
                ip=ip or "-").with_language(language)
            if given:
                new = new.with_fields(given)
            # Under a page's `later`, the line is synced and the next-due summary
            # told after the answer, so a new address costs the answer no more
            # disk waits than a known one; both happen before its letter goes out.
            subs.add(path, new, sync=later is None, absent=True)
            if later is None:
                _note_due(data, service, settings, new)
            else:
                later(lambda: _settle(data, settings, service, new))
            outcome, letter = Joined.ADDED, (email, name, new.fields, language)
        elif current.state.confirmed:
            outcome = Joined.KNOWN
        elif confirmed:
            confirm(data, settings, service.name, email)
            outcome = Joined.CONFIRMED
        elif not _may_ask_again(current, moment):
            outcome = Joined.TOO_SOON
        else:
            subs.update_one(path, email, lambda s: _asked_again(s, moment, language))
            _note_due(data, service, settings, None)
            outcome = Joined.ASKED_AGAIN
            letter = (current.email, current.name, current.with_fields(given).fields,
                      language or current.language)
        if current is not None and given and (confirmed or not current.state.confirmed) \
                and current.with_fields(given).fields != current.fields:
            # What a form left empty does not clear a value: only the own page does.
            # A confirmed reader's values change on their own page or by the owner
            # (``confirmed``), never by whoever posts the form with their address.
            subs.update_one(path, email, lambda s: s.with_fields(given))
    if outcome is Joined.ADDED:  # told after the answer, like the letter
        kind = "subscriber.confirmed" if confirmed else "subscriber.subscribed"
        (later or _at_once)(lambda: events.emit_quietly(data.root, kind, {"service": service.name,
                                                                          "email": email}))
    if sends and letter is not None:
        to, whom, values, spoken = letter

        def mail_it() -> None:
            if hold is not None and hold(service.name, to):
                return  # held for the owner, or over a cap: not sent now
            if settings["mode"] != "working":
                # Debug: no letter leaves; the first working run sends it at once
                # (docs/design/run.md#unsent-confirmations).
                unsent.note_unsent(data, service.name, to, now(), held=True)
                return
            # Noted first: if the letter does not go (mail server down, process
            # killed after the answer), the next cron run sends it. Not fsynced:
            # a kill cannot take back a write, and a power cut before the letter
            # is out leaves the line to its first reminder
            # (docs/design/startup.md#startup-fsyncs).
            unsent.note_unsent(data, service.name, to, now(), synced=False)
            if send_confirmation(data, settings, service, to, whom, values, language=spoken):
                unsent.drop_unsent(data, service.name, to)

        (later or _at_once)(mail_it)
    return outcome


def _settle(data: DataDir, settings: Settings, service: svc.Service, new: Subscriber) -> None:
    """What ``subscribe`` leaves for after the answer: the new line on disk for
    good, and the next-due summary told (under the file's lock, as a writer)."""
    import os

    path = service.subscribers_path
    with files.record_lock(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _note_due(data, service, settings, new)


def _asked_again(sub: Subscriber, moment: datetime, language: str | None) -> Subscriber:
    """An unconfirmed line asked once more: the time, and the language asked in."""
    sub = sub.replace(last_reminder=moment)
    return sub.with_language(language) if language else sub


def _at_once(action: Callable[[], None]) -> None:
    action()


def _may_ask_again(current: Subscriber, moment: datetime) -> bool:
    """Whether an unconfirmed address was last asked long enough ago."""
    last = max(filter(None, (current.subscribed, current.last_reminder)), default=None)
    return last is None or not 0 <= seconds_between(moment, last) < RESEND_AFTER


def confirm(data: DataDir, settings: Settings, service_name: str, email: str) -> bool:
    """The subscriber becomes active (already active: no change). False if gone."""
    service = svc.find_service(data, service_name)
    moment = now()
    result: list[Subscriber] = []

    changed: list[bool] = []

    def activate(sub: Subscriber) -> Subscriber:
        if sub.state is SubscriberState.NEW:
            sub = sub.replace(state=SubscriberState.ACTIVE, confirmed=moment)
            changed.append(True)
        result.append(sub)
        return sub

    if not subs.update_one(service.subscribers_path, email, activate):
        return False
    _note_due(data, service, settings, result[0])
    if changed:
        events.emit_quietly(data.root, "subscriber.confirmed", {"service": service.name,
                                                                "email": result[0].email})
    return True


def unsubscribe(data: DataDir, service_name: str, email: str,
                told: tuple[str, dict[str, object]] = ("subscriber.unsubscribed", {})) -> bool:
    """Delete the subscriber and skip its pending newsletter rows. False if it
    was not there. ``told``: the webhooks' event when it was, and what it adds."""
    from vykhukhol import newsletters

    service = svc.find_service(data, service_name)
    removed = subs.remove(service.subscribers_path, email)
    if removed:
        due_summary.lower_due(data, service.name, None, service.subscribers_path)
    newsletters.skip_address(data, service.name, email)
    if removed:
        kind, more = told
        events.emit_quietly(data.root, kind, {"service": service.name, "email": email, **more})
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


def forget_everywhere(data: DataDir, settings: Settings, address: str, why: Why,
                      source: str, moment: datetime, suppressed: bool = False,
                      words: str = "") -> list[str]:
    """An address gone (or at bounce_limit): suppressed, then deleted from
    every service of the site (its pending newsletter rows skipped), each
    line kept first for an undo (:mod:`.removed`, with the server's
    ``words``). Doing it twice changes nothing. Returns the services it was
    deleted from."""
    from vykhukhol.members import removed, suppression

    if not suppressed:
        suppression.add(data, suppression.secret_of(settings), address, why, source, moment)
    gone = []
    told: tuple[str, dict[str, object]] = ("subscriber.removed", {"reason": why.value, "source": source})
    for service in svc.load_services(data):
        try:
            with removed.keeping(data, service, address, why.value, source, words, moment):
                if unsubscribe(data, service.name, address, told):
                    gone.append(service.name)
        except (NotFound, BadInput):
            continue  # the service went away meanwhile
    return gone
