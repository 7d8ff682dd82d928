"""The doctor's checks, one function each, every sentence in the page's
language (``_`` is :func:`vykhukhol.i18n.tr` bound to it).

DMARC alignment, relaxed by organisational domain or strict, is
:mod:`vykhukhol.mail.alignment`'s rule, the one the status pages' DKIM note
follows too.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

import vykhukhol.mail.doctor.spf as spf_mod
from vykhukhol.i18n import tr
from vykhukhol.mail import dkim as signing
from vykhukhol.mail.alignment import aligned, domain_of, organisational
from vykhukhol.mail.doctor.finding import Finding, Verdict
from vykhukhol.mail.doctor.lookup import Lookup, Unanswered

OK, WARNING, WRONG, UNKNOWN = Verdict.OK, Verdict.WARNING, Verdict.WRONG, Verdict.UNKNOWN
POLICIES = ("none", "quarantine", "reject")


def all_checks(data, settings, lang: str, lookup: Lookup) -> list[Finding]:
    from vykhukhol.mail import compose  # Jinja2: only when a sender is checked

    def _(text: str, /, **values: object) -> str:
        return tr(lang, text, **values)

    fallback = compose.sender_of(None, settings)[1]
    senders = compose.senders(data, settings) or {"": fallback}
    findings: list[Finding] = []
    if not settings["mail.from_email"]:
        # No record can be proposed for a made-up domain (the site's IP, localhost): ask first
        findings.append(from_email(fallback, _))
        senders = {name: address for name, address in senders.items() if address != fallback}
    from_domains = sorted({domain_of(address) for address in senders.values()})
    bounce_of = {d: domain_of(settings["mail.bounce_address"]) or d for d in from_domains}
    for domain in sorted(set(from_domains) | set(bounce_of.values())):
        findings.append(spf(lookup, domain, settings, _))
    findings.append(dkim(data, lookup, settings, _))
    for domain in from_domains:
        findings.append(dmarc(lookup, domain, settings["mail.dkim_domain"], bounce_of[domain], _))
    for domain in sorted(set(bounce_of.values())):
        findings.append(mx(lookup, domain, _))
    findings += site(settings, _)
    return findings


def from_email(fallback: str, _: Callable[..., str]) -> Finding:
    return Finding("From", "mail.from_email", WRONG,
                   _("mail.from_email is empty: letters go out from {address}, an address of no "
                     "domain of yours, so no DNS record can be checked or proposed for it.",
                     address=fallback),
                   _("Set mail.from_email to an address of your own domain (`vykhukhol settings "
                     "set mail.from_email list@your-domain`), then run the check again."))


def _no_such_domain(check: str, domain: str, _: Callable[..., str]) -> Finding:
    """The DNS answered NXDOMAIN: no record is missing, the domain itself is."""
    return Finding(check, domain, WRONG,
                   _("The domain {domain} does not exist: the DNS knows no such name.",
                     domain=domain),
                   _("Correct the address that uses it (mail.from_email, a service's From or "
                     "mail.bounce_address), or register {domain} first.", domain=domain))


def _unknown(check: str, subject: str, exc: Unanswered, _: Callable[..., str]) -> Finding:
    where = exc.where or _("the system resolver")
    if exc.kind == "timeout":
        problem = _("Not checked: {where} did not answer within {seconds} s.", where=where,
                    seconds=exc.detail)
    elif exc.kind == "refused":
        problem = _("Not checked: {where} refused to answer.", where=where)
    elif exc.kind == "unconfigured":
        problem = _("Not checked: this computer has no resolver configured (/etc/resolv.conf).")
    else:
        problem = _("Not checked: {where} could not be asked ({detail}).", where=where,
                    detail=exc.detail)
    return Finding(check, subject, UNKNOWN, problem,
                   _("Check dns.resolver (or the host's resolver) and run the check again."))


def spf(lookup: Lookup, domain: str, settings, _: Callable[..., str]) -> Finding:
    relay = settings["mail.relay_ip"] if settings["mail.transport"] == "smtp" else ""
    try:
        reading = spf_mod.read(lookup, domain, relay)
    except Unanswered as exc:
        return _unknown("SPF", domain, exc, _)
    except spf_mod.SpfError as exc:
        return _spf_error(domain, exc, _)
    if reading is None and lookup.absent(domain):
        return _no_such_domain("SPF", domain, _)
    if reading is None:
        return Finding("SPF", domain, WRONG, _("{domain} has no SPF record.", domain=domain),
                       _("Publish one TXT record at {domain}: \"v=spf1 include:<your host's SPF> ~all\" (the host's help page names its include).",
                         domain=domain))
    found = _("SPF record \"{record}\", {n} of 10 DNS look-ups.", record=reading.record,
              n=reading.lookups)
    if any(word in ("all", "+all") for word in reading.record.lower().split()[1:]):
        return Finding("SPF", domain, WARNING,
                       found + " " + _("It ends in +all, which lets every server on earth send as {domain}.",
                                       domain=domain),
                       _("End it in ~all or -all, after the servers that really send."))
    if reading.relay is None:
        if settings["mail.transport"] == "smtp":
            found += " " + _("The relay's address is not checked: set mail.relay_ip to check it.")
        return Finding("SPF", domain, OK, found)
    if reading.relay != "pass":
        return Finding("SPF", domain, WRONG,
                       found + " " + _("It does not permit the relay's address {ip} (result: {result}).",
                                       ip=relay, result=reading.relay),
                       _("Add ip4:{ip} (or the relay's include) to the SPF record of {domain}.",
                         ip=relay, domain=domain))
    return Finding("SPF", domain, OK, found + " " + _("It permits the relay's address {ip}.", ip=relay))


def _spf_error(domain: str, exc: spf_mod.SpfError, _: Callable[..., str]) -> Finding:
    if exc.kind == "several":
        return Finding("SPF", domain, WRONG,
                       _("{domain} has more than one SPF record ({count}); receivers treat that as no record.",
                         domain=domain, count=exc.detail),
                       _("Merge them into one TXT record."))
    if exc.kind == "include":
        return Finding("SPF", domain, WRONG,
                       _("The SPF record of {domain} refers to {target}, which has no SPF record.",
                         domain=domain, target=exc.domain),
                       _("Correct or remove the include of {target}.", target=exc.domain))
    if exc.kind == "lookups":
        return Finding("SPF", domain, WRONG,
                       _("The SPF record of {domain} needs more than 10 DNS look-ups; receivers answer permerror.",
                         domain=domain),
                       _("Replace some include:, a and mx terms by the ip4:/ip6: ranges they stand for."))
    return Finding("SPF", domain, WRONG,
                   _("The SPF record of {domain} has a syntax error at \"{term}\".",
                     domain=exc.domain, term=exc.detail),
                   _("Correct that term (RFC 7208 section 5); receivers ignore the whole record until then."))


def dkim(data, lookup: Lookup, settings, _: Callable[..., str]) -> Finding:
    domain, selector = settings["mail.dkim_domain"], settings["mail.dkim_selector"]
    if not domain:
        return Finding("DKIM", "mail.dkim_domain", WRONG,
                       _("Letters are not DKIM-signed; Gmail and Yahoo require DKIM of bulk senders."),
                       _("Run `vykhukhol dkim keygen --domain <your domain>`, publish the record it prints and set mail.dkim_domain."))
    name = f"{selector}._domainkey.{domain}"
    try:
        public = _public_key(signing.load_key(signing.settings_key_path(data.root, settings)))
    except signing.DkimKeyError as exc:
        return Finding("DKIM", name, WRONG, exc.message,
                       _("Make a key with `vykhukhol dkim keygen` or correct mail.dkim_key_file."))
    record = signing.dns_record(domain, selector, public)
    try:
        texts = [t for t in lookup.txt(name) if "p=" in t.replace(" ", "")]
    except Unanswered as exc:
        return _unknown("DKIM", name, exc, _)
    if not texts:
        return Finding("DKIM", name, WRONG, _("There is no DKIM record at {name}.", name=name),
                       _("Publish this TXT record: {record}", record=record))
    tags = _tags(texts[0])
    published = "".join(tags.get("p", "").split())
    try:
        same = base64.b64decode(published, validate=True) == public
    except (binascii.Error, ValueError):
        same = False
    if not same:
        return Finding("DKIM", name, WRONG,
                       _("The DKIM record at {name} holds another key than the one Vykhukhol signs with.",
                         name=name),
                       _("Publish this TXT record instead: {record}", record=record))
    return Finding("DKIM", name, OK, _("The DKIM record at {name} holds the key Vykhukhol signs with.",
                                       name=name))


def _public_key(pem: bytes) -> bytes:
    """The DER SubjectPublicKeyInfo of a PEM private key (what p= carries)."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pem, password=None)
    return key.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def _tags(text: str) -> dict[str, str]:
    """``k=v; k=v`` tag lists (DKIM, DMARC), names lower-cased."""
    tags: dict[str, str] = {}
    for part in text.split(";"):
        name, sep, value = part.partition("=")
        if sep:
            tags.setdefault(name.strip().lower(), value.strip())
    return tags


def dmarc(lookup: Lookup, domain: str, dkim_domain: str, envelope: str,
          _: Callable[..., str]) -> Finding:
    names = [f"_dmarc.{domain}"]
    if organisational(domain) != domain:
        names.append(f"_dmarc.{organisational(domain)}")  # RFC 7489 6.6.3
    try:
        for name in names:
            records = [t for t in lookup.txt(name) if t.replace(" ", "").lower().startswith("v=dmarc1")]
            if records:
                break
    except Unanswered as exc:
        return _unknown("DMARC", domain, exc, _)
    if not records and lookup.absent(domain):
        return _no_such_domain("DMARC", domain, _)
    if not records:
        return Finding("DMARC", domain, WRONG,
                       _("{domain} has no DMARC record; Gmail and Yahoo require one of bulk senders.",
                         domain=domain),
                       _("Publish a TXT record at _dmarc.{domain}: \"v=DMARC1; p=none; rua=mailto:dmarc@{domain}\".",
                         domain=domain))
    if len(records) > 1:
        return Finding("DMARC", domain, WRONG,
                       _("{name} has more than one DMARC record ({count}); receivers ignore them all.",
                         name=name, count=len(records)),
                       _("Keep one DMARC record."))
    tags = _tags(records[0])
    policy = tags.get("p", "").lower()
    if policy not in POLICIES:
        return Finding("DMARC", domain, WRONG,
                       _("The DMARC record at {name} has no valid policy (p=).", name=name),
                       _("Give it p=none, p=quarantine or p=reject."))
    by_dkim = aligned(dkim_domain, domain, tags.get("adkim", "r").lower() == "s")
    by_spf = aligned(envelope, domain, tags.get("aspf", "r").lower() == "s")
    if not by_dkim and not by_spf:
        return Finding("DMARC", domain, WRONG,
                       _("Policy p={policy}, but From {domain} aligns with neither the DKIM domain ({signer}) nor the envelope domain ({envelope}).",
                         policy=policy, domain=domain, signer=dkim_domain or "—", envelope=envelope),
                       _("Sign with a key of {domain} (mail.dkim_domain) or send from an address of the signing domain.",
                         domain=domain))
    if by_dkim and by_spf:
        found = _("Policy p={policy}; From aligns with the DKIM domain ({signer}) and the envelope domain ({envelope}).",
                  policy=policy, signer=dkim_domain, envelope=envelope)
    elif by_dkim:
        found = _("Policy p={policy}; From aligns with the DKIM domain ({signer}).",
                  policy=policy, signer=dkim_domain)
    else:
        found = _("Policy p={policy}; From aligns with the envelope domain ({envelope}) only, which a forwarder breaks.",
                  policy=policy, envelope=envelope)
    return Finding("DMARC", domain, OK, found)


def mx(lookup: Lookup, domain: str, _: Callable[..., str]) -> Finding:
    try:
        hosts = lookup.mx(domain)
        addresses = [] if hosts else lookup.addresses(domain)
    except Unanswered as exc:
        return _unknown("MX", domain, exc, _)
    if hosts and all(host in ("", ".") for _pref, host in hosts):
        return Finding("MX", domain, WRONG,
                       _("{domain} says it receives no mail (a null MX): bounces to it are lost.", domain=domain),
                       _("Give the bounce address's domain a real MX, or set mail.bounce_address to a mailbox that receives mail."))
    if not hosts and addresses:
        return Finding("MX", domain, WARNING,
                       _("{domain} has no MX record; mail to it goes to its address record.", domain=domain),
                       _("Publish an MX record for {domain} naming its mail server.", domain=domain))
    if not hosts and lookup.absent(domain):
        return _no_such_domain("MX", domain, _)
    if not hosts:
        return Finding("MX", domain, WRONG,
                       _("{domain} has no MX record and no address: bounces to it are lost.", domain=domain),
                       _("Publish an MX record for {domain}, or set mail.bounce_address to a mailbox that receives mail.",
                         domain=domain))
    return Finding("MX", domain, OK, _("Bounces to {domain} arrive at {hosts}.", domain=domain,
                                       hosts=", ".join(host for _pref, host in hosts)))


def site(settings, _: Callable[..., str]) -> list[Finding]:
    url = settings["site_url"]
    if url.startswith("https://"):
        return [Finding("site_url", url, OK, _("The links in letters are https.")),
                Finding("one-click", "List-Unsubscribe-Post", OK,
                        _("Every list letter carries one-click unsubscribe (RFC 8058), honoured at once."))]
    return [Finding("site_url", url, WRONG, _("site_url is not https: mail services want https links."),
                    _("Put the site on https and set site_url to its https address.")),
            Finding("one-click", "List-Unsubscribe-Post", WRONG,
                    _("One-click unsubscribe is left out of the letters: RFC 8058 allows it only for an https link."),
                    _("Set site_url to an https address; one-click goes with it."))]
