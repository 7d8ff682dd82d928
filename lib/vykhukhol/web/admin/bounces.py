"""Bounces: what the bounce mailbox's letters did, and the messages kept for the admin."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from vykhukhol.bounces import record
from vykhukhol.bounces.reading.reasons import Cause
from vykhukhol.errors import NotFound
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.http import Response

BOUNCES_SHOWN = 200     # newest bounce results and kept messages listed


def _(text: str) -> str:
    """Marks a text for the catalog; it is translated where it is shown."""
    return text


# The reasons the bounce reader writes to bounces.log (in English, like every
# log), each matched whole and shown in the page's language. A template is
# also its own pattern: its text matched literally, each {placeholder} as the
# kind of value the log holds there.
_VALUES = {"error": r"\w+", "detector": r"[\w.]+", "addresses": r"[^()]+", "status": r"[0-9.]+",
           "size": r"\d+",
           "limit": r"\d+", "count": r"\d+"}


def _pattern(template: str) -> re.Pattern[str]:
    pieces = re.split(r"\{(\w+)\}", template)  # text, name, text, name, …, text
    return re.compile("".join(re.escape(piece) if i % 2 == 0 else f"(?P<{piece}>{_VALUES[piece]})"
                              for i, piece in enumerate(pieces)))


_REASONS = [(_pattern(template), template) for template in (
    _("not a bounce report"),
    _("a spam complaint (feedback report)"),
    _("asked to unsubscribe by mail"),
    _("an automatic reply (vacation or similar)"),
    _("the bounce detectors could not read it ({error})"),
    _("the {detector} detector could not read it ({error})"),
    _("the report reader could not read it ({error})"),
    _("a delivery report with no failed address that could be read"),
    _("cannot be parsed: {error}"),
    _("permanent failure reported for {addresses} ({status})"),
    _("permanent failure reported for {addresses}"),
    _("temporary failure reported for {addresses} ({status})"),
    _("temporary failure reported for {addresses}"),
    _("no tag of ours"),
    _("no tag"),
    _("a tag that matches nobody (forged, altered, or the address left the list)"),
    _("the report names {addresses}, not the address the tag was made for: kept for the admin"),
    _("processed before"),
    # Refused unread (bounces/reading/limits.py): the message was never parsed.
    _("too big: {size} bytes (at most {limit})"),
    _("too big: more than {limit} bytes"),
    _("too many lines: {count} (at most {limit})"),
    _("a line (or header field) too long: {size} bytes (at most {limit})"),
    _("MIME parts nested too deep: up to {count} levels (at most {limit})"),
    _("too many MIME parts: up to {count} (at most {limit})"),
    _("set aside unread: the reader was stopped twice while on it"),
    _("empty message"),
    # What went wrong with the bounce mailbox (bounces/sources.py, why()).
    _("connection refused"),
    _("the server did not answer in time"),
    _("no such host"),
    _("the server cannot be reached"),
    _("the server does not speak IMAP"),
    _("the server does not speak POP3"),
    _("TLS failed: the server's certificate cannot be trusted (see mail.bounce_cafile)"),
    _("TLS failed"),
    _("the login was refused"),
    _("the folder cannot be opened"),
    _("the server closed the connection"),
    _("the server refused a command"),
    _("the results could not be written"),
    _("the messages stay in the mailbox"),
)]
# A refusal's reading (bounces/reading/reasons.py, Reading.log_text, rule_text, words_text).
_CAUSE_FIRST = re.compile(r"(?P<cause>address gone|soft|sender refused|delay): (?P<rest>.+)")
_RULE = re.compile(r"rule: (?P<kind>provider|status|reply|phrase|command|none)(?: (?P<seen>.+?))?"
                   r" \((?P<sure>sure|doubtful)\)")
_WORDS = re.compile(r"server said: (?P<words>.+)")
_RULE_KINDS = {"provider": _("the provider's own words"), "status": _("status code"),
               "reply": _("reply code and text"), "phrase": _("the text alone"),
               "command": _("the SMTP command refused"), "none": _("nothing specific")}
# A mailbox problem: where (scheme://host:port), then the reason.
_WHERE_FIRST = re.compile(r"(?P<where>(?:imaps?|pop3s?)://[^\s/]+): (?P<rest>.+)")
_KIND_FIRST = re.compile(r"(?P<kind>permanent|temporary|complaint|unsubscribe|auto-reply|kept|"
                         r"refused): (?P<rest>.+)")


def _reason(admin: Admin, text: str) -> Markup:
    """A logged reason in the page's language, piece by piece ("; " apart);
    a piece it does not know (a mail server's own words) is shown as written.
    What is data, not the page's words (a reason code, the words a rule saw, the
    server's reply, a mailbox's address), is marked ``translate="no"``."""
    shown = []
    for piece in text.split("; "):
        cause_first = _CAUSE_FIRST.fullmatch(piece)
        if cause_first:
            shown.append(Markup("{}: {}").format(Cause(cause_first["cause"]).label(admin.lang),
                                                 _data(cause_first["rest"])))
            continue
        rule = _RULE.fullmatch(piece)
        if rule:
            kind = admin._(_RULE_KINDS[rule["kind"]])
            said = (escape(admin._("decided by {rule}: {seen}")).format(rule=kind, seen=_data(rule["seen"]))
                    if rule["seen"] else admin._("decided by {rule}", rule=kind))
            shown.append(Markup("{} — {}").format(said, admin._("sure") if rule["sure"] == "sure"
                                                  else admin._("doubtful")))
            continue
        words = _WORDS.fullmatch(piece)
        if words:
            shown.append(escape(admin._("the server said: {words}")).format(words=_data(words["words"])))
            continue
        where_first = _WHERE_FIRST.fullmatch(piece)
        if where_first:
            shown.append(Markup("{}: {}").format(_data(where_first["where"]),
                                                 _reason(admin, where_first["rest"])))
            continue
        kind_first = _KIND_FIRST.fullmatch(piece)
        if kind_first:
            shown.append(Markup("{}: {}").format(_bounce_kind(admin, kind_first["kind"]),
                                                 _reason(admin, kind_first["rest"])))
            continue
        for pattern, template in _REASONS:
            found = pattern.fullmatch(piece)
            if found:
                shown.append(escape(admin._(template)).format(
                    **{name: _data(value) for name, value in found.groupdict().items()}))
                break
        else:
            shown.append(_data(piece))
    return Markup("; ").join(shown)


def _data(text: str) -> Markup:
    """``text`` (escaped) as data a translator leaves alone: a code, a server's words."""
    return Markup('<span translate="no">{}</span>').format(text)


def _doubtful(text: str) -> bool:
    """Whether a logged reason's rule piece says the reading is doubtful (the
    server's words, a piece of their own, cannot say so)."""
    return any((rule := _RULE.fullmatch(piece)) is not None and rule["sure"] == "doubtful"
               for piece in text.split("; "))


def _bounce_kind(admin: Admin, kind: str) -> str:
    labels = {
        "permanent": admin._("permanent failure"), "temporary": admin._("temporary failure"),
        "complaint": admin._("spam complaint: unsubscribed"),
        "unsubscribe": admin._("unsubscribed by mail"), "auto-reply": admin._("automatic reply"),
        "kept": admin._("kept for the admin"), "refused": admin._("refused unread"),
        "repeated": admin._("read again"),
        "unknown tag": admin._("a tag that matches nobody"),
        "deleted": admin._("subscriber deleted"), "problem": admin._("mailbox problem"),
        "unknown address": admin._("an address on no list"),
        "callback": admin._("notice from a provider"),
        "callback refused": admin._("callback refused"),
        "pipe problem": admin._("not processed"),
    }
    return labels.get(kind, kind)


def source_label(admin: Admin, source: str) -> str:
    """Where a result came from: the mailbox, the pipe, or a provider's callback
    (also what the Removed and Suppressed pages show of it)."""
    labels = {"imap": admin._("bounce mailbox"), "pop3": admin._("bounce mailbox"),
              "pipe": admin._("pipe"), "ses": "Amazon SES", "postmark": "Postmark",
              "mailgun": "Mailgun", "sendgrid": "SendGrid",
              "generic": admin._("callback (generic)")}
    return labels.get(source, source)


def _bounce_target(admin: Admin, target: str) -> str:
    kind, _, name = target.partition(" ")
    if kind == "service" and name:
        return admin._("service {name}", name=name)
    if kind == "newsletter" and name:
        return admin._("newsletter {name}", name=name)
    return target


def bounces_page(admin: Admin, args: dict) -> Response:
    rows = [{"when": local_time(admin.settings, line.time),
             "kind": _bounce_kind(admin, "pipe problem" if (line.kind, line.source) == (
                 "problem", record.PIPE) else line.kind),
             "target": _bounce_target(admin, line.target), "address": line.address,
             "source": source_label(admin, line.source), "reason": _reason(admin, line.reason),
             "doubtful": _doubtful(line.reason)}
            for line in record.recent(admin.data, BOUNCES_SHOWN)]
    kept = record.kept_messages(admin.data)[:BOUNCES_SHOWN]
    return admin.page("bounces.html", rows=rows, kept=kept,
                      mailbox=bool(admin.settings["mail.bounce_mailbox"]))


def bounce_kept(admin: Admin, args: dict) -> Response:
    text = record.read_kept(admin.data, args["file"])
    if text is None:
        raise NotFound(admin._("No such message."))
    return admin.page("bounce_kept.html", file=args["file"], text=text)
