"""Why a letter was refused, and whom the refusal is about
(docs/design/bounces.md#refusal-reasons).

Every refusal — a delivery report's ``Status``/``Diagnostic-Code``, the text
a mail system wrote beside the address, an SMTP reply at hand-over — is read
into a :class:`Reading`: Sisimai's name for the reason (``userunknown``,
``mailboxfull``, ``blocked`` …, kept for the log) and the :class:`Cause` it
belongs to, which decides what happens to the subscriber:

- ``address gone`` — the address does not exist (any more): deleted, suppressed;
- ``soft`` — the mailbox cannot take it now: counted per different letter;
- ``sender refused`` — our host, our address or our letter was refused: never
  counted on the subscriber;
- ``delay`` — not delivered yet: noted.

The evidence, most specific first (docs/design/bounces.md#bounces-evidence): a big provider's own words
and labels (:mod:`.remote`), the enhanced status code where it is specific,
the reply code with the text, the text alone; the final answer decides (a
DSN's Diagnostic-Code, a transcript's last reply). The patterns are Sisimai's
(:mod:`.patterns`) and the order of their checks follows its ``reason.Find``.
Over Sisimai's reason name (an input, not the answer) three rules hold
(docs/design/bounces.md#bounces-rules): a 4xx is never "address gone"; a
permanent refusal (5xx, or no code) whose words say the mailbox or domain
does not exist or the account is disabled is, at any stage — sure with a
5.x.x code that says the same, else in doubt; words of content, policy or
reputation keep a refusal from reading gone (:mod:`.evidence`).
Each reading says which rule decided and whether it is sure or doubtful
(:meth:`Reading.rule_text`); an address read as gone in doubt leaves at a
second letter refused so.
:func:`smtp_reason` reads a reply at hand-over; :func:`read` reads a
report's fields. Both are pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from vykhukhol.bounces.reading import patterns, remote
from vykhukhol.bounces.reading import words as server_words
from vykhukhol.bounces.reading.evidence import (
    GONE_PAIRS,
    GONE_PHRASES,
    account_disabled,
    gone_by_evidence,
    not_about_recipient,
    speaks_of_content,
)
from vykhukhol.bounces.reading.matching import (
    BY_COMMAND,
    BY_NONE,
    BY_PHRASE,
    BY_PROVIDER,
    BY_REPLY,
    BY_STATUS,
    CONTINUED,
    MAX_TEXT,
    REPLY,
    STATUS,
    aligned,
    included,
    match,
)
from vykhukhol.i18n import tr


def _(text: str) -> str:
    """Marks a label for the catalog (tools/i18n.py); :meth:`Cause.label` translates it."""
    return text


class Cause(str, Enum):
    """The four classes of refusal; the value is what bounces.log writes."""

    GONE = "address gone"
    SOFT = "soft"
    SENDER = "sender refused"
    DELAY = "delay"

    def label(self, lang: str) -> str:
        """The class in ``lang`` (``ru`` or ``en``)."""
        return tr(lang, _LABELS[self])


_LABELS = {
    Cause.GONE: _("address gone"),
    Cause.SOFT: _("mailbox cannot take it now"),
    Cause.SENDER: _("sender refused"),
    Cause.DELAY: _("not delivered yet"),
}

#: Sisimai's reason names by the class they belong to. What is not about the
#: address nor about the sender (the recipient's system failing, a pipe
#: program failing, an unreadable report) is soft: it may pass, and only a
#: run of different letters failing deletes the address.
CLASS_OF: dict[str, Cause] = {
    **dict.fromkeys(("userunknown", "hostunknown", "hasmoved", "notaccept", "suppressed"),
                    Cause.GONE),
    **dict.fromkeys(("mailboxfull", "suspend", "filtered", "expired", "systemfull", "systemerror",
                     "networkerror", "mailererror", "onhold", "undefined"), Cause.SOFT),
    **dict.fromkeys(("blocked", "badreputation", "spamdetected", "virusdetected", "authfailure",
                     "requireptr", "speeding", "toomanyconn", "policyviolation", "mesgtoobig",
                     "exceedlimit", "rejected", "norelaying", "securityerror", "contenterror",
                     "notcompliantrfc", "syntaxerror", "failedstarttls"), Cause.SENDER),
}

#: Sisimai's reason for each enhanced status code it gives one to (smtp/status).
STATUS_REASONS: dict[str, str] = {
    "4.1.6": "hasmoved", "4.1.7": "rejected", "4.1.8": "rejected", "4.1.9": "systemerror",
    "4.2.1": "blocked", "4.2.2": "mailboxfull", "4.2.3": "exceedlimit", "4.2.4": "filtered",
    "4.3.1": "systemfull", "4.3.2": "notaccept", "4.3.3": "systemerror", "4.3.5": "systemerror",
    "4.4.1": "expired", "4.4.2": "networkerror", "4.4.3": "systemerror", "4.4.4": "networkerror",
    "4.4.5": "systemfull", "4.4.6": "networkerror", "4.4.7": "expired", "4.4.8": "networkerror",
    "4.5.3": "systemerror", "4.5.5": "systemerror", "4.6.0": "contenterror",
    "4.6.2": "contenterror", "4.6.5": "contenterror", "4.7.1": "blocked", "4.7.2": "blocked",
    "4.7.5": "securityerror", "4.7.6": "securityerror", "4.7.7": "securityerror",
    "4.7.12": "securityerror", "4.7.15": "securityerror", "4.7.16": "mesgtoobig",
    "4.7.24": "authfailure", "4.7.25": "requireptr", "4.7.26": "authfailure",
    "5.1.0": "userunknown", "5.1.1": "userunknown", "5.1.2": "hostunknown",
    "5.1.3": "userunknown", "5.1.4": "filtered", "5.1.6": "hasmoved", "5.1.7": "rejected",
    "5.1.8": "rejected", "5.1.9": "systemerror", "5.1.10": "notaccept", "5.2.0": "filtered",
    "5.2.1": "filtered", "5.2.2": "mailboxfull", "5.2.3": "exceedlimit", "5.2.4": "filtered",
    "5.3.0": "systemerror", "5.3.1": "systemfull", "5.3.2": "notaccept", "5.3.3": "systemerror",
    "5.3.4": "mesgtoobig", "5.3.5": "systemerror", "5.4.0": "networkerror",
    "5.4.3": "systemerror", "5.4.4": "hostunknown", "5.5.2": "syntaxerror",
    "5.5.3": "toomanyconn", "5.5.4": "systemerror", "5.5.5": "systemerror",
    "5.5.6": "syntaxerror", "5.7.0": "securityerror", "5.7.1": "securityerror",
    "5.7.2": "securityerror", "5.7.3": "securityerror", "5.7.4": "securityerror",
    "5.7.5": "securityerror", "5.7.6": "securityerror", "5.7.7": "securityerror",
    "5.7.8": "securityerror", "5.7.9": "securityerror", "5.7.10": "securityerror",
    "5.7.11": "securityerror", "5.7.13": "suspend", "5.7.14": "securityerror",
    "5.7.15": "securityerror", "5.7.16": "mesgtoobig", "5.7.17": "hasmoved",
    "5.7.18": "hasmoved", "5.7.19": "securityerror", "5.7.20": "authfailure",
    "5.7.21": "authfailure", "5.7.22": "authfailure", "5.7.23": "authfailure",
    "5.7.24": "authfailure", "5.7.25": "requireptr", "5.7.26": "authfailure",
    "5.7.27": "notaccept", "5.7.28": "spamdetected", "5.7.29": "authfailure",
    "5.7.30": "failedstarttls",
}

# Status names too vague to decide alone: Sisimai tries the rarer patterns
# before it trusts them (its GetRetried list).
_VAGUE = frozenset({"undefined", "onhold", "systemerror", "securityerror", "expired",
                    "networkerror", "hostunknown", "userunknown"})




@dataclass(frozen=True)
class Reading:
    """One refusal read: its class, Sisimai's reason name, the codes seen."""

    cause: Cause
    reason: str           # Sisimai's name: "userunknown", "mailboxfull", "blocked" …
    status: str = ""      # the enhanced status code, "5.1.1"
    code: str = ""        # the SMTP reply code, "550"
    # What decided: the kind of rule (BY_STATUS, BY_REPLY, BY_PHRASE,
    # BY_PROVIDER, BY_COMMAND, BY_NONE), what it saw (a code, a phrase, "Google: …"),
    # whether the reading is sure, and the server's own words.
    rule: str = ""
    seen: str = ""
    sure: bool = False
    words: str = ""

    def log_text(self) -> str:
        """The reading for bounces.log: ``address gone: userunknown 5.1.1``."""
        codes = " ".join(c for c in (self.status, self.code) if c)
        return f"{self.cause.value}: {self.reason}" + (f" {codes}" if codes else "")

    def rule_text(self) -> str:
        """What decided, for bounces.log: ``rule: status 5.1.1 (sure)``; "" when unknown."""
        if not self.rule:
            return ""
        seen = server_words.clean(self.seen, 80)
        return f"rule: {self.rule}" + (f" {seen}" if seen else "") + \
            (" (sure)" if self.sure else " (doubtful)")

    def words_text(self) -> str:
        """The server's words, for bounces.log: ``server said: 550 5.1.1 …``; "" when none."""
        text = server_words.clean(self.words, 200)
        return f"server said: {text}" if text else ""


def command(text: str) -> str:
    """The SMTP command a refusal answered (``RCPT``, ``DATA``, ``MAIL``, ``EHLO``),
    as reports write it; "" when they do not say."""
    found = _COMMAND.findall(text[:MAX_TEXT])
    if not found:
        lower = " ".join(text[:MAX_TEXT].lower().split())
        if "my name was rejected" in lower or "refused to talk to me" in lower:
            # qmail, Postfix: the greeting (our host) was refused
            return "EHLO"
        if any(phrase in lower for phrase in _RCPT_PHRASES):
            return "RCPT"
        return ""
    word = found[-1].lower().replace(" ", "")
    if word.startswith("rcpt"):
        return "RCPT"
    if "data" in word or word.startswith("endof"):
        return "DATA"
    if word.startswith("mail"):
        return "MAIL"
    return "EHLO"


_COMMAND = re.compile(
    r"(?:(?:in reply to|after|>>>|progress was|said \d{3} for|like our)[ \t]+|smtp:|^[ \t]*|\[)"
    r"((?:end of )?data|rcpt[ _]to|rcpt|mail[ _]from|ehlo|helo)\b", re.IGNORECASE | re.MULTILINE)
# Words only a refusal of RCPT TO uses (PowerMTA; qmail-remote's "does not like
# recipient").
_RCPT_PHRASES = ("x-powermta-bouncecategory: bad-mailbox", "does not like recipient")
STRICT = False
_BEFORE_DATA = ("RCPT", "MAIL", "EHLO")


def reason_name(status: str, text: str, action: str = "", said: str | None = None,
                code: str = "") -> str:
    """Sisimai's reason name for a refusal, from its enhanced status code, its
    diagnostic text and (in a DSN) its ``Action``; ``onhold`` when nothing says
    (:func:`decide` with the rule that said it)."""
    return decide(status, text, action, said, code)[0]


def decide(status: str, text: str, action: str = "", said: str | None = None,
           code: str = "") -> tuple[str, str, str]:
    """(Sisimai's reason name, the kind of rule that decided, what it saw).

    The kind is ``status`` (the enhanced status code), ``reply`` (the reply
    code with the text), ``phrase`` (the text alone), ``command`` (the SMTP
    command refused: the greeting, our MAIL FROM) or ``none``; what it saw is
    the code or the phrase.

    As in Sisimai, "user unknown" is believed when the status code says so or
    the refusal answered ``RCPT TO``; said after the letter's text (some
    providers' content filters answer so), or where the report does not say
    when, it is ``filtered``: never one that deletes at once (:func:`read`
    reads it as gone in doubt, docs/design/bounces.md#bounces-rules).
    ``said`` is the SMTP command when the caller read it from more text.
    """
    said = command(text) if said is None else said
    # "550-5.2.1" at the start of each continued line of a reply splits its words.
    text = " ".join(CONTINUED.sub(" ", text[:MAX_TEXT].lower()).split())
    for name, phrases in _OWN_PHRASES.items():
        for phrase in phrases:
            if phrase in text:
                return name, BY_PHRASE, phrase
    if status.startswith("2."):
        return "delivered", BY_STATUS, status
    by_status = STATUS_REASONS.get(status, "")
    # A 5.1.1 written in the text (a transcript's own line) counts as much as the field.
    unknown_by_code = by_status == "userunknown" or said != "DATA" and any(
        STATUS_REASONS.get(".".join(code)) == "userunknown" and code[0] == "5"
        for code in STATUS.findall(text))
    coded = BY_REPLY if code else BY_PHRASE  # a phrase with a reply code beside it says more
    for name in patterns.FIRST:
        if said in ("MAIL", "EHLO") and CLASS_OF[name] is Cause.GONE:
            continue  # refused before any recipient was named: about the sender
        if name == "userunknown":
            if by_status == "suspend":
                continue
            seen = match(name, text)
            if unknown_by_code and seen or by_status == "userunknown":
                if not any(included(other, text) for other in _NOT_UNKNOWN):
                    return name, BY_STATUS, status if by_status == "userunknown" else (
                        next(".".join(c) for c in STATUS.findall(text)
                             if STATUS_REASONS.get(".".join(c)) == "userunknown"))
            elif said == "RCPT" and seen:
                return name, coded, seen
            elif said != "DATA":
                own = next((phrase for phrase in GONE_PHRASES if phrase in text), "") or next(
                    (" … ".join(pair) for pair in GONE_PAIRS if aligned(text, pair)), "")
                if own:
                    return name, coded, own
                if STRICT and not said and not by_status and seen \
                        and not ("unknown user" in text and "user unknown" not in text):
                    # "550 Unknown user" with no command is what Japanese carriers'
                    # content filters answer after DATA: Sisimai reads it as filtered.
                    return name, coded, seen
        elif name == "filtered":
            if by_status in ("suspend", "hasmoved", "hostunknown", "notaccept"):
                continue  # the code is specific: a content filter it is not
            if by_status == "filtered" or said not in _BEFORE_DATA:
                seen = match("userunknown", text) or match(name, text)
                if seen:
                    return name, coded, seen
        else:
            seen = match(name, text)
            if seen:
                return name, coded, seen
    if by_status and by_status not in _VAGUE:
        return by_status, BY_STATUS, status
    if said == "EHLO":
        return "blocked", BY_COMMAND, "EHLO"  # refused at the greeting: the sending host
    if code in ("500", "501", "502", "503", "504") and status[2:3] in ("", "0", "5"):
        return "syntaxerror", BY_REPLY, code  # our command was not understood
    for name, words in patterns.FORMATS.items():
        if said in ("MAIL", "EHLO") and CLASS_OF[name] is Cause.GONE:
            continue
        for phrase in words:
            if phrase in text:
                return name, coded, phrase
    for name in patterns.ORDER[len(patterns.FIRST):]:
        if said in ("MAIL", "EHLO") and CLASS_OF[name] is Cause.GONE:
            continue
        seen = match(name, text)
        if seen:
            return name, coded, seen
    if said in ("MAIL", "EHLO") and CLASS_OF.get(by_status) is Cause.GONE:
        return ("rejected", BY_COMMAND, "MAIL") if said == "MAIL" else ("blocked", BY_COMMAND, "EHLO")
    if by_status:
        return by_status, BY_STATUS, status
    if status[:3] in ("5.6", "4.6"):
        return "contenterror", BY_STATUS, status
    if status[:3] in ("5.7", "4.7"):
        return "securityerror", BY_STATUS, status
    if action.lower() in ("delayed", "expired"):
        return "expired", BY_NONE, ""
    return "onhold", BY_NONE, ""


# Sentences that decide alone, before Sisimai's patterns: a mailing list that
# refuses our post (Google Groups, in English and Japanese), a block list, a
# domain with nowhere to deliver.
_OWN_PHRASES = {
    # Google Groups writes in the sender's language; its help link is in every one.
    "rejected": ("you may not have permission to post messages to the group",
                 "グループにメッセージを投稿する権限がない", "https://groups.google.com/support/"),
    # GMX / 1&1: the sending IP is on their block list; anyone's answer that
    # is a link to a block list's lookup of our IP (GoDaddy: "553 http://www.spamhaus.org/query/bl?ip=…").
    "blocked": ("to clarify.) (bl)", "spamhaus.org/query/bl?ip=", "spamhaus.org/query/ip/"),
    # Exim: the recipient's domain has no host to deliver to (Sisimai's mail.ru
    # sample, a hostunknown); by the words alone, so in doubt.
    "hostunknown": ("unrouteable mail domain",),
}

# Texts that, beside a 5.1.1, say the refusal was about something else.
_NOT_UNKNOWN = ("norelaying", "blocked", "mailboxfull", "hasmoved", "rejected", "notaccept")


def prefer(status: str, diagnostic: str) -> str:
    """The status code to believe: the last one in the diagnostic text (the remote
    server's own, after a relay's summary) when it has one — a DSN's ``Status``
    is often the relay's guess, ``5.1.1`` for ``552 5.2.2 Over quota`` — else
    the ``Status`` field."""
    codes = [".".join(code) for code in STATUS.findall(diagnostic or "")]
    specific = [code for code in codes if not code.endswith(".0.0")]
    return (specific or codes or [_status(status)])[-1]


def read(status: str = "", text: str = "", action: str = "", code: str = "",
         context: str = "", recipient: str = "", report: str = "") -> Reading:
    """The reading of one failed recipient of a report.

    ``status`` is the enhanced code (``5.1.1``; found in ``text`` when empty),
    ``text`` the diagnostic and any words the report put beside the address,
    ``action`` the DSN's ``Action`` (``failed``, ``delayed``; empty in a
    report without one), ``code`` the SMTP reply (``550``; found in ``text``
    when empty). ``context`` is the report's text around the address: read for
    the SMTP command, and for the reason when the diagnostic alone says none;
    ``recipient`` the failed address (its domain may name the provider),
    ``report`` the report's own text for people (its hosts may name the
    provider; its words may contradict the DSN).
    A 4.x.x status without ``Action: failed`` is a delay; with it, the server
    gave up retrying.
    """
    # The note a DSN writes beside its Status: "5.2.1 (mailbox disabled, …)".
    note = " ".join(_NOTE.findall(context[:MAX_TEXT]))
    status = _status(status) or _status(text) or _status(context)
    code = code or _reply(text) or _reply(context)
    action = action.strip().lower()
    said = command(f"{text}\n{context}")
    name, rule, seen = decide(status, text, action, said, code) if text.strip() else (
        "onhold", BY_NONE, "")
    if not text.strip() and context and len(set(_ADDRESS.findall(context.lower()))) <= 1:
        # No diagnostic field: the last reply of a transcript about this one
        # recipient is the final answer (with others, a reply may be theirs).
        final = server_words.final_answer(context)
        if REPLY.match(final) and final != " ".join(context.split()):
            name, rule, seen = decide(_status(final) or status, final, action, said,
                                      _reply(final) or code)
    if name in ("onhold", "undefined") and context:
        name, rule, seen = decide(status, f"{text}\n{context}", action, said, code)

    for host in remote.providers(f"{text}\n{context}\n{report[:3000]}",
                                 recipient.rpartition("@")[2]):
        # The provider's own words and labels are surer than the general patterns.
        by_host, label = remote.reason(host, text or context, status, said)
        if by_host in CLASS_OF:
            name, rule, seen = by_host, BY_PROVIDER, f"{remote.title(host)}: {label}"
            break
    answer = server_words.final_answer(text or context)
    diagnostic = text
    text = f"{text}\n{context}"
    temporary = (status.startswith("4.") or (not status and code.startswith("4")))
    if action == "delayed" or (temporary and action not in ("failed", "")):
        return Reading(Cause.DELAY, name, status, code, rule, seen, rule != BY_NONE, answer)
    if name == "delivered":
        return Reading(Cause.DELAY, name, status, code, rule, seen, True, answer)
    cause = CLASS_OF.get(name, Cause.SOFT)
    sure = _sure(cause, rule, status, code)
    if name == "filtered" and included("userunknown", " ".join(text.lower().split())):
        sure = False  # "user unknown" where we cannot tell when: in doubt
    gone = None if said in ("MAIL", "EHLO") else gone_by_evidence(
        status, code, diagnostic or context, rule)
    if gone is not None and not (cause is Cause.GONE and sure):
        name, rule, seen, sure = gone  # a sure reading of the same cause stays as it is
        cause = Cause.GONE
    if temporary or code.startswith("4"):
        if cause is Cause.GONE:
            # A 4xx is never proof the address is gone, whatever its words:
            # the server may take the letter on the next try.
            cause, sure = Cause.SOFT, False
    elif gone is None and cause is Cause.GONE and (
            speaks_of_content(diagnostic or answer) or not_about_recipient(diagnostic or context)):
        # "user unknown" beside "spam", a 5.1.1 about our "unauthorized sender": not the address
        cause, sure = Cause.SOFT, False
    if cause is Cause.GONE and (report or note) and not (gone and name == "suspend"):
        prose = " ".join(f"{note}\n{_PROSE_END.split(report[:MAX_TEXT], 1)[0]}".lower().split())

        full, held = (included(soft, prose) or any(p in prose for p in patterns.FORMATS.get(soft, ()))
                      for soft in ("mailboxfull", "suspend"))
        if full or held and not account_disabled(prose):
            # The report's words for people (or the note beside its Status)
            # say the mailbox is full or held, its diagnostic that the
            # address is gone: in doubt, soft.
            cause, sure = Cause.SOFT, False
        elif held:
            sure = False  # the account disabled, in the report's words: gone, in doubt
    return Reading(cause, name, status, code, rule, seen, sure, answer)


_ADDRESS = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
_NOTE = re.compile(r"\bstatus:\s*[245]\.\d{1,3}\.\d{1,3}\s*\(([^)\n]{1,200})\)",
                   re.IGNORECASE)
# Where a report's words for people end and its DSN fields begin.
_PROSE_END = re.compile(r"^\s*(?:reporting-mta|final-recipient|original-recipient|action):",
                        re.MULTILINE)


def _sure(cause: Cause, rule: str, status: str, code: str) -> bool:
    """Whether a reading is sure: a provider's own label or phrase, a specific
    status code, or a phrase with a reply code of the same class; a phrase
    alone, a code that says only "failed" (5.0.0) or nothing is doubtful."""
    if rule in (BY_PROVIDER, BY_COMMAND):
        return True
    if rule == BY_STATUS:
        return not status.endswith(".0.0")
    if rule == BY_REPLY:
        return code[:1] in ("4", "5") and (cause is not Cause.GONE or code[:1] == "5")
    return False


def smtp_reason(code: int, enhanced: str = "", text: str = "", recipient: str = "") -> Reading:
    """The reading of an SMTP reply at hand-over (``550``, ``5.1.1``, ``User unknown``)
    to ``recipient`` (its domain may name the provider).

    A 4xx reply is a delay whatever it says (the recipient is deferred and
    tried again); its reason name still tells what was said. A 5xx reply is
    read as a report's failed recipient would be.
    """
    code_text = str(code)
    status = _status(enhanced) or _status(text[:200])
    if code_text.startswith("4"):
        if status.startswith("5."):
            status = ""  # a 4xx reply with a 5.x.x code: the reply code decides
        name = reason_name(status, text, "delayed")
        return Reading(Cause.DELAY, name, status, code_text)
    if status.startswith("4."):
        status = ""
    return read(status, text, "failed", code_text, recipient=recipient)


def _status(text: str) -> str:
    found = STATUS.search(text or "")
    return ".".join(found.groups()) if found else ""


def _reply(text: str) -> str:
    found = REPLY.search(text or "")
    return found.group(1) if found else ""
