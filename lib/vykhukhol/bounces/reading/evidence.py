"""Whether the codes and the words of a refusal prove the address gone
(docs/design/bounces.md#bounces-rules): the enhanced status code first, then
the reply code, then the words; a refusal that speaks of content, policy or
reputation is never read as gone by its words, and a 4xx never at all."""

from __future__ import annotations

import re

from vykhukhol.bounces.reading.matching import (
    BY_PHRASE,
    BY_PROVIDER,
    BY_REPLY,
    BY_STATUS,
    CONTINUED,
    MAX_TEXT,
    aligned,
    match,
)

# The enhanced codes that say the address is gone (docs/design/bounces.md#bounces-rules):
# no such mailbox, no such domain, the account disabled.
GONE_CODES = {"5.1.0": "userunknown", "5.1.1": "userunknown", "5.1.3": "userunknown",
              "5.1.10": "userunknown", "5.1.2": "hostunknown", "5.4.4": "hostunknown",
              "5.2.1": "suspend", "5.7.13": "suspend"}
# "Bad destination mailbox" (5.1.1, and Microsoft's 5.1.10 "recipient not
# found"), "bad destination system" (5.1.2): gone whatever the words say, when
# none of them says the refusal was about something else.
BAD_DESTINATION = ("5.1.1", "5.1.10", "5.1.2")
# Sentences single mail systems write about a recipient that does not exist,
# whatever the command (Sisimai's lhost readers: Domino, Notes, IMail,
# Exchange 2003, InterScan MSS, Verizon, Outlook).
GONE_PHRASES = (
    "not listed in domino directory", "not listed in public name & address book",
    "no se encuentra en el directorio de domino", "non répertorié dans l'annuaire domino",
    "domino ディレクトリには見つかりません", "ディレクトリのリストにありません",
    "invalid final delivery userid", "unknown user:", "(000c05a6)", "unknown recipient",
    "please check if address is correct", "no valid recipients for this mm",
    "because the address couldn't be found",
    "no mailbox here by that name", "not a valid user", "addressee unknown",
    # "no such user" as one word: a local delivery agent's code ("err.nosuchuser")
    "nosuchuser",
)
GONE_PAIRS = (("interscan messaging security suite", "unable to deliver"),)
# Old directory servers' words for a name they do not hold (phquery,
# LLNL's, Domino's and others' directories): gone, in doubt.
DIRECTORY_PHRASES = ("no matches to nameserver query", "not in the directory",
                     "does not have a final email delivery point")
# RFC 5321's words for a 550, "mailbox unavailable", with the address between
# them or not (Hotmail's "Requested action not taken: mailbox unavailable" is
# Sisimai's own); not when it speaks of room ("not enough free space").
_UNAVAILABLE = re.compile(r"\bmailbox (?:<?[^\s<>@]{1,64}@[\w.-]{1,255}>? )?unavailable\b")
_NO_ROOM = ("space", "storage", "full")
# A recipient domain the DNS does not know, the domain named between the words
# (Microsoft 365's 5.4.310 "DNS domain example.net does not exist"); not our
# sender's domain (not_about_recipient).
_NO_DOMAIN = re.compile(r"\bdomain <?[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})+>? does not exist")
# A domain with no mail host at all, in words Sisimai's "No MX found for
# domain" does not list ("no valid MX hosts found").
_NO_MX = re.compile(r"\bno (?:valid )?mx (?:or a )?(?:records?|hosts?) (?:found|for)\b")
# Postfix's words for a domain whose name servers answer nothing it can use
# ("Name service error for name=example.net type=MX: Malformed or unexpected
# name server reply"): from a permanent refusal, a domain no letter reaches.
# In doubt: a second letter refused so removes the address, where a name
# server broken for an hour is refused "try again", never permanently.
_BROKEN_DNS = re.compile(r"\bmalformed (?:or unexpected )?name server reply\b")
_NO_MATCH = re.compile(r"did not (?:exactly )?match (?:an?|any) [\w .-]{0,40}?(?:address|user|name)")
# Words of a dead mailbox in the languages real mail systems answer in; read
# only from a permanent refusal that speaks of no permission (Google Groups
# refuses a post in the sender's language: "le groupe … n'existe pas ou …
# pas autorisé").
FOREIGN_PHRASES = (
    # Spanish
    "no existe", "casilla ha expirado", "usuario desconocido", "destinatario desconocido",
    "inexistente",
    # French
    "n'existe pas", "n’existe pas", "adresse inconnue", "utilisateur inconnu",
    "destinataire inconnu",
    # Polish
    "nie istnieje", "mailbox not available", "konto niedostepne", "konto niedostępne",
    "nieznany użytkownik", "nieznany adresat",
    # German
    "existiert nicht", "empfänger unbekannt", "benutzer unbekannt", "adresse unbekannt",
    "unbekannter empfänger", "unbekannter benutzer",
    # Portuguese
    "não existe", "nao existe", "usuário desconhecido", "destinatário desconhecido",
    # Italian
    "non esiste", "utente sconosciuto", "destinatario sconosciuto", "inesistente",
    # Russian
    "нет такого пользователя", "не существует", "пользователь не найден",
    "неизвестный пользователь",
)
# Its words of permission, not of the group: Exchange heads every report
# "… recipients or groups" ("destinatarios o grupos") in the same languages.
_GROUP_WORDS = ("autoris", "autoriz", "permission", "permiso", "permissão", "berechtig",
                "uprawnie", "разреш", "прав на")
# Words that say a 5.1.1 was about our envelope sender or a relay, not the
# recipient; and Sisimai's reasons whose words, beside a 5.1.1, say the same
# ("550 RCPT TO:<a@b> max message size exceeded" under Status: 5.1.1).
_NOT_RECIPIENT = ("sender", "relaying", "relay access", "relay not", "relay denied")
_OTHER_REASONS = ("mesgtoobig", "exceedlimit", "mailboxfull", "norelaying", "blocked",
                  "spamdetected", "virusdetected", "policyviolation", "badreputation",
                  "authfailure", "requireptr", "toomanyconn", "speeding")
# Words that say an account is disabled or closed (Sisimai reads most as suspend, soft).
_DISABLED = ("account disabled", "account is disabled", "account has been disabled",
             "mailbox disabled", "mailbox is disabled", "account is deactivated",
             "account has been deactivated", "account closed", "account has been closed",
             "disabled or discontinued", "is a deactivated mailbox", "disabled recipient",
             "account that you tried to reach is disabled",
             # Google's words for an account nobody has used for long (it deletes
             # those): refused for good while it stays so
             "account that you tried to reach is inactive", "account is inactive",
             "mailbox is inactive")
# Words that say a refusal was about the letter, our host or a policy, whatever
# else it says: a refusal with these is never read as "address gone" by its words.
_CONTENT = ("spam", "content", "policy", "policies", "reputation", "blocked", "blacklist",
            "blocklist", "block list", "rbl", "virus", "malware", "phish", "dmarc", "spf",
            "dkim", "junk", "bulk mail", "suspicious", "abuse", "rejected due to", "not allowed",
            "temporar", "over quota", "quota", "mailbox full", "mailbox is full", "too many")


def _plain(text: str) -> str:
    """The words of ``text`` lower-cased on one line, without "550-5.1.1" continuations."""
    return " ".join(CONTINUED.sub(" ", text[:MAX_TEXT].lower()).split())


def speaks_of_content(text: str) -> bool:
    lower = " ".join(text[:MAX_TEXT].lower().split())
    return any(word in lower for word in _CONTENT)


def not_about_recipient(text: str) -> bool:
    """Whether ``text`` says the refusal was about our sender, a relay or the
    letter (its size, a quota, a block list …) rather than a dead mailbox."""
    lower = _plain(text)
    return any(word in lower for word in _NOT_RECIPIENT) or any(
        match(name, lower) for name in _OTHER_REASONS)


def dead_words(text: str) -> tuple[str, str]:
    """(Sisimai's reason name, the words) where ``text`` says the mailbox or the
    domain does not exist or the account is disabled; ("", "") when it does not."""
    lower = _plain(text)
    for name in ("userunknown", "hostunknown"):
        seen = match(name, lower)
        if seen:
            return name, seen
    seen = next((phrase for phrase in GONE_PHRASES if phrase in lower), "") or next(
        (" … ".join(pair) for pair in GONE_PAIRS if aligned(lower, pair)), "")
    if seen:
        return "userunknown", seen
    found = _UNAVAILABLE.search(lower)
    if found and not any(word in lower for word in _NO_ROOM):
        return "userunknown", found.group(0)
    found = _NO_DOMAIN.search(lower)
    if found and not not_about_recipient(lower):
        return "hostunknown", found.group(0)
    found = _NO_MX.search(lower) or _BROKEN_DNS.search(lower)
    if found:
        return "hostunknown", found.group(0)
    found = _NO_MATCH.search(lower)
    seen = next((phrase for phrase in DIRECTORY_PHRASES if phrase in lower), "") or (
        found.group(0) if found else "")
    if seen:
        return "userunknown", seen
    seen = account_disabled(lower)
    return ("suspend", seen) if seen else ("", "")


def foreign_dead_words(text: str) -> str:
    """The words of ``text`` that say, in a language other than English, that the
    mailbox does not exist; "" for none, or when it speaks of a permission (to post
    to a group)."""
    lower = _plain(text)
    if any(word in lower for word in _GROUP_WORDS):
        return ""
    return next((phrase for phrase in FOREIGN_PHRASES if phrase in lower), "")


def account_disabled(text: str) -> str:
    """The words of ``text`` that say the account is disabled or closed, "" for none."""
    lower = _plain(text)
    return next((words for words in _DISABLED if words in lower), "")


def gone_by_evidence(status: str, code: str, text: str,
                     rule: str) -> tuple[str, str, str, bool] | None:
    """(reason, rule, seen, sure) when the codes and the words prove the address
    gone, else None (docs/design/bounces.md#bounces-rules).

    A 4xx or a 4.x.x code is never gone, nor words that speak of content,
    policy or reputation. A 5.x.x code that says no such mailbox or domain
    (5.1.0, 5.1.1, 5.1.3, 5.1.2, 5.4.4) with words that say the same is gone
    and sure, at any stage of the conversation. Any other permanent refusal —
    a 5xx or 5.x.x code, or no code at all — whose words say the mailbox or
    the domain does not exist, or the account is disabled, is gone in doubt,
    whenever it was said (after the letter's text too, which Sisimai calls
    filtered): one such letter may be a server's odd answer, a second one
    removes the address. A provider's own label for a specific code (Facebook's
    5.1.1 "recipient preferences") is not overruled.
    """
    if status.startswith("4.") or code.startswith("4"):
        return None
    if status[:1] not in ("", "5") or code[:1] not in ("", "5"):
        return None
    lower = _plain(text)
    if not lower or speaks_of_content(lower):
        return None
    by_code = GONE_CODES.get(status, "")
    if by_code in ("userunknown", "hostunknown"):
        if rule == BY_PROVIDER:
            return None
        if status in BAD_DESTINATION and not not_about_recipient(lower):
            return by_code, BY_STATUS, status, True
        seen = match(by_code, lower) or match("hostunknown", lower)
        if seen:
            return by_code, BY_STATUS, status, True
    name, seen = dead_words(lower)
    if not name and "4" not in (status[:1], code[:1]):
        seen = foreign_dead_words(lower)
        name = "userunknown" if seen else ""
    if not name:
        return None
    if by_code:
        return name, BY_STATUS, f"{status} {seen}", False
    return name, BY_REPLY if code else BY_PHRASE, seen, False
