"""The bounce reader held to Sisimai's public corpus
(docs/design/bounces.md#bounces-corpus).

The corpus is not in the repository: it lies beside the checkout, in
../shared/corpora/sisimai (docs/development/tests.md#dev-tests-corpora), and
the tests that read it skip, saying so, where it is absent. maildir/ holds
every file of set-of-emails maildir/bsd (629: the sending systems' formats,
the remote providers' own words, RFC 3464/3834 samples, complaints);
expected.csv gives Sisimai's reason for each recipient, and
tools/bounce_labels/sisimai.csv our own label where the words say otherwise
(a "user unknown" Sisimai calls filtered is a dead address). Each group is
held to the thresholds on its own. Each file is read once; the figures are the
manual's, with the held-out one (each rhost file without its own provider's
table): ``python3 tests/unit/test_bounce_reasons.py`` prints them.

The rules were written on the lhost files first; the rhost, rfc and arf
files were measured once with those rules before any rule was written on
them (docs/design/bounces.md#bounces-held-out), so every group is
development data now."""

from __future__ import annotations

import csv
import sys
import time
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script: tests/, home of support/, on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import corpora  # noqa: E402
from vykhukhol.addresses import check_email  # noqa: E402
from vykhukhol.bounces.reading import classify as kinds  # noqa: E402
from vykhukhol.bounces.reading import reasons  # noqa: E402
from vykhukhol.bounces.reading.reasons import CLASS_OF, Cause, read, smtp_reason  # noqa: E402

WHAT = "Sisimai's set-of-emails"
NOT_REFUSALS = {"delivered", "feedback", "vacation"}
# The four groups of set-of-emails' maildir/bsd, held to the thresholds each
# on its own: the sending systems' formats (lhost-*), the remote providers'
# own words (rhost-*), the standard formats (rfc3464-*, rfc3834-*) and the
# complaints (arf-*).
GROUPS = ("lhost", "rhost", "rfc", "arf")
COMPLAINT, AUTO_REPLY = "complaint", "auto-reply"


# Reports that cannot read as Sisimai reads them here, whatever the reader:
# their address is one the project never accepts (so never a subscriber, and
# never named), the report is a delay notice, which no failure count counts, or
# it is no RFC 5965 report.
NOT_COUNTED = {
    "lhost-postfix-32.eml": 'a quoted local part ("neko....nyaan....")',
    "lhost-sendmail-25.eml": "an encoded word (=?utf-8?B?…?=) as the local part",
    "lhost-opensmtpd-12.eml": "Action: delayed (a warning after 4 hours)",
    "arf-26.eml": 'an iCloud "unsubscribe" mail marked Auto-Submitted: auto-replied, with no '
                  "feedback-report part: read as an automatic reply, nothing done",
}


def group(name: str) -> str:
    """The group of a sample file: lhost, rhost, rfc (3464 and 3834) or arf."""
    prefix = name.split("-", 1)[0]
    return "rfc" if prefix.startswith("rfc") else prefix


def expected_class(reason: str, hard: str) -> str:
    """What Sisimai's row says the report is, in our classes. A "gone" reason
    Sisimai itself does not call a hard bounce (notaccept with 4.0.0: the
    server did not take mail for now) is soft."""
    if reason == "feedback":
        return COMPLAINT
    if reason == "vacation":
        return AUTO_REPLY
    cause = CLASS_OF[reason]
    if cause is Cause.GONE and hard != "true":
        return Cause.SOFT.value
    return cause.value


@lru_cache(maxsize=1)
def corpus() -> tuple[dict[str, kinds.Verdict], dict[str, frozenset[str]], float]:
    """Every sample read once: its verdict, the classes Sisimai's rows give it,
    and the seconds the reading took."""
    data = corpora.need("sisimai", WHAT)
    started = time.perf_counter()
    verdicts = {path.name: kinds.classify(path.read_bytes(), "+")
                for path in sorted((data / "maildir").glob("*.eml"))}
    took = time.perf_counter() - started
    expected: dict[str, set[str]] = {}
    with open(data / "expected.csv", newline="", encoding="utf-8") as table:
        for row in csv.DictReader(table):
            if row["reason"] != "delivered":
                expected.setdefault(row["file"], set()).add(
                    expected_class(row["reason"], row["hard_bounce"]))
    for name, label in own_labels().items():
        expected[name] = {OWN_CLASS[label]} if label in OWN_CLASS else {"mixed", label}
    return verdicts, {name: frozenset(classes) for name, classes in expected.items()}, took


# Our own label where the words say otherwise than Sisimai's reason
# (tools/bounce_labels/sisimai.csv): "gone" for a "user unknown" Sisimai calls
# filtered, "skip" for a report whose recipients fall in different classes.
OWN_LABELS = Path(__file__).resolve().parents[2] / "tools" / "bounce_labels" / "sisimai.csv"
OWN_CLASS = {"gone": Cause.GONE.value}


def own_labels() -> dict[str, str]:
    """Sample file -> our label, from tools/bounce_labels/sisimai.csv."""
    with open(OWN_LABELS, newline="", encoding="utf-8") as table:
        rows = csv.DictReader(line for line in table if not line.startswith("#"))
        return {row["file"].removeprefix("maildir/"): row["label"] for row in rows}


def read_as(verdict: kinds.Verdict) -> str:
    return verdict.cause.value if verdict.cause else verdict.kind


def figures(counted_only: bool = True, names=None) -> dict[str, dict[str, Counter]]:
    """Per group, how the reader reads each class of reports: Sisimai's class
    -> what we read. A report whose recipients Sisimai puts in different
    classes is "mixed". ``names`` limits it to some files."""
    verdicts, expected, _ = corpus()
    table: dict[str, dict[str, Counter]] = {}
    for name, classes in expected.items():
        if counted_only and name in NOT_COUNTED or names is not None and name not in names:
            continue
        wanted = next(iter(classes)) if len(classes) == 1 else "mixed"
        table.setdefault(group(name), {}).setdefault(wanted, Counter())[
            read_as(verdicts[name])] += 1
    return table


def rates(counts: dict[str, Counter]) -> tuple[int, int, int, int]:
    """(gone read as gone, gone reports, others read as gone, other refusals)."""
    gone = counts.get(Cause.GONE.value, Counter())
    others = Counter()
    for wanted, got in counts.items():
        if wanted in (Cause.SOFT.value, Cause.SENDER.value, Cause.DELAY.value):
            others.update(got)
    return (gone[Cause.GONE.value], sum(gone.values()), others[Cause.GONE.value],
            sum(others.values()))


def test_the_corpus_is_all_there():
    verdicts, expected, _ = corpus()
    assert len(verdicts) >= 620 and len(expected) >= 580
    assert set(expected) <= set(verdicts)
    assert {group(name) for name in verdicts} == set(GROUPS)


@pytest.mark.parametrize("part", ("lhost", "rhost", "rfc"))
def test_reports_of_a_gone_address_read_as_gone(part):
    found, total, _, _ = rates(figures()[part])
    assert total and found >= 0.95 * total, figures()[part]


@pytest.mark.parametrize("part", ("lhost", "rhost", "rfc"))
def test_other_refusals_rarely_read_as_gone(part):
    _, _, wrong, total = rates(figures()[part])
    # At most 2 %: two of lhost's are Yahoo's "This account has been disabled or
    # discontinued", which Sisimai reads as suspended and the reader as gone, in
    # doubt (docs/design/bounces.md#bounces-rules).
    assert total and wrong <= 0.02 * total, figures()[part]


@pytest.mark.parametrize("part", GROUPS)
def test_no_sender_refusal_is_counted_on_the_subscriber(part):
    verdicts, expected, _ = corpus()
    wrong = {name: verdicts[name].cause for name, classes in expected.items()
             if group(name) == part and classes == {Cause.SENDER.value}
             and verdicts[name].cause in (Cause.GONE, Cause.SOFT)}
    assert not wrong


def test_complaints_read_as_complaints():
    verdicts, expected, _ = corpus()
    complaints = [name for name, classes in expected.items() if group(name) == "arf"
                  and classes == {COMPLAINT} and name not in NOT_COUNTED]
    assert len(complaints) >= 13
    assert {name: verdicts[name].kind for name in complaints
            if verdicts[name].kind != kinds.COMPLAINT} == {}
    # and an automatic reply (RFC 3834) is never a failure
    assert not [name for name, classes in expected.items() if classes == {AUTO_REPLY}
                and verdicts[name].kind in (kinds.PERMANENT, kinds.TEMPORARY)]


def test_every_named_string_is_an_address():
    verdicts, _, _ = corpus()
    for name, verdict in verdicts.items():
        for address in verdict.named | set(verdict.readings):
            assert check_email(address).lower() == address, (name, address)


def test_the_corpus_is_read_in_milliseconds_a_message():
    verdicts, _, took = corpus()
    assert took / len(verdicts) < 0.05  # 2-5 ms on a quiet 2-core machine (docs/design/bounces.md#bounces-time)


def test_every_reading_says_what_decided_and_how_sure():
    verdicts, _, _ = corpus()
    readings = [r for v in verdicts.values() for r in v.readings.values()]
    assert all(r.rule for r in readings)
    assert all(r.rule != reasons.BY_NONE or not r.sure for r in readings)
    assert sum(r.sure for r in readings) > len(readings) / 2


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


def test_a_reply_at_hand_over_is_read_with_the_providers_words_too():
    # Outlook's "mailbox unavailable" is its "no such user" (Sisimai's Outlook rhost table)
    text = "Requested action not taken: mailbox unavailable (1234567:890:-2147467259)"
    assert smtp_reason(550, "", text, recipient="x@hotmail.com").cause is Cause.GONE
    assert smtp_reason(550, "", text, recipient="x@hotmail.com").sure
    # from a server that is none of the known providers, the same words read gone
    # only in doubt: the address leaves at a second letter refused so
    reading = smtp_reason(550, "", text, recipient="x@example.org")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)


def test_a_delay_is_not_a_failure_and_giving_up_is_soft():
    assert read("4.4.7", "Connection timed out", "delayed").cause is Cause.DELAY
    assert read("4.4.7", "retry time not reached for any host after a long failure period",
                "failed").cause is Cause.SOFT
    # a 4.x.x code alone is no proof the address is gone
    assert read("4.1.1", "", "failed").cause is Cause.SOFT
    # nor its words: a 4xx is never gone (docs/design/bounces.md#bounces-rules)
    assert read("4.1.1", "450 4.1.1 <a@example.org>: Recipient address rejected: User unknown "
                "in virtual mailbox table (in reply to RCPT TO command)", "failed").cause is Cause.SOFT
    # "user unknown" after the letter's text (Sisimai: filtered) is gone, in doubt
    reading = read("5.0.0", "550 Unknown user a@example.org (in reply to end of DATA command)",
                   "failed")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)


# Misreadings the providers' own words correct, each in the server's words (the
# recipient, the Remote-MTA or reporting host as the report gives them).
@pytest.mark.parametrize(("status", "text", "context", "recipient", "cause", "reason", "rule"), [
    ("5.0.0", "smtp; 550 <x@ezweb.ne.jp>: User unknown", "Reporting-MTA: dns; googlemail.com",
     "x@ezweb.ne.jp", Cause.GONE, "userunknown", reasons.BY_PROVIDER),
    ("5.0.0", "smtp; 554 delivery error: dd This user doesn't have a yahoo.com account "
     "(x@yahoo.com) [0] - mta1234.mail.ne1.yahoo.com", "Remote-MTA: dns; mta5.am0.yahoodns.net",
     "x@yahoo.com", Cause.GONE, "userunknown", reasons.BY_PROVIDER),
    ("5.5.0", "smtp; 550 Requested action not taken: mailbox unavailable (1234567:890:-2147467259)",
     "Remote-MTA: dns; mx1.hotmail.com", "x@hotmail.com", Cause.GONE, "userunknown",
     reasons.BY_PROVIDER),
    # GoDaddy's final answer is the block list; the "User unknown" line is the relay's own guess
    ("5.1.3", "SMTP; 553 http://www.spamhaus.org/query/bl?ip=192.0.2.222",
     ">>> RCPT To:<x@example.com>\n<<< 553 http://www.spamhaus.org/query/bl?ip=192.0.2.222\n"
     "550 5.1.1 <x@example.com>... User unknown\nRemote-MTA: DNS; smtp.secureserver.net",
     "x@example.com", Cause.SENDER, "blocked", reasons.BY_PROVIDER),
    ("5.1.1", "smtp; 550 5.1.1 RCP-P2 http://postmaster.facebook.com/response_codes?ip=192.0.2.135"
     "#rcp Refused due to recipient preferences", "", "x@facebook.com", Cause.SOFT, "filtered",
     reasons.BY_PROVIDER),
    ("5.5.0", "SMTP; 550 5.5.0 Adresse destinataire invalide. Invalid recipient. LPN007_416",
     "Remote-MTA: DNS; smtpz4.laposte.net", "x@laposte.net", Cause.GONE, "userunknown",
     reasons.BY_PROVIDER),
    ("5.1.1", "smtp; 550 5.1.1 <x@example.com> - 198.51.100.225 has sent to too many recipients "
     "this hour. IB607 <http://x.co/rlbounce> (in reply to RCPT TO command)",
     "host smtp.secureserver.net[72.167.238.29] said:", "x@example.com", Cause.SENDER, "speeding",
     reasons.BY_PROVIDER),
])
def test_a_providers_own_words_decide_over_a_misleading_code(status, text, context, recipient, cause, reason, rule):
    reading = read(status, text, "failed", context=context, recipient=recipient)
    assert (reading.cause, reading.reason, reading.rule) == (cause, reason, rule)
    assert reading.sure and reading.words


def test_a_full_mailbox_said_in_the_report_is_soft_whatever_the_dsn_says():
    # rfc3464-01: the report says "Not enough disk space", its DSN 5.1.1 User Unknown
    reading = read("5.1.1", "SMTP; 550 5.1.1 <u@example.jp>... User Unknown", "failed",
                   context="Status: 5.1.1", recipient="u@example.jp",
                   report="Your message to <nekochan> was automatically rejected:\n"
                          "Not enough disk space\n\nReporting-MTA: dns; smtpgw.example.jp")
    assert reading.cause is Cause.SOFT and not reading.sure
    # without those words the same DSN reads as gone, and sure
    reading = read("5.1.1", "SMTP; 550 5.1.1 <u@example.jp>... User Unknown", "failed",
                   recipient="u@example.jp")
    assert (reading.cause, reading.rule, reading.seen, reading.sure) == (
        Cause.GONE, reasons.BY_STATUS, "5.1.1", True)


def test_the_final_answer_of_a_transcript_decides_not_the_first_line_that_matches():
    transcript = ("<x@example.org>: host mx.example.org said:\n>>> RCPT TO:<x@example.org>\n"
                  "<<< 550 5.1.1 <x@example.org>: User unknown\n>>> RCPT TO:<x@example.org>\n"
                  "<<< 554 5.7.1 Service unavailable, Client host [192.0.2.1] blocked using "
                  "zen.spamhaus.org")
    reading = read("", "", "", context=transcript, recipient="x@example.org")
    assert (reading.cause, reading.reason) == (Cause.SENDER, "blocked")
    assert reading.words.startswith("554 5.7.1 Service unavailable")
    # a block list's lookup link is a refusal of our host, whatever Status the relay guessed
    assert read("5.1.3", "SMTP; 553 http://www.spamhaus.org/query/bl?ip=192.0.2.222",
                "failed").cause is Cause.SENDER


def test_a_phrase_alone_is_doubtful_and_the_log_says_so():
    reading = read("", "Unknown user: x@example.org", "", recipient="x@example.org")
    assert reading.rule == reasons.BY_PHRASE and not reading.sure
    assert reading.rule_text().endswith("(doubtful)")
    assert reading.words_text() == "server said: Unknown user: x@example.org"
    # the last reply of a transcript is the server's final answer
    reading = read("5.7.1", "", "failed", context="<<< 250 ok\n<<< 550 5.7.1 Relaying denied")
    assert reading.words == "550 5.7.1 Relaying denied"


def test_each_class_has_a_label_in_both_languages():
    for cause in Cause:
        assert cause.label("en") and cause.label("ru") != cause.label("en")


def without_own_provider() -> dict[str, dict[str, Counter]]:
    """The rhost files, each read with its own provider's table taken out of
    bounces/reading/remote.py (the other providers' kept): how the rules do on a
    provider they were not told about (the manual's held-out figure, no threshold)."""
    from vykhukhol.bounces.reading import remote

    data = corpora.need("sisimai", WHAT)
    cached = remote._table
    whole = cached()
    verdicts = {}
    try:
        for name in {path.name.split("-")[1] for path in (data / "maildir").glob("rhost-*.eml")}:
            others = {key: value for key, value in whole.items() if key != name}
            remote._table = lambda others=others: others  # noqa: B023 - bound per provider
            for path in (data / "maildir").glob(f"rhost-{name}-*.eml"):
                verdicts[path.name] = kinds.classify(path.read_bytes(), "+")
    finally:
        remote._table = cached
    _, expected, _ = corpus()
    table: dict[str, Counter] = {}
    for name, verdict in verdicts.items():
        classes = expected.get(name)
        if classes:
            wanted = next(iter(classes)) if len(classes) == 1 else "mixed"
            table.setdefault(wanted, Counter())[read_as(verdict)] += 1
    return {"rhost": table}


if __name__ == "__main__":  # the manual's figures (docs/design/bounces.md#bounces-corpus)
    if corpora.missing("sisimai", WHAT):
        sys.exit(corpora.missing("sisimai", WHAT))
    _, _, took = corpus()
    for part, counts in sorted(figures().items()):
        found, total, wrong, others = rates(counts)
        print(f"{part}: gone read as gone {found}/{total}, others read as gone {wrong}/{others}")
        for wanted, got in sorted(counts.items()):
            print(f"  {wanted:15} {sum(got.values()):4}  " + ", ".join(
                f"{k}: {v}" for k, v in got.most_common()))
    print("not counted:", ", ".join(sorted(NOT_COUNTED)))
    counts = without_own_provider()["rhost"]
    found, total, wrong, others = rates(counts)
    sender_soft = counts.get(Cause.SENDER.value, Counter())[Cause.SOFT.value]
    print(f"rhost, each without its own provider's table: gone read as gone {found}/{total}, "
          f"others read as gone {wrong}/{others}, sender refusals read as soft {sender_soft}")
    print(f"read in {took:.2f} s: {took / len(corpus()[0]) * 1000:.1f} ms a message")


def test_our_own_labels_name_files_of_the_corpus_and_say_why():
    verdicts, _, _ = corpus()
    with open(OWN_LABELS, newline="", encoding="utf-8") as table:
        rows = list(csv.DictReader(line for line in table if not line.startswith("#")))
    assert rows and all(row["file"].removeprefix("maildir/") in verdicts for row in rows)
    assert all(row["label"] in ("gone", "other", "skip") and row["basis"] for row in rows)


# The shapes of the rules (docs/design/bounces.md#bounces-rules), each read as a mail
# system's report for people (no DSN, no stage named) or as a report's diagnostic.
def people_report(words: str) -> bytes:
    return ("From: MAILER-DAEMON@mx.example.org\nTo: news+bounce@example.com\n"
            "Subject: Returned mail: see transcript for details\n\n"
            "The original message was received at Thu, 3 Dec 2026 10:00:00 +0000\n\n"
            "   ----- The following addresses had permanent fatal errors -----\n"
            f"<anna@example.org>\n    (reason: {words})\n").encode()


def test_a_plain_text_550_no_such_user_with_no_stage_is_gone_in_doubt():
    reading = kinds.classify(people_report("550 No such user"), "+").readings["anna@example.org"]
    assert (reading.cause, reading.sure) == (Cause.GONE, False)
    # with no code at all, the words alone say the same
    reading = kinds.classify(people_report("User not known"), "+").readings["anna@example.org"]
    assert (reading.cause, reading.sure) == (Cause.GONE, False)


def test_a_4xx_unknown_user_is_never_gone():
    reading = kinds.classify(people_report("450 4.1.1 Unknown user"), "+").readings["anna@example.org"]
    assert reading.cause is not Cause.GONE
    assert read("", "451 Unknown user a@example.org (in reply to end of DATA command)",
                "failed").cause is not Cause.GONE


def test_a_user_unknown_that_speaks_of_spam_is_not_gone():
    reading = kinds.classify(people_report("550 User unknown or message looks like spam"),
                             "+").readings["anna@example.org"]
    assert reading.cause is not Cause.GONE
    assert read("5.0.0", "550 5.0.0 User unknown, rejected by policy (in reply to end of DATA "
                "command)", "failed").cause is not Cause.GONE


def test_a_disabled_account_under_5_2_1_is_gone_in_doubt():
    reading = read("5.2.1", "smtp; 550-5.2.1 The email account that you tried to reach is "
                   "disabled. https://support.google.com/mail/?p=DisabledUser - gsmtp", "failed",
                   context="Remote-MTA: dns; gmail-smtp-in.l.google.com", recipient="x@gmail.com")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)
    # the report's note beside its Status saying so does not make it soft
    reading = read("5.2.1", "smtp;550 5.2.1 <x@example.jp>... User Unknown", "failed",
                   context="Status: 5.2.1 (mailbox disabled, not accepting messages)",
                   recipient="x@example.jp")
    assert (reading.cause, reading.sure) == (Cause.GONE, False)
