"""The bounce reader held to Sisimai's public corpus (SPEC 5, "What a failure
count means"; issue 17 items 1 and 7).

tests/data/sisimai/maildir holds 483 real bounces from some fifty mail
systems; expected.csv gives Sisimai's reason for each recipient (README.md
there says where both come from). Each file is read once; the figures are
the README §17 ones: ``python3 tests/unit/test_bounce_reasons.py`` prints them.
"""

from __future__ import annotations

import csv
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from vykhukhol.addresses import check_email
from vykhukhol.bounces import classify as kinds
from vykhukhol.bounces.reasons import CLASS_OF, Cause, read, smtp_reason

DATA = Path(__file__).resolve().parents[1] / "data" / "sisimai"
NOT_REFUSALS = {"delivered", "feedback", "vacation"}


# Address-gone reports that cannot read as gone here, whatever the reader:
# their address is one the project never accepts (so never a subscriber, and
# never named), or the report is a delay notice, which SPEC 5 never counts.
NOT_COUNTED = {
    "lhost-postfix-32.eml": 'a quoted local part ("neko....nyaan....")',
    "lhost-sendmail-25.eml": "an encoded word (=?utf-8?B?…?=) as the local part",
    "lhost-opensmtpd-12.eml": "Action: delayed (a warning after 4 hours)",
}


@lru_cache(maxsize=1)
def corpus() -> tuple[dict[str, kinds.Verdict], dict[str, frozenset[Cause]]]:
    """Every sample read once: its verdict, and the classes Sisimai's reasons give it."""
    verdicts = {path.name: kinds.classify(path.read_bytes(), "+")
                for path in sorted((DATA / "maildir").glob("lhost-*.eml"))}
    expected: dict[str, set[Cause]] = {}
    with open(DATA / "expected.csv", newline="", encoding="utf-8") as table:
        for row in csv.DictReader(table):
            if row["reason"] not in NOT_REFUSALS:
                expected.setdefault(row["file"], set()).add(CLASS_OF[row["reason"]])
    return verdicts, {name: frozenset(classes) for name, classes in expected.items()}


def figures(counted_only: bool = True) -> dict[str, Counter]:
    """How the reader reads each group of reports: Sisimai's class -> what we read.

    A report whose recipients Sisimai puts in different classes is "mixed".
    """
    verdicts, expected = corpus()
    table: dict[str, Counter] = {}
    for name, classes in expected.items():
        if counted_only and name in NOT_COUNTED:
            continue
        group = next(iter(classes)).value if len(classes) == 1 else "mixed"
        verdict = verdicts[name]
        got = verdict.cause.value if verdict.cause else verdict.kind
        table.setdefault(group, Counter())[got] += 1
    return table


def test_the_corpus_is_all_there():
    verdicts, expected = corpus()
    assert len(verdicts) >= 480 and len(expected) >= 450
    assert set(expected) <= set(verdicts)


def test_reports_of_a_gone_address_read_as_gone():
    table = figures()
    gone = table[Cause.GONE.value]
    assert gone[Cause.GONE.value] >= 0.95 * sum(gone.values()), gone


def test_other_reports_rarely_read_as_gone():
    table = figures()
    others = Counter()
    for group, counts in table.items():
        if group not in (Cause.GONE.value, "mixed"):
            others.update(counts)
    assert others[Cause.GONE.value] <= 0.02 * sum(others.values()), table


def test_no_sender_refusal_is_counted_on_the_subscriber():
    verdicts, expected = corpus()
    wrong = {name: verdicts[name].cause for name, classes in expected.items()
             if classes == {Cause.SENDER}
             and verdicts[name].cause in (Cause.GONE, Cause.SOFT)}
    assert not wrong


def test_every_named_string_is_an_address():
    verdicts, _ = corpus()
    for name, verdict in verdicts.items():
        for address in verdict.named | set(verdict.readings):
            assert check_email(address).lower() == address, (name, address)


@pytest.mark.parametrize(("code", "enhanced", "text", "cause", "reason"), [
    (550, "5.1.1", "<a@example.org>: Recipient address rejected: User unknown", Cause.GONE,
     "userunknown"),
    (550, "", "5.1.1 The email account that you tried to reach does not exist.", Cause.GONE,
     "userunknown"),
    (552, "5.2.2", "Mailbox full", Cause.SOFT, "mailboxfull"),
    (550, "5.7.1", "Service unavailable; Client host [192.0.2.1] blocked using "
     "zen.spamhaus.org", Cause.SENDER, "blocked"),
    (550, "5.7.26", "Unauthenticated email from example.org is not accepted due to "
     "domain's DMARC policy", Cause.SENDER, "authfailure"),
    (554, "5.7.1", "Message rejected as spam", Cause.SENDER, "spamdetected"),
    (552, "5.3.4", "Message size exceeds fixed limit", Cause.SENDER, "mesgtoobig"),
    (450, "4.2.1", "Mailbox busy, try again later", Cause.DELAY, "blocked"),
    (451, "4.7.1", "Greylisted, please try again", Cause.DELAY, "blocked"),
    (421, "", "Too many connections", Cause.DELAY, "toomanyconn"),
])
def test_an_smtp_reply_is_read_like_a_report(code, enhanced, text, cause, reason):
    reading = smtp_reason(code, enhanced, text)
    assert (reading.cause, reading.reason) == (cause, reason)


def test_a_delay_is_not_a_failure_and_giving_up_is_soft():
    assert read("4.4.7", "Connection timed out", "delayed").cause is Cause.DELAY
    assert read("4.4.7", "retry time not reached for any host after a long failure period",
                "failed").cause is Cause.SOFT
    # a 4.x.x code alone is no proof the address is gone
    assert read("4.1.1", "", "failed").cause is Cause.SOFT
    assert read("4.1.1", "450 4.1.1 <a@example.org>: Recipient address rejected: User unknown "
                "in virtual mailbox table (in reply to RCPT TO command)", "failed").cause is Cause.GONE
    # "user unknown" after the letter's text is a content filter (Sisimai: filtered)
    assert read("5.0.0", "550 Unknown user a@example.org (in reply to end of DATA command)",
                "failed").cause is Cause.SOFT


def test_each_class_has_a_label_in_both_languages():
    for cause in Cause:
        assert cause.label("en") and cause.label("ru") != cause.label("en")


if __name__ == "__main__":  # the README §17 figures
    for counted_only in (False, True):
        print("without the reports in NOT_COUNTED:" if counted_only else "all reports:")
        for group, counts in sorted(figures(counted_only).items()):
            print(f"  {group:15} {sum(counts.values()):4}  " + ", ".join(
                f"{k}: {v}" for k, v in counts.most_common()))
