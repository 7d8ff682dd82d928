"""Where a bounce report says which address failed and why.

flufl.bounce finds the failed addresses of the formats it knows, but not the
reason. This module reads, for each failed address, the words that explain
it: in an RFC 3464 report the recipient's ``Action``, ``Status`` and
``Diagnostic-Code``; in a report written for people (old sendmail, qmail,
DragonFly, Lotus Notes, Amazon WorkMail, Japanese carriers …) the lines
around the address, up to where the returned letter begins. It also finds the
addresses such reports name when flufl.bounce misses the format.

Every address it returns passes the project's address check
(:func:`vykhukhol.addresses.check_email`): a JSON fragment, a pipe command or
a host name is never named. It is a pure function of the parsed message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message

from vykhukhol.addresses import check_email, reserved_address
from vykhukhol.errors import BadInput

MAX_TEXT = 64_000   # characters of a report's own text read for addresses and reasons
MAX_FAILED = 50     # addresses one report may name; more is a list, not a bounce

_CANDIDATE = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9.-]{1,253}[A-Za-z0-9]")
# Where a report for people stops and the returned letter begins. Every
# repeat is bounded: a line of 60,000 dashes must not cost seconds.
_RETURNED = re.compile(
    r"^[ \t]{0,20}(?:-{2,80}[^\n]{0,80}?(?:original message|returned message|unsent message|"
    r"copy of the message|message headers|below this line|original mail|headers of your "
    r"message)|(?:received|return-path|message-id|x-[a-z-]{1,60}):|-{2,80} ?(?:the )?headers? of)",
    re.IGNORECASE | re.MULTILINE)
# Words that mean "this is only a warning", in the subject or the first lines.
_WARNING = re.compile(r"\b(?:delayed|delay(?:ed)? notification|warning|will (?:keep )?try|"
                      r"still (?:be )?trying|not yet been delivered|will retry)\b", re.IGNORECASE)
# A line that quotes the letter's sender ("MAIL FROM: a@b", "From: a@b") or
# names whom to ask for help ("please contact <support@…>").
_SENDER_LINE = re.compile(r"^\s*(?:mail from|from|sender|reply-to|return-path|envelope-from)\s*:|"
                          r"(?<![\w.+-])contact(?![\w@.-])|send mail to|ご連絡|お問い合わせ|できない場合は",
                          re.IGNORECASE)
# Who writes reports: never the failed recipient.
_ROBOTS = re.compile(r"^(?:mailer-daemon|post_?master|mail-daemon|mailer|daemon|root|"
                     r"no-?reply|bounce[s]?|mdaemon|nobody)(?:[+@]|$)", re.IGNORECASE)


@dataclass
class Failed:
    """One address a report says could not be delivered, with what it says about it."""

    address: str
    action: str = ""      # the DSN's Action ("failed", "delayed"), "" in a report for people
    status: str = ""      # the DSN's Status or a code in the text
    text: str = ""        # Diagnostic-Code, or the words near the address
    fields: str = ""      # the DSN's whole block for this recipient (Status comments, X- fields)


def checked(address: str) -> str | None:
    """``address`` as the project writes it (lower case), or None when it is not one."""
    address = address.strip().strip("<>").strip().rstrip(".")
    if not address or address.startswith(("|", "/", "-")) or '"' in address:
        return None
    try:
        return check_email(address).lower()
    except BadInput:
        # One in a domain kept for tests or a local network (.invalid, .test,
        # .local): a report of its failure is a report all the same, which the
        # intake then finds on no list and says so.
        found = reserved_address(address)
        return found.lower() if found else None
    except Exception:  # noqa: BLE001 - email-validator on a string no mail system would write
        return None


def delivery_status(parts: list[Message]) -> list[Failed]:
    """The recipients of the RFC 3464 ``message/delivery-status`` parts."""
    found: list[Failed] = []
    reports = [part for part in parts if part.get_content_type() == "message/delivery-status"]
    # A report inside a returned letter (a bounce forwarded in the letter that
    # bounced) is read only when the message has none of its own.
    own = [part for part in reports if not _inside_returned(parts[0], part)]
    for part in own or reports:
        blocks = _blocks(part)
        # The first block is about the message; a report that runs its fields
        # together (AOL) has one block that names the recipient too.
        for block in blocks[1:] or [b for b in blocks if b.get("final-recipient")]:
            recipient = block.get("final-recipient") or block.get("original-recipient") or ""
            address = checked(str(recipient).split(";", 1)[-1])
            if address is None:
                continue
            found.append(Failed(address, str(block.get("action") or "").strip().lower(),
                                str(block.get("status") or "").strip(),
                                _unfold(block.get("diagnostic-code") or ""),
                                _unfold(block.as_string()[:4000])))
    return found


_SES_FIELD = re.compile(r'"(emailAddress|action|status|diagnosticCode)"\s*:\s*"((?:[^"\\]|\\.){0,1000})"')


def json_failures(text: str) -> list[Failed]:
    """The bounced recipients of an Amazon SES notification mailed through SNS
    (JSON, often wrapped by the mail system at 1000 characters)."""
    text = re.sub(r"!?\r?\n ", "", text)
    if '\\"bouncedRecipients\\"' in text:  # the SES message inside an SNS envelope
        text = text.replace('\\"', '"')
    if '"bouncedRecipients"' not in text:
        return []
    found = []
    # Each recipient is one {...} without braces inside: split, never backtrack.
    for chunk in text[text.index('"bouncedRecipients"'):].split("{"):
        block = chunk.split("}", 1)[0][:4000]
        if '"emailAddress"' not in block:
            continue
        fields = dict(_SES_FIELD.findall(block))
        address = checked(fields.get("emailAddress", ""))
        if address is not None:
            found.append(Failed(address, fields.get("action", "failed").lower(),
                                fields.get("status", ""), fields.get("diagnosticCode", "")))
    return found


def body_bytes(part: Message) -> bytes:
    """A part's body undone from its transfer encoding; empty for a multipart."""
    raw = part.get_payload(decode=True)
    return raw if isinstance(raw, bytes) else b""


def _blocks(part: Message) -> list[Message]:
    payload = part.get_payload()
    if isinstance(payload, list):
        return [p for p in payload if isinstance(p, Message)]
    import email
    from email import policy

    # A report sent as text (quoted-printable, or a single block): split at blank lines.
    raw = body_bytes(part)
    text = raw[:MAX_TEXT].decode("utf-8", "replace").replace("\r\n", "\n")
    return [email.message_from_string(chunk.strip() + "\n", policy=policy.compat32)
            for chunk in re.split(r"\n\s*\n", text) if chunk.strip()]


_TEXT_FIELDS = re.compile(r"^[ \t]*(?:final|original)-recipient:", re.IGNORECASE | re.MULTILINE)


def text_fields(text: str) -> list[Failed]:
    """The recipients of DSN fields a report wrote among its words for people
    (Amazon WorkMail's "Technical report:"), where it has no delivery-status part."""
    import email
    from email import policy

    found: list[Failed] = []
    for chunk in re.split(r"\n[ \t]*\n", text[:MAX_TEXT]):
        start = _TEXT_FIELDS.search(chunk)
        if start is None:
            continue
        lines = chunk[chunk.rfind("\n", 0, start.start()) + 1:].splitlines()
        block = email.message_from_string(
            "\n".join(line.strip() if ":" in line.split(" ", 1)[0] else " " + line.strip()
                      for line in lines) + "\n", policy=policy.compat32)
        recipient = block.get("final-recipient") or block.get("original-recipient") or ""
        address = checked(str(recipient).split(";", 1)[-1])
        if address is not None and all(f.address != address for f in found):
            found.append(Failed(address, str(block.get("action") or "").strip().lower(),
                                str(block.get("status") or "").strip(),
                                _unfold(block.get("diagnostic-code") or ""), _unfold(chunk[:4000])))
    return found


def _unfold(value: object) -> str:
    return " ".join(str(value).split())


def only_as_contact(text: str, address: str) -> bool:
    """Whether ``text`` names ``address`` only as someone to ask for help."""
    lines = [line for line in text.lower().splitlines() if address in line]
    return bool(lines) and all(_SENDER_LINE.search(line) for line in lines)


def report_text(message: Message, parts: list[Message]) -> str:
    """The words a report wrote for people: its text parts, before the returned letter."""
    texts: list[str] = []
    for part in parts:
        if part.get_content_maintype() == "multipart":
            payload = part.get_payload()
            if isinstance(payload, str):  # its boundary is broken: read it as text
                texts.append(payload[:MAX_TEXT])
            continue
        if part is not message and _inside_returned(message, part):
            continue
        # "text/plain\n charset=…" (a parameter without its ";") is still text/plain.
        kind = part.get_content_type().split(None, 1)[0]
        if kind not in ("text/plain", "text/html", "message/delivery-status") \
                and not (part is message and kind.startswith("text/")):
            continue
        texts.append(_decoded(part, html=kind == "text/html"))
        if sum(map(len, texts)) > MAX_TEXT:
            break
    text = "\n".join(texts)[:MAX_TEXT]
    cut = _RETURNED.search(text, 1)
    for _ in range(20):
        # Headers the report quotes in its own words ("… a message you sent with
        # the following header fields:", PMDF) are not the returned letter.
        if cut is None or text[cut.start()] not in " \t" \
                or not text[:cut.start()].rstrip().endswith(":"):
            break
        cut = _RETURNED.search(text, text.find("\n\n", cut.end()) + 1 or len(text))
    return text[:cut.start()] if cut else text


def _inside_returned(message: Message, wanted: Message) -> bool:
    """Whether ``wanted`` is a part of a returned letter (under a message/rfc822)."""
    def walk(node: Message, inside: bool) -> bool | None:
        if node is wanted:
            return inside
        payload = node.get_payload()
        if isinstance(payload, list):
            below = inside or node.get_content_type() == "message/rfc822"
            for child in payload:
                if isinstance(child, Message):
                    found = walk(child, below)
                    if found is not None:
                        return found
        return None
    return bool(walk(message, False))


def _decoded(part: Message, html: bool = False) -> str:
    raw = part.get_payload(decode=True)
    if not isinstance(raw, bytes):
        payload = part.get_payload()
        return "\n".join(str(p) for p in payload) if isinstance(payload, list) else str(payload)
    charset = part.get_content_charset() or "utf-8"
    if "2022" in charset and b"\x1b" not in raw[:MAX_TEXT]:
        charset = "utf-8"
    try:
        text = raw[:MAX_TEXT * 2].decode(charset, "replace")
    except LookupError:  # a charset Python does not know
        text = raw[:MAX_TEXT * 2].decode("utf-8", "replace")
    if html:
        import html as htmllib

        text = htmllib.unescape(re.sub(r"<[^>]{0,2000}>", " ", text))
    return text


def text_failures(text: str, ours: set[str]) -> list[Failed]:
    """The addresses a report for people names, each with the lines around it.

    ``ours`` are the addresses that are not the failed recipient (the report's
    own From and To, the envelope): never named.
    """
    found: dict[str, Failed] = {}
    robots: dict[str, Failed] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if "@" not in line or _SENDER_LINE.search(line):
            continue
        for candidate in _CANDIDATE.findall(line):
            address = checked(candidate)
            if address is None or address in ours or address in found or address in robots:
                continue
            if len(found) + len(robots) >= MAX_FAILED:
                break
            into = robots if _ROBOTS.match(address) else found
            into[address] = Failed(address, text=_near(lines, number))
        # Each later mention adds its lines: the transcript often says more.
        named = {address for c in _CANDIDATE.findall(line) if (address := checked(c))}
        for address in named & (set(found) | set(robots)):
            known = found.get(address) or robots[address]
            if f"\n{line.strip()}" not in f"\n{known.text}" and len(known.text) < 2000:
                known.text += "\n" + _near(lines, number)
    # A postmaster is named as the failed recipient only when nobody else is.
    return list((found or robots).values())


_FOR = re.compile(r"\bfor\s+<?([^\s<>;]{1,254}@[^\s<>;]{1,254}?)>?(?:;|\s|$)", re.IGNORECASE)


def returned_recipient(letter: Message, ours: set[str]) -> str:
    """The recipient a returned letter was carried to, for a report that names
    nobody in its own words: the "for <a@b>" of its last hop (its topmost
    Received); "" for none. Never its To:, which may be a list, or a person
    the letter was not carried to."""
    for received in letter.get_all("received") or []:
        found = _FOR.search(_unfold(received))
        if found:
            address = checked(found.group(1))
            return address if address and address not in ours else ""
    return ""


def window(text: str, address: str) -> str:
    """The lines around each mention of ``address`` in ``text`` ("" if none)."""
    lines = text.splitlines()
    return "\n".join(_near(lines, number) for number, line in enumerate(lines)
                     if address in line.lower())[:2000]


def _near(lines: list[str], number: int) -> str:
    """The address's line with a few lines after it and the one before it: where
    mail systems write why (``<a@b>: host said: 550 …``, or the reason on the next line)."""
    return "\n".join(line.strip() for line in lines[max(0, number - 1): number + 6])


def is_warning(subject: str, text: str) -> bool:
    """Whether a report for people says it is only a warning (the letter is still queued).

    A subject's "Warning:" over the words of a final refusal is no delay
    (MDaemon titles "Warning: a@b - User unknown!" a letter it will not retry)."""
    if _WARNING.search(text[:1500]):
        return True
    return bool(_WARNING.search(subject)) and not _FINAL.search(f"{subject}\n{text[:1500]}")


# Words of a final refusal: a report that says them is not a delay, whatever its subject.
_FINAL = re.compile(r"user unknown|unknown user|no such user|does not exist|permanent|fatal",
                    re.IGNORECASE)


# A header field's first line ("Received-SPF: …"), and where a header block ends.
_FIELD = re.compile(rb"[!-9;-~]{1,80}:")
_BLOCK_END = re.compile(rb"\r?\n\r?\n")


def refold(raw: bytes) -> bytes:
    """``raw`` with the folded lines of its header block indented again, where a
    copy lost their indent ("Received-SPF: pass (… designates" and, on the next
    line, "192.0.2.8 as permitted sender) …"): read as they are, the headers would
    end at the first of them, and the subject, the sender and the report's start
    be read as its text. A line counts as folded only when a field follows it in
    the same block; ``raw`` as it is when no line needs it."""
    end = _BLOCK_END.search(raw[:64_000])
    if not end:
        return raw
    lines = raw[:end.start()].split(b"\n")
    last_field = max((i for i, line in enumerate(lines) if _FIELD.match(line)), default=0)
    loose = [i for i in range(1, last_field) if lines[i].strip()
             and not _FIELD.match(lines[i]) and lines[i][:1] not in (b" ", b"\t")]
    if not loose:
        return raw
    for i in loose:
        lines[i] = b" " + lines[i]
    return b"\n".join(lines) + raw[end.start():]
