"""DMARC alignment (RFC 7489 section 3.1): one rule for the status pages'
DKIM note and the doctor's DMARC check, so the two never say opposite things
about the same pair of domains (the rule is vykhukhol.mail.alignment's; these
tests ask it through each asker's own door, as the pages do).

Each case is a (signing or envelope domain, From domain) pair with DMARC's
answer; relaxed alignment compares organisational domains, strict ones the
whole names, both without regard to case or a final dot (DNS names)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.servetools import subprocess_env
from vykhukhol.mail import alignment, dkim
from vykhukhol.mail.doctor import checks

RELAXED = [
    ("example.org", "example.org", True),
    ("mail.example.org", "example.org", True),          # signer under From
    ("example.org", "news.example.org", True),          # From under signer
    ("a.example.org", "b.example.org", True),           # siblings: one organisational domain
    ("news.example.co.uk", "example.co.uk", True),
    ("a.example.co.uk", "b.example.co.uk", True),
    ("Example.ORG", "example.org.", True),              # case and a final dot
    ("example.org.", "MAIL.Example.org", True),
    ("co.uk", "example.co.uk", False),                  # a public suffix is nobody's domain
    ("org", "example.org", False),
    ("other.co.uk", "example.co.uk", False),            # two strangers under co.uk
    ("a.co.uk", "b.co.uk", False),
    ("alice.me.uk", "bob.me.uk", False),                # under a suffix of the list's only
    ("a.kent.sch.uk", "b.kent.sch.uk", False),          # a wildcard rule (*.sch.uk)
    ("alice.github.io", "bob.github.io", False),        # two sites under a hosting suffix
    ("news.alice.github.io", "alice.github.io", True),  # a site and a name under it
    ("github.io", "alice.github.io", False),
    ("mail.example.org", "news.example.org", True),     # an ordinary .org pair still aligns
    ("example.org", "example.net", False),
    ("example.org", "example.org.uk", False),
    ("", "example.org", False),                         # signing off
    ("xn--e1afmkfd.xn--p1ai", "пример.рф", True),       # the From's IDN travels as IDNA
    ("xn--e1afmkfd.xn--p1ai", "другой.рф", False),
]
STRICT = [
    ("example.org", "example.org", True),
    ("Example.ORG", "example.org", True),
    ("example.org.", "example.org", True),
    ("mail.example.org", "example.org", False),
    ("example.org", "news.example.org", False),
    ("", "", False),
]


def status_says_aligned(signer: str, from_domain: str) -> bool:
    """What the status pages (``vykhukhol status``, the admin's Status page) say."""
    return not dkim.misaligned(signer, {"news": f"list@{from_domain}"}) if signer else False


@pytest.mark.parametrize(("signer", "from_domain", "expected"), RELAXED)
def test_the_status_pages_follow_relaxed_alignment(signer, from_domain, expected):
    assert status_says_aligned(signer, from_domain) is expected


@pytest.mark.parametrize(("signer", "from_domain", "expected"), RELAXED)
def test_the_doctor_follows_relaxed_alignment(signer, from_domain, expected):
    assert checks.aligned(signer, from_domain) is expected


@pytest.mark.parametrize(("one", "other", "expected"), STRICT)
def test_the_doctor_follows_strict_alignment(one, other, expected):
    assert checks.aligned(one, other, strict=True) is expected


@pytest.mark.parametrize(("signer", "from_domain", "_expected"), RELAXED)
def test_the_status_pages_and_the_doctor_agree(signer, from_domain, _expected):
    assert status_says_aligned(signer, from_domain) is checks.aligned(signer, from_domain)


def test_the_organisational_domain_is_the_public_suffix_and_one_label_more():
    assert alignment.organisational("a.b.Example.ORG.") == "example.org"
    assert alignment.organisational("news.example.co.uk") == "example.co.uk"
    assert alignment.organisational("www.alice.github.io") == "alice.github.io"
    assert alignment.organisational("x.a.kent.sch.uk") == "a.kent.sch.uk"
    assert alignment.organisational("co.uk") == "co.uk"             # a public suffix: itself
    assert alignment.organisational("localhost") == "localhost"
    assert alignment.domain_of("List@News.Example.org.") == "news.example.org"


def test_the_status_pages_note_loads_neither_the_doctor_nor_dnspython():
    code = ("import sys; from vykhukhol.mail import dkim; "
            "assert dkim.misaligned('example.org', {'a': 'x@b.example.net'}) == [('a', 'b.example.net')]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dns' "
            "or m.startswith('vykhukhol.mail.doctor')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
