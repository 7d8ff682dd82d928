"""The own page's export and erase took other people's
lines and letters, and left the address behind.

1. ``brien@example.org``'s export held the letters and bounces.log lines of
   ``o'brien@example.org`` and ``x&brien@example.org`` (a substring match
   with too few characters excluded before it), own-page links included;
   its erase deleted their letters.
2. A name ``brien@example.org`` planted on the victim's subscription put the
   victim's confirmation (with its link) into brien's export.
3. An erase left the address in ``bounces/processed.txt`` and
   ``state/soft`` (the export left both out, a second erase said "nothing to
   erase"), and alice's erase took a bounces.log line about brien that also
   named her.

Every attack is a POST to the own page of a real ``vykhukhol serve``.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from support import smtpkit, webkit
from support.servetools import subprocess_env
from support.webkit import Browser, wait_for
from vykhukhol import tokens
from vykhukhol.bounces import record
from vykhukhol.members import suppression
from vykhukhol.timeutil import now

served = webkit.served  # the fixture: a real `vykhukhol serve`
smtp_server = smtpkit.smtp_server  # the fixture: aiosmtpd on loopback
BRIEN, OBRIEN, XBRIEN = "brien@example.org", "o'brien@example.org", "x&brien@example.org"
SAME = {"Sec-Fetch-Site": "same-origin"}
LETTER = "Hello {{ name }}.\n\nYour page: {{ manage_url }}\nConfirm: {{ confirm_url }}\n"


def own(site, served, email: str, action: str, **fields: str):
    token = _manage_token(site, email)
    browser = Browser(served.port)
    return browser.post("/cgi/manage.py", {"e": email, "t": token, "action": action, **fields},
                        headers=SAME)


def _manage_token(site, email: str) -> str:
    return tokens.make_for_address(site.settings().secret, email, "manage")


def export(site, served, email: str) -> dict:
    answer = own(site, served, email, "export")
    assert answer.status == 200 and answer.headers["content-type"].startswith("application/json"), answer
    return json.loads(answer.body)


def readable(text: str) -> str:
    """A letter's text parts decoded (quoted-printable hides links from a search)."""
    message = email.message_from_string(text, policy=email.policy.default)
    heads = "".join(f"{name}: {value}\n" for name, value in message.items())
    return heads + "\n".join(part.get_content() for part in message.walk()
                             if part.get_content_maintype() == "text")


def tokens_in(text: str) -> set[str]:
    return set(re.findall(r"[?&]t=([0-9a-f]{16,})", text))


def exported_tokens(found: dict) -> set[str]:
    return tokens_in(json.dumps(found)) | {t for letter in found["letters"]
                                           for t in tokens_in(readable(letter["text"]))}


def tokens_to(site, address: str) -> set[str]:
    return {t for message in site.outbox() if address.lower() in str(message["To"]).lower()
            for t in tokens_in(readable(message.as_string()))}


def neighbours(site) -> None:
    site.service("news", letters=[("Lesson", "0s", LETTER)])
    for address in (BRIEN, OBRIEN, XBRIEN):
        site.subscriber("news", address, name="N")
    site.run_at()
    record.write(site.data, [record.line(f"{n:016x}", "permanent", "service news", who, "pipe",
                                         "550 user unknown") for n, who in
                             enumerate((OBRIEN, XBRIEN, BRIEN))])


def test_an_export_holds_only_the_whole_address(site, served):
    neighbours(site)
    found = export(site, served, BRIEN)
    text = json.dumps(found)
    assert len(found["letters"]) == 1, [x["file"] for x in found["letters"]]
    assert "o'brien" not in text and "x&brien" not in text, text[:2000]
    assert [x["line"].split("\t")[4] for x in found["bounces"]] == [BRIEN]
    assert _manage_token(site, BRIEN) in exported_tokens(found)
    assert exported_tokens(found) <= tokens_to(site, BRIEN)
    assert not exported_tokens(found) & (tokens_to(site, OBRIEN) | tokens_to(site, XBRIEN))


def test_an_erase_takes_nothing_of_the_neighbours(site, served):
    neighbours(site)
    before = {a: len([m for m in site.outbox() if a in str(m["To"])]) for a in (OBRIEN, XBRIEN)}
    answer = own(site, served, BRIEN, "erase", sure="yes")
    assert answer.status == 200 and "Erased" in answer.body, answer
    after = {a: len([m for m in site.outbox() if a in str(m["To"])]) for a in (OBRIEN, XBRIEN)}
    assert after == before and all(after.values())
    log = (site.data.log / "bounces.log").read_text()
    assert OBRIEN in log and XBRIEN in log and f"\t{BRIEN}\t" not in log
    for who in (OBRIEN, XBRIEN):
        assert export(site, served, who)["bounces"], who


def test_a_planted_name_pulls_no_letter_into_an_export(site, served):
    site.service("news", letters=[("Lesson", "0s", LETTER)])
    site.subscriber("news", BRIEN)
    browser = Browser(served.port)
    answer = browser.post("/cgi/subscribe.py", {"service": "news", "email": "victim@example.org",
                                                "name": BRIEN}, headers=SAME)
    assert answer.status == 200, answer
    assert wait_for(lambda: any("victim" in str(m["To"]) for m in site.outbox()))
    assert tokens_to(site, "victim@example.org")
    first = export(site, served, BRIEN)
    assert "victim" not in json.dumps(first), first
    assert not exported_tokens(first) & tokens_to(site, "victim@example.org")
    site.run_at()
    later = export(site, served, BRIEN)
    assert "victim" not in json.dumps(later), later
    assert not exported_tokens(later) & tokens_to(site, "victim@example.org")


# --- item 3: every path that writes an address, then one erase -----------------------

ALICE = "Alice.Liddell@Example.org"  # typed with capitals: found in any letter case
STORED = "Alice.Liddell@example.org"  # as the list keeps it (the domain lower-cased)
SECRET = "generic-secret-0123456789abcdef-0123456789"
DSN = Path(__file__).resolve().parents[1] / "data" / "bounces" / "flufl-dsn_01.txt"


def callback(site, served, report: dict) -> None:
    from vykhukhol.bounces.providers.generic import signature

    body = json.dumps(report).encode()
    answer = Browser(served.port).request(
        "POST", "/cgi/hook.py/generic?key=" + site.settings()["hooks.key"], body,
        headers={"Content-Type": "application/json",
                 "X-Vykhukhol-Signature": signature(SECRET, body)})
    assert answer.status == 200, answer


def pipe(site, raw: bytes) -> None:
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root), "bounce"],
                          input=raw, capture_output=True, timeout=60, env=subprocess_env())
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr


def naming(site, address: str) -> dict[str, int]:
    needle = address.lower().encode()
    return {p.relative_to(site.root).as_posix(): p.read_bytes().lower().count(needle)
            for p in sorted(site.root.rglob("*")) if p.is_file()
            and needle in p.read_bytes().lower()}


def test_an_erase_leaves_no_byte_of_the_address_and_keeps_others_history(site, served,
                                                                          smtp_server):
    from vykhukhol import returntag as tags

    site.set(hooks__generic_secret=SECRET, mail__from_email="list@example.org")
    site.service("news", letters=[("Lesson 1", "0s", LETTER), ("Lesson 2", "1s", LETTER)])
    site.subscriber("news", BRIEN, name="Brien")
    browser = Browser(served.port)
    # subscribe and confirm through the pages, lesson 1 from a run (the outbox)
    assert browser.post("/cgi/subscribe.py", {"service": "news", "email": ALICE, "name": "Alice"},
                        headers=SAME).status == 200
    assert wait_for(lambda: tokens_to(site, ALICE))
    letter = next(m for m in site.outbox() if ALICE.lower() in str(m["To"]).lower())
    confirm = re.search(r"/cgi/confirm\.py\?\S+", readable(letter.as_string())).group(0)
    assert browser.post(confirm, {}, headers=SAME).status == 200
    site.run_at()
    # a deferral: lesson 2 through SMTP, the recipient refused 451 (state/tempfail, run.log)
    site.use_smtp(smtp_server.port)
    site.set(mail__from_email="list@example.org")
    smtp_server.handler.rcpt_responses[STORED] = "451 4.2.1 try again later"
    site.run_at(now() + timedelta(minutes=5))
    # callbacks: a soft failure (bounces.log, processed.txt, state/soft), brien's bounce
    # whose words name alice too, a temporary one
    callback(site, served, {"address": ALICE, "kind": "permanent", "id": "soft-1",
                            "diagnostic": "552 5.2.2 mailbox full"})
    callback(site, served, {"address": BRIEN, "kind": "permanent", "id": "brien-1",
                            "diagnostic": f"550 5.1.1 forwarded to {ALICE.lower()}: unknown"})
    callback(site, served, {"address": ALICE, "kind": "temporary", "id": "late-1"})
    # by mail: a reply kept for the admin, a soft failure; then the address gone by
    # callback (suppressed, removed by the bounce)
    returned = tags.bounce_address("list@example.org", "+", tags.make(
        site.settings().secret, "s", "news", STORED))
    pipe(site, f"Delivered-To: {returned}\nFrom: {ALICE}\nSubject: a question\n\nHi!\n".encode())
    pipe(site, f"Delivered-To: {returned}\n".encode()
         + DSN.read_bytes().replace(b"userx@example.com", ALICE.encode()))
    callback(site, served, {"address": ALICE, "kind": "permanent", "id": "gone-1",
                            "diagnostic": "550 5.1.1 user unknown"})
    assert STORED not in site.subscribers("news")
    held = naming(site, ALICE)
    for place in ("log/bounces.log", "bounces/processed.txt", "state/soft", "state/tempfail",
                  "log/run.log", "suppressed.txt"):
        assert place in held, place
    assert any(name.startswith("bounces/kept/") for name in held), held
    assert any(name.startswith("outbox/") for name in held), held

    found = export(site, served, ALICE)
    files_exported = {x["file"] for part in ("bounces", "log_lines") for x in found[part]}
    assert {"bounces/processed.txt", "state/soft", "state/tempfail"} <= files_exported, found
    assert BRIEN not in json.dumps(found)

    erased = own(site, served, ALICE, "erase", sure="yes")
    assert erased.status == 200 and "Erased" in erased.body, erased
    assert naming(site, ALICE) == {}
    hashed = suppression.hashed(site.settings().secret, ALICE)
    brien_lines = [line for line in (site.data.log / "bounces.log").read_text().splitlines()
                   if f"\t{BRIEN}\t" in line]
    assert len(brien_lines) == 1 and hashed in brien_lines[0], brien_lines
    again = own(site, served, ALICE, "erase", sure="yes")
    assert again.status == 200 and "Nothing to erase" in again.body, again
    assert not export(site, served, ALICE)["bounces"]
