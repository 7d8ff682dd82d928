"""What the big mailbox providers mean by their own words
(docs/design/bounces.md#bounces-evidence).

Google, Microsoft, Yahoo, AOL, Apple, GoDaddy, Orange, Facebook, Tencent and
a few more answer with phrasings and error labels of their own
(``LPN007_416``, ``IB607``, ``RCP-P2``) that the general patterns of
:mod:`.patterns` misread: Orange's "Invalid recipient" comes after the
letter's text, GoDaddy's block-list refusal follows a relay's own "User
unknown" line. When a refusal comes from one of them (a host of theirs in the
report, or the recipient's domain) :func:`reason` reads it as Sisimai's
``rhost`` module for that provider does. It only reads; :mod:`.reasons`
decides what a reading means.

The tables live in ``remote.json`` beside this module, written by
tools/sisimai/make_remote.py from go-sisimai (https://github.com/sisimai/go-sisimai),
``rhost/lib.go`` and ``rhost/for-*.go``; the commit is in the file.

Copyright (C) 2014-2025 azumakuniyuki and sisimai development team, All rights
reserved. Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:
1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.
2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND
ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED
WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR
ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES
(INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES;
LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON
ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache

# Where each provider writes its error label, and what part of it its table knows.
_LABELS: dict[str, re.Pattern[str]] = {
    "facebook": re.compile(r"\b([A-Z]{3}-[PT]\d)\b"),
    "godaddy": re.compile(r"\b(IB\d{3})\b"),
    "franceptt": re.compile(r"\b(?:LPN|OFR|OUK)\w*?[_-](\d{3})\b", re.IGNORECASE),
    "cox": re.compile(r"AUP#(\w+)"),
    "iua": re.compile(r"\.i\.ua/err/(\d+)/"),
    "spectrum": re.compile(r"AUP#\D{0,10}(\d{4})"),
}
# Reasons tried last: when a provider's words also say something about the
# sender or the mailbox, that reading wins (a false "gone" deletes a subscriber).
_GONE_LAST = ("userunknown", "hostunknown", "hasmoved", "notaccept")


@lru_cache(maxsize=1)
def _table() -> dict[str, dict]:
    with open(os.path.join(os.path.dirname(__file__), "remote.json"), encoding="utf-8") as file:
        return json.load(file)["providers"]


@lru_cache(maxsize=1)
def _hosts() -> list[tuple[str, re.Pattern[str]]]:
    """Each provider with one pattern for all its host names (a name ends there)."""
    return [(name, re.compile("(?:" + "|".join(re.escape(host) for host in entry["hosts"])
                              + r")(?![a-z0-9-])")) for name, entry in _table().items()
            if entry["hosts"]]


def providers(text: str, domain: str = "") -> list[str]:
    """The providers a refusal may come from, surest first: those whose host
    is named in ``text`` (Remote-MTA, "host mx.example said", the reporting
    host), then those whose host names end with the recipient's ``domain``
    (Google relaying to KDDI names both)."""
    lower = text.lower()
    domain = domain.lower().strip(".")
    found = [name for name, hosts in _hosts() if hosts.search(lower)]
    if domain:
        found += [name for name, entry in _table().items() if name not in found and any(
            host.endswith("." + domain) or host == domain for host in entry["hosts"])]
    return found


def reason(name: str, diagnostic: str, status: str = "", said: str = "") -> tuple[str, str]:
    """(Sisimai's reason, the label or phrase that said it) for a refusal by
    provider ``name`` with the enhanced ``status`` code, answering the SMTP
    command ``said``; ("", "") when its tables say nothing."""
    entry = _table().get(name)
    if not entry or not diagnostic:
        return "", ""
    if name == "nttdocomo" and status == "5.2.0":
        return "filtered", "5.2.0"
    label = _LABELS.get(name)
    if label is not None:
        for found in label.finditer(diagnostic):
            key = found.group(1)
            if name == "spectrum":
                number = int(key)
                for span, why in entry["codes"].items():
                    low, high = (int(x) for x in span.split("-"))
                    if low <= number <= high and why:
                        return why, f"AUP#{key}"
            elif name == "franceptt":
                why = entry["codes"].get(key, "")
                if why:
                    return why, found.group(0)
            elif entry["codes"].get(key):
                return entry["codes"][key], key
    text = " ".join(diagnostic.lower().split())
    phrases = entry["phrases"]
    for why in sorted(phrases, key=lambda r: (r in _GONE_LAST, r)):
        for phrase in phrases[why]:
            code = ""
            if isinstance(phrase, list):  # [status code, phrase]: the phrase with that code only
                code, phrase = phrase
            if phrase.strip() and phrase in text and _same_status(code, status):
                return why, phrase.strip()
    if name == "nttdocomo" and status == "5.0.0" and said in ("RCPT", "DATA"):
        # Docomo says only 5.0.0: refused at RCPT the address is unknown, after
        # the letter's text it is a refusal of the letter (Sisimai's reading).
        return ("userunknown" if said == "RCPT" else "rejected"), f"5.0.0 after {said}"
    return "", ""


def _same_status(wanted: str, status: str) -> bool:
    """Whether ``status`` is the code a row asks for ("" asks none; "5.7.606-649" a range)."""
    if not wanted:
        return True
    if "-" in wanted:
        prefix, _, span = wanted.rpartition(".")
        low, _, high = span.partition("-")
        head, _, last = status.rpartition(".")
        return head + "." == prefix + "." and last.isdigit() and int(low) <= int(last) <= int(high)
    return status == wanted


_TITLES = {"aol": "AOL", "nttdocomo": "NTT Docomo", "franceptt": "Orange", "godaddy": "GoDaddy", "gsuite": "Google Workspace",
           "iua": "i.ua", "kddi": "KDDI", "messagelabs": "MessageLabs",
           "yahooinc": "Yahoo", "facebook": "Facebook"}


def title(name: str) -> str:
    """The provider's name as people write it (``Google``, ``Orange``)."""
    return _TITLES.get(name, name.capitalize())
