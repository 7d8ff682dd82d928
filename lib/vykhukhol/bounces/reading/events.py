"""What each mail provider's callback events mean: its parsed body (JSON)
read into :class:`~.classify.Report` objects, as the same report by mail
would be classified.

Pure functions of the body: the proof that a request comes from the
provider (a signature, a key, a topic kept in the data directory) is each
provider's module in :mod:`vykhukhol.bounces.providers`, which calls the
function here only after it; what a report does is :mod:`vykhukhol.bounces.apply`.
"""

from __future__ import annotations

from typing import Any

from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading.callbacks import (
    MAX_EVENTS,
    CallbackRefused,
    address,
    json_body,
    text,
)
from vykhukhol.bounces.reading.classify import Report

# --- the generic form -----------------------------------------------------------------

GENERIC_KINDS = (kinds.PERMANENT, kinds.TEMPORARY, kinds.COMPLAINT, kinds.UNSUBSCRIBE)


def generic(found: Any) -> list[Report]:
    """The generic form's reports (one JSON object or an array of them)."""
    items = found if isinstance(found, list) else [found]
    if not items or len(items) > MAX_EVENTS:
        raise CallbackRefused(400, f"expected 1 to {MAX_EVENTS} reports")
    reports = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise CallbackRefused(400, f"report {number} is not a JSON object")
        who = address(item.get("address"))
        kind = text(item.get("kind"), 20)
        if not who:
            raise CallbackRefused(400, f"report {number}: no valid address")
        if kind not in GENERIC_KINDS:
            raise CallbackRefused(400, f"report {number}: kind must be one of {', '.join(GENERIC_KINDS)}")
        diagnostic = text(item.get("diagnostic"), 200)
        event = text(item.get("id"), 200) or f"{who}\0{kind}\0{diagnostic}"
        reports.append(Report(event, kind, who, _generic_reason(kind, diagnostic), text(item.get("tag"), 100)))
    return reports


def _object(record: dict, key: str) -> dict:
    """``record[key]`` when it is a JSON object, else an empty one."""
    found = record.get(key)
    return found if isinstance(found, dict) else {}


def _generic_reason(kind: str, diagnostic: str) -> str:
    said = {kinds.PERMANENT: "permanent failure reported by callback",
            kinds.TEMPORARY: "temporary failure reported by callback",
            kinds.COMPLAINT: "a spam complaint reported by callback",
            kinds.UNSUBSCRIBE: "an unsubscribe reported by callback"}[kinds.Kind(kind)]
    return f"{said} ({diagnostic})" if diagnostic else said


# --- Postmark -------------------------------------------------------------------------

# Postmark's bounce types (its BounceType list) and what each is here: the
# address is gone; a failure that may pass; a complaint; an unsubscribe. Any
# other type (AutoResponder, Subscribe, OpenRelayTest, DMARCPolicy, Blocked…)
# is noted and does nothing, as a mail of that kind would.
POSTMARK_PERMANENT = {"HardBounce", "BadEmailAddress", "ManuallyDeactivated"}
POSTMARK_TEMPORARY = {"SoftBounce", "Transient", "DnsError", "Unknown", "Undeliverable",
                      "AddressChange", "Blocked", "ChallengeVerification", "SMTPApiError"}


def postmark(record: Any) -> list[Report]:
    """A Postmark record's reports: one for a Bounce or SpamComplaint, none for others."""
    if not isinstance(record, dict):
        raise CallbackRefused(400, "expected one Postmark record (a JSON object)")
    kind_of_record = text(record.get("RecordType"), 40)
    bounce_type = text(record.get("Type"), 40)
    if kind_of_record not in ("Bounce", "SpamComplaint"):
        return []  # deliveries, opens, clicks: nothing to do, and 200 so Postmark stops
    who = address(record.get("Email"))
    if not who:
        raise CallbackRefused(400, "the record names no valid Email")
    if kind_of_record == "SpamComplaint" or bounce_type == "SpamComplaint":
        kind = kinds.COMPLAINT
    elif bounce_type == "Unsubscribe":
        kind = kinds.UNSUBSCRIBE
    elif bounce_type in POSTMARK_PERMANENT:
        kind = kinds.PERMANENT
    elif bounce_type in POSTMARK_TEMPORARY:
        kind = kinds.TEMPORARY
    else:
        kind = kinds.AUTO_REPLY if bounce_type == "AutoResponder" else kinds.TEMPORARY
    details = text(record.get("Details"), 160) or text(record.get("Description"), 160)
    metadata = _object(record, "Metadata")
    event = text(record.get("ID"), 100) or text(record.get("MessageID"), 100) + "/" + who
    reason = f"Postmark {bounce_type or kind_of_record}" + (f": {details}" if details else "")
    return [Report(event, kind, who, reason, text(metadata.get("vykhukhol-tag"), 100))]


# --- Mailgun --------------------------------------------------------------------------

def mailgun(event: dict, token: str) -> list[Report]:
    """A Mailgun event's reports (``token``: the signature's, the id of an event without one)."""
    name = text(event.get("event"), 40)
    if name == "failed":
        kind = kinds.PERMANENT if text(event.get("severity"), 20) == "permanent" else kinds.TEMPORARY
    elif name == "complained":
        kind = kinds.COMPLAINT
    elif name == "unsubscribed":
        kind = kinds.UNSUBSCRIBE
    else:
        return []
    who = address(event.get("recipient"))
    if not who:
        raise CallbackRefused(400, "the event names no valid recipient")
    status = _object(event, "delivery-status")
    said = text(status.get("description"), 160) or text(status.get("message"), 160) \
        or text(event.get("reason"), 80)
    code = text(status.get("code"), 10)
    reason = f"Mailgun {name}" + (f" ({event.get('severity')})" if name == "failed" else "") \
        + (f": {code} {said}".rstrip() if code or said else "")
    return [Report(text(event.get("id"), 200) or token, kind, who, reason, _mailgun_tag(event))]


def _mailgun_tag(event: dict) -> str:
    variables = event.get("user-variables")
    if isinstance(variables, dict) and text(variables.get("vykhukhol-tag"), 100):
        return text(variables.get("vykhukhol-tag"), 100)
    envelope = event.get("envelope")
    if isinstance(envelope, dict) and text(envelope.get("sender"), 254):
        return text(envelope.get("sender"), 254)
    message = event.get("message")
    headers = message.get("headers") if isinstance(message, dict) else None
    if isinstance(headers, dict):
        for name, value in headers.items():
            if isinstance(name, str) and name.lower() == "x-vykhukhol-tag":
                return text(value, 100)
    return ""


# --- SendGrid -------------------------------------------------------------------------

# Why SendGrid dropped a letter (it keeps its own suppression lists), and what that is here.
SENDGRID_DROPPED = {"bounced address": kinds.PERMANENT, "invalid": kinds.PERMANENT,
                    "spam reporting address": kinds.COMPLAINT, "unsubscribed address": kinds.UNSUBSCRIBE}


def sendgrid(events: Any) -> list[Report]:
    """SendGrid's events (a JSON array) as reports; events of other kinds are none."""
    if not isinstance(events, list) or len(events) > MAX_EVENTS:
        raise CallbackRefused(400, f"expected a JSON array of at most {MAX_EVENTS} events")
    reports = []
    for event in events:
        if not isinstance(event, dict):
            raise CallbackRefused(400, "an event is not a JSON object")
        report = _sendgrid_report(event)
        if report is not None:
            reports.append(report)
    return reports


def _sendgrid_report(event: dict) -> Report | None:
    name = text(event.get("event"), 40)
    why = text(event.get("reason"), 160)
    if name == "bounce":
        kind = kinds.TEMPORARY if text(event.get("type"), 20) == "blocked" else kinds.PERMANENT
    elif name == "dropped":
        kind = SENDGRID_DROPPED.get(why.lower(), kinds.TEMPORARY)
    elif name == "spamreport":
        kind = kinds.COMPLAINT
    elif name in ("unsubscribe", "group_unsubscribe"):
        kind = kinds.UNSUBSCRIBE
    else:
        return None
    who = address(event.get("email"))
    if not who:
        raise CallbackRefused(400, "an event names no valid email")
    status = text(event.get("status"), 10)
    kind_said = f"{name} ({event.get('type')})" if name == "bounce" and event.get("type") else name
    reason = f"SendGrid {kind_said}" + (f": {status} {why}".rstrip() if status or why else "")
    event_id = text(event.get("sg_event_id"), 200) or \
        f"{text(event.get('sg_message_id'), 200)}/{name}/{who}/{text(event.get('timestamp'), 20)}"
    return Report(event_id, kind, who, reason, text(event.get("vykhukhol_tag"), 100))


# --- Amazon SES (through SNS) ---------------------------------------------------------

def ses(message_id: str, inner: Any) -> list[Report]:
    """The reports of an SES notification (an SNS Notification's ``Message``)."""
    notice = json_body(inner.encode("utf-8")) if isinstance(inner, str) else None
    if not isinstance(notice, dict):
        raise CallbackRefused(400, "the SNS Message is not an SES notification")
    what = text(notice.get("notificationType") or notice.get("eventType"), 40)
    tag = _ses_tag(notice.get("mail"))
    if what == "Bounce":
        bounce = _object(notice, "bounce")
        which = text(bounce.get("bounceType"), 20)
        kind = kinds.PERMANENT if which == "Permanent" else kinds.TEMPORARY
        people = bounce.get("bouncedRecipients")
        head = f"SES {which or 'bounce'} bounce ({text(bounce.get('bounceSubType'), 40)})"
    elif what == "Complaint":
        complaint = _object(notice, "complaint")
        kind, people = kinds.COMPLAINT, complaint.get("complainedRecipients")
        head = "SES complaint" + (f" ({text(complaint.get('complaintFeedbackType'), 40)})"
                                  if complaint.get("complaintFeedbackType") else "")
    else:
        return []  # deliveries and the like
    if not isinstance(people, list) or len(people) > MAX_EVENTS:
        raise CallbackRefused(400, "the SES notification lists no recipients")
    reports = []
    for person in people:
        who = address(person.get("emailAddress")) if isinstance(person, dict) else ""
        if not who:
            continue
        diagnostic = text(person.get("diagnosticCode"), 160)
        reports.append(Report(f"{message_id}/{who}", kind, who,
                              head + (f": {diagnostic}" if diagnostic else ""), tag))
    return reports


def _ses_tag(mail) -> str:
    if not isinstance(mail, dict):
        return ""
    for header in mail.get("headers") or []:
        if isinstance(header, dict) and text(header.get("name"), 40).lower() == "x-vykhukhol-tag":
            return text(header.get("value"), 100)
    return text(mail.get("source"), 254)
