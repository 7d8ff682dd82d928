"""What a returning message means (docs/deliverability/bounces.md#returned-message).

:func:`classify` takes the raw bytes of one message that came back to a
bounce address and returns a :class:`Verdict`: its kind, the signed tags it
carries, the addresses a bounce report names, and a short reason for the log.
It is a pure function: it reads no data file and changes nothing; finding
whom a tag means and acting on it is :mod:`vykhukhol.bounces.apply`'s work.

The kinds, in the order they are tried:

- ``complaint`` — an RFC 5965 feedback report (``multipart/report;
  report-type=feedback-report``): the person marked a letter as spam;
- ``unsubscribe`` — a person's mail with the subject ``unsubscribe`` (the
  ``mailto:`` of ``List-Unsubscribe``);
- ``permanent`` / ``temporary`` — a delivery report, as :mod:`flufl.bounce`
  (GNU Mailman's detectors: RFC 3464 DSNs, Postfix, Exim, qmail, Yahoo,
  Microsoft and a dozen more) reads it, or, in a format it misses, as
  :mod:`.formats` does; permanent wins when it names both, and a report whose
  every failure is a delay is temporary;
- ``auto-reply`` — ``Auto-Submitted``, ``X-Autoreply``, ``Precedence:
  auto_reply`` and the like: a vacation notice, never a bounce;
- ``kept`` — anything else: kept for the admin, never acted on;
- ``refused`` — too big to read: logged, nothing else.

Nothing is lost to a report's wrapping (docs/design/bounces.md#bounces-unread):
blank lines or an mbox envelope line before the headers are skipped, each
flufl.bounce detector runs on its own (one that raises is noted in
``reason`` and the next tried), and a report that names no address it can
read says so in ``reason``.

For a delivery report, ``readings`` says why each named address failed and
``cause`` the class that weighs most on a subscriber (:mod:`.reasons`:
address gone, soft, sender refused, delay); ``kind``, ``named`` and
``reason`` keep the meaning :mod:`vykhukhol.bounces.apply` and the Bounces page read.

Deliberately not here: the patterns (Sisimai's, in :mod:`.patterns`; the
readers in :mod:`.formats` and :mod:`.reasons`) and any decision about
subscriber files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.message import Message
from email.utils import collapse_rfc2231_value
from enum import Enum

from vykhukhol import returntag
from vykhukhol.bounces.reading import formats, reasons
from vykhukhol.errors import MissingModule

MAX_MESSAGE_BYTES = 2_000_000   # a bounce with its original letter attached stays far below
MAX_PARTS = 200                 # MIME parts walked before a message counts as hostile

class Kind(str, Enum):
    """What a returned message is. Each is its old word too (the bounces.log
    column, ``Kind.PERMANENT == "permanent"``)."""

    PERMANENT = "permanent"      # a failure the server gave up on
    TEMPORARY = "temporary"      # a delay notice, or a failure it still retries
    COMPLAINT = "complaint"      # a spam complaint (feedback report)
    UNSUBSCRIBE = "unsubscribe"  # a request to leave, by mail
    AUTO_REPLY = "auto-reply"    # an out-of-office or other automatic answer
    KEPT = "kept"                # anything else: kept for the admin, never acted on
    REFUSED = "refused"          # refused unread: too big, a bomb, or it stopped the reader

    def __str__(self) -> str:  # the word itself, on every Python (3.12 changed Enum's)
        return self.value


PERMANENT, TEMPORARY, COMPLAINT, UNSUBSCRIBE = Kind.PERMANENT, Kind.TEMPORARY, Kind.COMPLAINT, \
    Kind.UNSUBSCRIBE
AUTO_REPLY, KEPT, REFUSED = Kind.AUTO_REPLY, Kind.KEPT, Kind.REFUSED
KINDS = tuple(Kind)

# Where the envelope recipient (the tagged bounce address) can be read, most
# trustworthy first: the local delivery agent's own headers, then the visible
# ones, then the headers of the original letter a report carries back.
ENVELOPE_HEADERS = ("delivered-to", "x-original-to", "envelope-to", "x-envelope-to",
                    "x-delivered-to", "to", "cc")
ORIGINAL_HEADERS = ("return-path", "list-unsubscribe", "from", "to")
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,128}@[A-Za-z0-9.-]{1,255}")


@dataclass
class Verdict:
    """What one message is; ``tags`` are (tagged address, its parsed tag), best first."""

    kind: str
    reason: str
    tags: list[tuple[str, returntag.Tag]] = field(default_factory=list)
    named: set[str] = field(default_factory=set)  # addresses a report says failed (lower case)
    sender: str = ""                                 # the From address, for an unsubscribe
    subject: str = ""
    # Why each named address failed (docs/design/bounces.md#refusal-reasons), and
    # the class that matters most for the subscriber: gone, soft, sender, delay.
    readings: dict[str, reasons.Reading] = field(default_factory=dict)
    cause: reasons.Cause | None = None
    # Which letter the report is about, from the headers it returned: its
    # Message-ID, else the run that sent it (X-Vykhukhol-Run); "" when it
    # returned none. Two reports about one letter count once.
    letter: str = ""
    run: str = ""  # the X-Vykhukhol-Run of the returned letter: the run that sent it


@dataclass
class Report:
    """One event a mail service provider reported by its callback
    (:mod:`vykhukhol.bounces.providers`), as the same report by mail would be classified."""

    event: str   # the provider's own id of the event: one id is applied once
    kind: str    # PERMANENT, TEMPORARY, COMPLAINT or UNSUBSCRIBE (AUTO_REPLY: noted)
    address: str
    reason: str
    tag: str = ""  # our tag, where the provider returned it (a header, its metadata, the envelope)


def classify(raw: bytes, separator: str) -> Verdict:
    """The verdict on one message (never raises)."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return Verdict(REFUSED, f"too big ({len(raw)} bytes, at most {MAX_MESSAGE_BYTES} are read)")
    import email
    from email import policy

    envelope = _ENVELOPE.match(raw)  # matches "" at least
    if envelope:
        raw = raw[envelope.end():]
    try:
        message = email.message_from_bytes(formats.refold(raw), policy=policy.compat32)
        parts = list(_walk(message))
    except _TooManyParts:
        return Verdict(REFUSED, f"more than {MAX_PARTS} MIME parts")
    except Exception as exc:  # noqa: BLE001 - the e-mail parser on hostile input
        return Verdict(REFUSED, f"cannot be parsed: {type(exc).__name__}")
    subject = _header(message, "subject")
    letter, run = returned_letter(parts)
    verdict = Verdict(KEPT, "not a bounce report", tags=find_tags(message, parts, separator),
                      sender=_first_address(_header(message, "from")), subject=subject,
                      letter=letter, run=run)
    if _is_feedback_report(message):
        verdict.kind, verdict.reason = COMPLAINT, "a spam complaint (feedback report)"
        return verdict
    if subject.strip().lower() == "unsubscribe" and not _auto_submitted(message):
        verdict.kind, verdict.reason = UNSUBSCRIBE, "asked to unsubscribe by mail"
        return verdict
    try:
        temporary, permanent, choked = _library_failures(message)
    except ImportError as exc:  # a host that vendored too little: kept, and said so plainly
        verdict.reason = MissingModule.of(exc).message
        return verdict
    # What could not be read is said in bounces.log, never dropped in silence.
    notes = [f"the {name} detector could not read it ({error})" for name, error in choked]
    try:
        text = formats.report_text(message, parts)
        dsn = {failed.address: failed for failed in
               formats.delivery_status(parts) or formats.json_failures(text)
               or formats.text_fields(text)}
        temporary, permanent = _named_by_report(text, set(dsn), temporary, permanent)
        readings = _readings(message, text, dsn, subject, temporary | permanent)
    except Exception as exc:  # noqa: BLE001 - our own readers must never cost the library's verdict
        readings = {}
        notes.append(f"the report reader could not read it ({type(exc).__name__})")
    if not (permanent or temporary) and readings:
        # A format flufl.bounce does not know: ours found the failed addresses.
        delays = {a for a, r in readings.items() if r.cause is reasons.Cause.DELAY}
        permanent, temporary = set(readings) - delays, delays
    if permanent or temporary:
        verdict.kind = PERMANENT if permanent else TEMPORARY
        verdict.named = permanent or temporary
        verdict.readings = {a: r for a, r in readings.items() if a in verdict.named}
        if verdict.readings and all(r.cause is reasons.Cause.DELAY
                                    for r in verdict.readings.values()):
            verdict.kind = TEMPORARY  # a delay notice flufl.bounce took for a failure
        verdict.cause = _worst(verdict.readings.values(), verdict.kind)
        verdict.reason = (f"{verdict.kind} failure reported for "
                          + ", ".join(sorted(verdict.named)[:3]))
        status = _status_code(parts)
        if status:
            verdict.reason += f" ({status})"
        verdict.reason = "; ".join([verdict.reason, *notes])
        return verdict
    if _auto_submitted(message) and message.get_content_type() != "multipart/report":
        # sendmail and Postfix mark their delivery reports Auto-Submitted too.
        verdict.kind, verdict.reason = AUTO_REPLY, "an automatic reply (vacation or similar)"
    elif _looks_like_report(message, subject) or notes:
        verdict.reason = "a delivery report with no failed address that could be read"
    verdict.reason = "; ".join([verdict.reason, *notes])
    return verdict


# What may stand before a message's first header: blank lines, and the
# envelope line of an mbox file ("From sender date"), escaped (">From ") too.
_ENVELOPE = re.compile(rb"(?:[ \t]*\r?\n)*(?:>?From [^\r\n]*\r?\n)?")


class _TooManyParts(Exception):
    pass


def _walk(message: Message):
    for count, part in enumerate(message.walk(), start=1):
        if count > MAX_PARTS:
            raise _TooManyParts
        yield part


def _header(message: Message, name: str) -> str:
    """A header as text, whatever its encoding; "" when missing or unreadable."""
    value = message.get(name)
    if value is None:
        return ""
    try:
        from email.header import decode_header, make_header
        return str(make_header(decode_header(str(value))))[:500]
    except Exception:  # noqa: BLE001 - a header in no charset Python knows
        return str(value).encode("utf-8", "replace").decode("utf-8")[:500]


def _first_address(text: str) -> str:
    found = _ADDRESS.search(text)
    return found.group(0).lower() if found else ""


def find_tags(message: Message, parts: list[Message], separator: str) -> list[tuple[str, returntag.Tag]]:
    """Tagged bounce addresses in the message's envelope headers, then in the
    headers of an original letter it carries (a DSN's or a feedback report's)."""
    if not separator:
        return []
    values = [str(v) for name in ENVELOPE_HEADERS for v in (message.get_all(name) or [])]
    for part in parts[1:]:
        if part.get_content_type() in ("message/rfc822", "text/rfc822-headers"):
            values += _embedded_headers(part)
        elif part.get_content_type() == "message/feedback-report":  # Original-Mail-From
            payload = part.get_payload()
            values += [str(p) for p in payload] if isinstance(payload, list) else [str(payload)]
    found: list[tuple[str, returntag.Tag]] = []
    seen: set[str] = set()
    for value in values:
        for address in _ADDRESS.findall(value[:2000]):
            address = address.lower().rstrip(".")
            split = returntag.split_address(address, separator)
            if split is not None and address not in seen:
                seen.add(address)
                found.append((address, split[1]))
    return found


_LETTER_ID = re.compile(r"[!-~]{1,200}")


def returned_letter(parts: list[Message]) -> tuple[str, str]:
    """(the letter, the run that sent it) from the first original letter a
    report carries: its Message-ID (or, without one, ``run:`` and its
    X-Vykhukhol-Run), and its X-Vykhukhol-Run; "" for what it does not say."""
    for part in parts[1:]:
        if part.get_content_type() in ("message/rfc822", "text/rfc822-headers"):
            inner = _inner(part)
            found = [_LETTER_ID.search(str(inner.get(name, "") or ""))
                     for name in ("message-id", "x-vykhukhol-run")]
            ident, run = (f.group(0) if f else "" for f in found)
            if ident or run:
                return ident or f"run:{run}", run
    return "", ""


def _inner(part: Message) -> Message:
    payload = part.get_payload()
    if isinstance(payload, list) and payload and isinstance(payload[0], Message):
        return payload[0]
    import email
    from email import policy

    text = formats.body_bytes(part)
    return email.message_from_bytes(text[:64_000], policy=policy.compat32)


def _embedded_headers(part: Message) -> list[str]:
    payload = part.get_payload()
    if isinstance(payload, list) and payload and isinstance(payload[0], Message):
        inner = payload[0]
    else:  # text/rfc822-headers: the headers as text
        import email
        from email import policy

        text = formats.body_bytes(part)
        inner = email.message_from_bytes(text[:64_000], policy=policy.compat32)
    return [str(v) for name in ORIGINAL_HEADERS for v in (inner.get_all(name) or [])]


def _is_feedback_report(message: Message) -> bool:
    return message.get_content_type() == "multipart/report" \
        and collapse_rfc2231_value(message.get_param("report-type") or "").lower() \
        == "feedback-report"


def _auto_submitted(message: Message) -> bool:
    auto = str(message.get("auto-submitted", "no")).strip().lower()
    precedence = str(message.get("precedence", "")).strip().lower()
    return auto != "no" or precedence == "auto_reply" or any(
        message.get(name) is not None
        for name in ("x-autoreply", "x-autorespond", "x-autoresponder", "x-autoreply-from"))


def _library_failures(message: Message) -> tuple[set[str], set[str], list[tuple[str, str]]]:
    """flufl.bounce's (temporary, permanent) addresses, lower-case text, and
    the detectors that choked on the message: (name, exception's name).

    Each detector is run on its own, in the library's order, as its
    ``all_failures`` does, but one that raises (a broken header folding, a
    header in no charset) is noted and the next one tried: the library's own
    loop would lose the whole report to it."""
    import logging

    from flufl.bounce import all_failures  # imported by bounce reading only

    # Its detectors log each step and a traceback when one chokes; we say what
    # happened in bounces.log ourselves, so nothing reaches stderr.
    library_log = logging.getLogger("flufl.bounce")
    if not library_log.handlers:
        library_log.addHandler(logging.NullHandler())
        library_log.propagate = False
    try:
        from flufl.bounce._scan import _DETECTORS
    except ImportError:  # a release that moved its list: its own loop, all or nothing
        try:
            temporary, permanent = all_failures(message)
        except Exception as exc:  # noqa: BLE001 - a detector choking on a broken message
            return set(), set(), [("flufl.bounce", type(exc).__name__)]
        return _texts(temporary), _texts(permanent), []
    choked = []
    for detector in _DETECTORS:
        try:
            temporary, permanent = detector().process(message)
        except Exception as exc:  # noqa: BLE001 - one detector's bug is not the report's
            choked.append((detector.__name__, type(exc).__name__))
            continue
        if temporary or permanent:
            return _texts(temporary), _texts(permanent), choked
    return set(), set(), choked


def _texts(found) -> set[str]:
    """The library's findings that are addresses (it also returns JSON fragments,
    pipe commands and bare host names from some formats): lower case."""
    result = set()
    for item in found:
        text = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)
        address = formats.checked(text) if "@" in text else None
        if address is not None:
            result.add(address)
    return result


_CAUSE_ORDER = (reasons.Cause.GONE, reasons.Cause.SOFT, reasons.Cause.SENDER, reasons.Cause.DELAY)


def _worst(found, kind: str) -> reasons.Cause:
    """The class of a report as a whole: the one that weighs most on a subscriber."""
    causes = {reading.cause for reading in found}
    for cause in _CAUSE_ORDER:
        if cause in causes:
            return cause
    return reasons.Cause.DELAY if kind == TEMPORARY else reasons.Cause.SOFT


_REPORT_SUBJECT = re.compile(
    r"undeliver|undelivered|delivery (?:status|failure|failed|notification|has failed)|"
    r"returned mail|mail delivery|failure notice|could not be delivered|non[- ]?delivery|"
    r"delivery problem|rejected|mail system error|nicht zustellbar|unzustellbar|"
    r"error|bounce|warning|delayed|returned to sender|unable to deliver|"
    r"не доставлено|недоставлен|ошибка доставки|エラー|配信", re.IGNORECASE)


def _looks_like_report(message: Message, subject: str) -> bool:
    """A message written by a mail system about a letter (not by a person)."""
    sender = _first_address(_header(message, "from")) or _first_address(
        _header(message, "return-path")) or "<>"
    robot = formats._ROBOTS.match(sender) is not None \
        or str(message.get("return-path", "")).strip() in ("<>", "")
    return message.get_content_type() == "multipart/report" or (
        robot and bool(_REPORT_SUBJECT.search(subject))) or (
        robot and _header(message, "x-failed-recipients") != "")


_REPORT_WORDS = re.compile(r"could not be delivered|undeliverable|not delivered|delivery failed|"
                           r"error: |failed permanently|permanent error|no such user|"
                           r"unable to deliver", re.IGNORECASE)


def _says_undelivered(message: Message, text: str) -> bool:
    """A mail system's message whose subject says nothing ("Re: …") but whose
    first lines say the letter was not delivered (Verizon, some carriers); or
    one from no robot's name that says so under a report's subject and returns
    the letter (an "ndr@" sender)."""
    sender = _first_address(_header(message, "from"))
    said = bool(_REPORT_WORDS.search(text[:2000]))
    subject = _header(message, "subject")
    return said and (formats._ROBOTS.match(sender) is not None or (
        bool(_REPORT_SUBJECT.search(subject)) and not _REPLY.match(subject)
        and any(part.get_content_type() == "message/rfc822" for part in _walk(message))))


_REPLY = re.compile(r"\s*(?:re|fwd?|aw|wg)\s*:", re.IGNORECASE)


def _returned_to(message: Message, ours: set[str]) -> set[str]:
    """The recipient of the letter a report returned, when its words name nobody."""
    for part in list(_walk(message))[1:]:
        if part.get_content_type() in ("message/rfc822", "text/rfc822-headers"):
            address = formats.returned_recipient(_inner(part), ours)
            return {address} if address else set()
    return set()


def _named_by_report(text: str, ours: set[str], temporary: set[str],
                     permanent: set[str]) -> tuple[set[str], set[str]]:
    """flufl.bounce's addresses without those the report does not say failed:
    the help desk of a "please contact <support@…>" line, the recipients of a
    bounce forwarded inside the returned letter."""

    def keep(found: set[str]) -> set[str]:
        kept = {a for a in found if not formats.only_as_contact(text, a)}
        if ours and kept & ours:
            kept &= ours
        return kept
    return keep(temporary), keep(permanent)


def _readings(message: Message, text: str, dsn: dict[str, formats.Failed], subject: str,
              found: set[str]) -> dict[str, reasons.Reading]:
    """Why each failed address failed; when ``found`` (flufl.bounce's) is empty
    and the message is a report, the addresses our readers find."""
    if not found and not dsn and not _looks_like_report(message, subject) \
            and not _says_undelivered(message, text):
        return {}
    ours = {address.lower() for name in ("from", "to", "cc", "return-path", "reply-to",
                                         "delivered-to", "sender")
            for address in _ADDRESS.findall(_header(message, name))}
    near = {failed.address: failed for failed in formats.text_failures(text, ours)}
    for address in _texts(_ADDRESS.findall(_header(message, "x-failed-recipients"))):
        near.setdefault(address, formats.Failed(address))
    if found:
        wanted = found
    elif dsn:
        wanted = set(dsn)
    else:
        wanted = set(near) or _returned_to(message, ours)
    warning = formats.is_warning(subject, text)
    result = {}
    for address in wanted:
        window = near[address].text if address in near else formats.window(text, address)
        if address in dsn and (dsn[address].status or dsn[address].text):
            failed = dsn[address]
            status = reasons.prefer(failed.status, failed.text)
            if not failed.text and status.endswith(".0.0"):  # the words beside it may say more
                status = reasons.prefer(status, window)
            reading = reasons.read(status, failed.text, failed.action,
                                   context=f"{window}\n{failed.fields}", recipient=address,
                                   report=text[:3000])
            if reading.rule == reasons.BY_NONE and not failed.text and text:
                # A DSN with no diagnostic: the report's words for people say why.
                reading = reasons.read(status, "", failed.action, context=text[:3000],
                                       recipient=address, report=text[:3000])
        else:
            action = "delayed" if warning else ""
            reading = reasons.read("", "", action, context=window, recipient=address)
            if reading.reason == "onhold" and text:
                reading = reasons.read("", "", action, context=text[:3000], recipient=address)
        result[address] = reading
    return result


_STATUS = re.compile(r"^Status:\s*([245]\.\d{1,3}\.\d{1,3})", re.IGNORECASE | re.MULTILINE)


def _status_code(parts: list[Message]) -> str:
    """The RFC 3464 status code of a DSN, for the log."""
    for part in parts:
        if part.get_content_type() == "message/delivery-status":
            payload = part.get_payload()
            texts = [str(p) for p in payload] if isinstance(payload, list) else [str(payload)]
            for text in texts:
                found = _STATUS.search(text)
                if found:
                    return found.group(1)
    return ""
