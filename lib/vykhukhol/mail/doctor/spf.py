"""SPF (RFC 7208) as the doctor reads it: the one record of a domain, its
syntax, the DNS look-ups it costs, and whether it lets one address send.

Counted as RFC 7208 section 4.6.4 counts: each ``include``, ``a``, ``mx``,
``ptr``, ``exists`` and ``redirect`` is a look-up, and so are those of the
records they include; more than :data:`MAX_LOOKUPS` and receivers answer
"permerror", as if there were no record.

Deliberately simple where a full evaluator would not change the advice:
macros (``%{i}``) are not expanded (a term with one is neither a match nor
an error), ``ptr`` and ``exists`` never match, and void look-ups are not
counted.
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple

from vykhukhol.mail.doctor.lookup import Lookup

MAX_LOOKUPS = 10  # RFC 7208 4.6.4
_MECHANISM = re.compile(
    r"(?P<q>[+\-~?]?)(?P<name>all|include|a|mx|ptr|ip4|ip6|exists)"
    r"(?::(?P<arg>[^\s/]+))?(?P<cidr>(?:/\d{1,3})?(?://\d{1,3})?)$", re.I)
_MODIFIER = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_.-]*)=(?P<arg>\S*)$")
_COUNTED = ("include", "a", "mx", "ptr", "exists")
_NEEDS_ARG = ("include", "ip4", "ip6", "exists")
_CIDRS = re.compile(r"(?:/(\d+))?(?://(\d+))?$")  # a/mx's ip4-cidr and ip6-cidr
RESULTS = {"+": "pass", "-": "fail", "~": "softfail", "?": "neutral"}


class SpfError(Exception):
    """What makes receivers answer "permerror" (a sentence in English; the
    doctor says it in the page's language by its kind)."""

    def __init__(self, kind: str, domain: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {domain} {detail}")
        self.kind, self.domain, self.detail = kind, domain, detail


class SpfTerm(NamedTuple):
    qualifier: str  # one of RESULTS' keys
    name: str       # all, include, a, mx, ptr, ip4, ip6, exists; or redirect
    arg: str
    cidr: str


def record_of(lookup: Lookup, domain: str) -> str | None:
    """The SPF record of ``domain``; None when it has none. Raises
    :class:`SpfError` ("several") when it has more than one."""
    found = [text for text in lookup.txt(domain)
             if text.lower() == "v=spf1" or text.lower().startswith("v=spf1 ")]
    if len(found) > 1:
        raise SpfError("several", domain, str(len(found)))
    return found[0] if found else None


def parse(domain: str, record: str) -> list[SpfTerm]:
    """The terms of ``record`` in order, ``redirect`` last. Raises :class:`SpfError` ("syntax")."""
    terms: list[SpfTerm] = []
    redirect = None
    for word in record.split()[1:]:
        mech = _MECHANISM.match(word)
        if mech:
            name = mech["name"].lower()
            arg = mech["arg"] or ""
            if name in _NEEDS_ARG and not arg or name == "all" and (arg or mech["cidr"]):
                raise SpfError("syntax", domain, word)
            if name in ("ip4", "ip6"):
                try:
                    net = ipaddress.ip_network(arg + mech["cidr"], strict=False)
                except ValueError:
                    raise SpfError("syntax", domain, word) from None
                if net.version != int(name[-1]):
                    raise SpfError("syntax", domain, word)
            terms.append(SpfTerm(mech["q"] or "+", name, arg, mech["cidr"]))
            continue
        mod = _MODIFIER.match(word)
        if not mod:
            raise SpfError("syntax", domain, word)
        if mod["name"].lower() == "redirect":
            if redirect is not None or not mod["arg"]:
                raise SpfError("syntax", domain, word)
            redirect = SpfTerm("+", "redirect", mod["arg"], "")
    return terms + ([redirect] if redirect else [])


class Reading(NamedTuple):
    """What :func:`read` found: the record, its look-ups, and the relay's result."""

    record: str
    lookups: int
    relay: str | None  # pass, fail, softfail, neutral, none; None when no address was asked


def read(lookup: Lookup, domain: str, relay_ip: str = "") -> Reading | None:
    """The SPF of ``domain``; None when it has no record. Raises
    :class:`SpfError` (permerror: several records, bad syntax, an include
    without a record, too many look-ups) or ``Unanswered``."""
    record = record_of(lookup, domain)
    if record is None:
        return None
    count = [0]
    ip = ipaddress.ip_address(relay_ip) if relay_ip else None
    result = _walk(lookup, domain, record, ip, count, depth=0)
    return Reading(record, count[0], result if ip is not None else None)


def _walk(lookup: Lookup, domain: str, record: str, ip, count: list[int], depth: int) -> str:
    """Every term of ``record`` counted (an include walked in full), and the
    result for ``ip`` (the first term that matches decides, as receivers do)."""
    decided: str | None = None
    for term in parse(domain, record):
        if term.name in _COUNTED or term.name == "redirect":
            count[0] += 1
            if count[0] > MAX_LOOKUPS:
                raise SpfError("lookups", domain, str(count[0]))
        target = term.arg or domain
        if term.name in ("include", "redirect"):
            if "%" in target:
                continue
            inner = record_of(lookup, target)
            if inner is None or depth > MAX_LOOKUPS:
                raise SpfError("include", target)
            inner_result = _walk(lookup, target, inner, ip, count, depth + 1)
            if decided is None and ip is not None:
                if term.name == "redirect":
                    decided = inner_result
                elif inner_result == "pass":
                    decided = RESULTS[term.qualifier]
            continue
        if decided is not None or ip is None:
            continue
        if _matches(lookup, term, target, ip):
            decided = RESULTS[term.qualifier]
    return decided or "neutral"


def _matches(lookup: Lookup, term: SpfTerm, target: str, ip) -> bool:
    if term.name == "all":
        return True
    if term.name in ("ip4", "ip6"):
        return ip in ipaddress.ip_network(term.arg + term.cidr, strict=False)
    if "%" in target or term.name in ("ptr", "exists"):
        return False  # see the module's docstring
    cidrs = _CIDRS.match(term.cidr)  # parse() let through only what it matches
    cidr4, cidr6 = cidrs.groups() if cidrs else (None, None)
    hosts = [target] if term.name == "a" else [host for _, host in lookup.mx(target)]
    for host in hosts:
        for address in lookup.addresses(host):
            bits = cidr4 if ":" not in address else cidr6
            net = ipaddress.ip_network(f"{address}/{bits}" if bits else address, strict=False)
            if ip in net:
                return True
    return False
