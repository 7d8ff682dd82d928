"""Whether the codes and the words of a refusal prove the address gone
(docs/design/bounces.md#bounces-rules): the enhanced status code first, then
the reply code, then the words; a refusal that speaks of content, policy or
reputation is never read as gone by its words, and a 4xx never at all."""

from __future__ import annotations

from vykhukhol.bounces.reading.matching import BY_PROVIDER, BY_STATUS, CONTINUED, MAX_TEXT, match

# The enhanced codes that say the address is gone (docs/design/bounces.md#bounces-rules):
# no such mailbox, no such domain, the account disabled.
GONE_CODES = {"5.1.0": "userunknown", "5.1.1": "userunknown", "5.1.3": "userunknown",
              "5.1.2": "hostunknown", "5.4.4": "hostunknown", "5.2.1": "suspend"}
# Words that say an account is closed for good (Sisimai reads most as suspend, soft).
_DISABLED = ("account disabled", "account is disabled", "account has been disabled",
             "mailbox disabled", "mailbox is disabled", "account is deactivated",
             "account has been deactivated", "account closed", "account has been closed")
# Of those, the words that say so even with no code beside them: "disabled" alone
# may be for now (Sisimai's suspend), "discontinued" is not.
_CLOSED = ("disabled or discontinued", "is a deactivated mailbox")
# Words that say a refusal was about the letter, our host or a policy, whatever
# else it says: a refusal with these is never read as "address gone" by its words.
_CONTENT = ("spam", "content", "policy", "policies", "reputation", "blocked", "blacklist",
            "blocklist", "block list", "rbl", "virus", "malware", "phish", "dmarc", "spf",
            "dkim", "junk", "bulk mail", "suspicious", "abuse", "rejected due to", "not allowed",
            "temporar", "over quota", "quota", "mailbox full", "mailbox is full", "too many")


def closed_for_good(text: str) -> str:
    """The words that say the account is closed for good ("This account has
    been disabled or discontinued"), "" when none do or the words also say
    it is only for now, or speak of content or policy."""
    lower = " ".join(CONTINUED.sub(" ", text[:MAX_TEXT].lower()).split())
    if not lower or speaks_of_content(lower):
        return ""
    return next((words for words in _CLOSED if words in lower), "")


def speaks_of_content(text: str) -> bool:
    lower = " ".join(text[:MAX_TEXT].lower().split())
    return any(word in lower for word in _CONTENT)


def gone_by_evidence(status: str, code: str, text: str, rule: str) -> tuple[str, str, str] | None:
    """(reason, rule, seen) when the codes and the words prove the address gone, else None.

    A 5.x.x code that says no such mailbox or domain (5.1.0, 5.1.1, 5.1.3,
    5.1.2, 5.4.4) or the account disabled (5.2.1), with words that say the
    same, is gone at any stage of the conversation, unless the words also
    speak of content, policy or reputation. Without such a code Sisimai's
    reading of the words and the stage stands; a 4xx is never gone
    (:func:`read` holds that), nor a provider's own label overruled.
    """
    if rule == BY_PROVIDER or status.startswith("4.") or code.startswith("4"):
        return None
    if not (status.startswith("5.") or code.startswith("5")):
        return None
    lower = " ".join(CONTINUED.sub(" ", text[:MAX_TEXT].lower()).split())
    if not lower or speaks_of_content(lower):
        return None
    by_code = GONE_CODES.get(status, "")
    if by_code == "suspend":
        said = next((words for words in _DISABLED if words in lower), "")
    elif by_code:
        said = match(by_code, lower) or match("hostunknown", lower)
    else:
        return None  # no code that says so: Sisimai's reading of the stage stands
    return (by_code, BY_STATUS, status) if said else None
