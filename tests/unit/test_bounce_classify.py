"""What a returned message is: real reports (tests/data/bounces) through
flufl.bounce and our own checks, and the tags found in them (docs/deliverability/bounces.md#returned-message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vykhukhol import returntag as tags
from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.states import LedgerState

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
SECRET = b"a secret of at least thirty-two bytes, for tests"
TAGGED = tags.bounce_address("news@example.org", "+", tags.make(SECRET, "s", "news", "a@example.com"))

EXPECTED = {
    "flufl-dsn_01.txt": (kinds.PERMANENT, {"userx@example.com"}),
    "flufl-dsn_05.txt": (kinds.TEMPORARY, {"userx@example.cz"}),
    "flufl-postfix_01.txt": (kinds.PERMANENT, {"xxxxx@local.ie"}),
    "flufl-qmail_01.txt": (kinds.PERMANENT, {"userx@example.de"}),
    "flufl-exim_01.txt": (kinds.PERMANENT, {"userx@its.example.nl"}),
    "flufl-yahoo_01.txt": (kinds.PERMANENT, {"userx@example.com"}),
    "flufl-microsoft_01.txt": (kinds.PERMANENT, {"userx@example.com"}),
    "flufl-newmailru_01.txt": (kinds.PERMANENT, {"zzzzz@newmail.ru"}),
    "flufl-simple_03.txt": (kinds.TEMPORARY, {"userx@example.za"}),
    "flufl-qmail_08.txt": (kinds.AUTO_REPLY, set()),
    "rfc5965-example.txt": (kinds.COMPLAINT, set()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_real_report_is_read_as_what_it_is(name):
    verdict = kinds.classify((DATA / name).read_bytes(), "+")
    assert (verdict.kind, verdict.named) == EXPECTED[name]


def test_the_tag_is_found_in_the_envelope_headers_first_then_in_the_returned_letter():
    raw = f"Delivered-To: {TAGGED}\n".encode() + (DATA / "flufl-dsn_01.txt").read_bytes()
    assert [address for address, _ in kinds.classify(raw, "+").tags] == [TAGGED]
    complaint = (DATA / "rfc5965-example.txt").read_bytes().replace(
        b"somespammer@example.net", TAGGED.encode())
    found = kinds.classify(complaint, "+")
    assert found.kind == kinds.COMPLAINT and found.tags[0][0] == TAGGED
    assert kinds.classify(raw, "").tags == []  # tagging off


def test_a_dsn_that_says_auto_submitted_is_still_a_bounce():
    raw = b"Auto-Submitted: auto-replied\n" + (DATA / "flufl-postfix_01.txt").read_bytes()
    assert kinds.classify(raw, "+").kind == kinds.PERMANENT


def test_unsubscribe_by_mail_needs_the_exact_subject_and_a_person():
    person = f"From: a@example.com\nTo: {TAGGED}\nSubject: Unsubscribe \n\n".encode()
    assert kinds.classify(person, "+").kind == kinds.UNSUBSCRIBE
    assert kinds.classify(person.replace(b"Unsubscribe", b"Re: unsubscribe"), "+").kind == kinds.KEPT
    robot = b"Auto-Submitted: auto-replied\n" + person
    assert kinds.classify(robot, "+").kind == kinds.AUTO_REPLY


@pytest.mark.parametrize("raw", [
    b"x" * (kinds.MAX_MESSAGE_BYTES + 1),
    b"Content-Type: multipart/mixed; boundary=a\n\n" + b"--a\nContent-Type: multipart/mixed; boundary=a\n\n" * 300,
    b"Subject: \xff\xfe\n\n\xc3\x28",
    b"",
    b"\x00\x01\x02",
])
def test_hostile_input_gives_a_verdict_not_an_exception(raw):
    verdict = kinds.classify(raw, "+")
    assert verdict.kind in kinds.KINDS and verdict.kind != kinds.PERMANENT


def test_a_ledger_row_moves_forward_only_and_a_bounce_may_fail_a_sent_row():
    assert LedgerState.PENDING.may_become(LedgerState.SENT)
    assert not LedgerState.SENT.may_become(LedgerState.FAILED)  # the sender's fold: never
    assert LedgerState.SENT.may_become(LedgerState.FAILED, bounced=True)
    assert LedgerState.IN_DOUBT.may_become(LedgerState.FAILED, bounced=True)
    assert not LedgerState.FAILED.may_become(LedgerState.SENT, bounced=True)
    assert not LedgerState.SKIPPED.may_become(LedgerState.FAILED, bounced=True)
    assert not LedgerState.SENT.may_become(LedgerState.PENDING, bounced=True)
