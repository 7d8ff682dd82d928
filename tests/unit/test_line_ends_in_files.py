"""Every file format ends a line at a line end only
(docs/reference/data-files.md#data-files-lines).

``str.splitlines`` also breaks at U+2028, U+2029, U+0085, \\v, \\f and
\\x1c-\\x1e; a newsletter subject holding U+2028 came back cut at it. Here a
value holding each of those characters (between others: a value is stripped
at its ends when it is written) is written with the module that owns the
format and read back whole: subscriber files, newsletter ledgers, ``.job``
and ``.letter`` files, series letters, ``service.ini``, ``settings.ini``, the
journal, state files and the block flag. The run log folds
every white space to one space by design: there, the message stays one entry.

Real files in the ``site`` fixture's folder.
"""

from __future__ import annotations

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.files import kv, runlog
from vykhukhol.sender import journal
from vykhukhol.services import subscribers as subs
from vykhukhol.services.confirmed import confirmed
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import LedgerState, SubscriberState
from vykhukhol.timeutil import now
from vykhukhol.watch import selfblock

SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
# Each separator once, between words: a reader that breaks at any of them cuts it.
VALUE = "".join(word + sep for word, sep in zip(WORDS, [*SEPARATORS, ""], strict=True))


def subscriber(email: str, name: str) -> Subscriber:
    moment = now().replace(microsecond=0)
    return Subscriber(email=email, name=name, state=SubscriberState.ACTIVE,
                      subscribed=moment, confirmed=moment)


def test_a_subscriber_name_round_trips_through_add_rewrite_and_every_reader(site):
    site.service("news", enabled=False)
    path = svc.find_service(site.data, "news").subscribers_path
    name = VALUE
    subs.add(path, subscriber("a@example.org", name))
    subs.add(path, subscriber("b@example.org", "B"))
    subs.rewrite(path, lambda sub: sub.replace(sent=sub.sent + 1))
    assert [(s.email, s.name, s.sent) for s in subs.subscribers(path)] == [
        ("a@example.org", name, 1), ("b@example.org", "B", 1)]
    assert subs.malformed(path) == []
    assert list(confirmed(path)) == [("a@example.org", name), ("b@example.org", "B")]
    assert subs.find(path, "a@example.org").name == name


def test_a_newsletter_subject_and_recipient_name_round_trip_through_its_files(site):
    site.service("news", enabled=False)
    path = svc.find_service(site.data, "news").subscribers_path
    subs.add(path, subscriber("a@example.org", VALUE))
    subject = VALUE
    job = newsletters.create(site.data, ["news"], subject, f"Text {VALUE}")
    assert newsletters.read_letter(site.data, job) == (subject, f"Text {VALUE}", None)

    list_path = site.data.job(job, "list")
    newsletters.rewrite_rows(list_path, lambda row: newsletters.Row(
        row.index, row.email, row.name, LedgerState.SENT, "-", VALUE))
    assert [(r.email, r.name, r.state, r.lease) for r in newsletters.read_rows(list_path)] == [
        ("a@example.org", VALUE, LedgerState.SENT, VALUE)]

    newsletters.change_job(site.data, job, lambda j: j.values.update(note=VALUE))
    assert newsletters.read_job(site.data, job).values["note"] == VALUE
    assert newsletters.read_job(site.data, job).values["cursor"] == "0"


def test_a_series_letter_subject_round_trips(site):
    service = site.service("news", enabled=False)
    svc.add_letter(service, VALUE, "1h", f"Body {VALUE}\n")
    [letter] = svc.load_letters(svc.find_service(site.data, "news"))
    assert (letter.subject, letter.body, letter.delay) == (
        VALUE, f"Body {VALUE}\n", 3600)


def test_a_service_ini_value_round_trips(site):
    # A confirmation text must carry its link.
    body = f"Hi{VALUE}\nthere: {{{{ confirm_url }}}}"
    site.service("news", enabled=False, confirm_subject=VALUE, confirm_body=body)
    service = svc.find_service(site.data, "news")
    assert (service.confirm_subject, service.confirm_body) == (VALUE, body)


def test_a_settings_value_written_by_hand_survives_reading_and_an_update(site):
    """`settings set` refuses most of these characters as a line break; one typed into
    settings.ini by hand still reads back whole and survives a change to another key."""
    path = site.data.settings
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("smtp_user = ", f"smtp_user = {VALUE}"),
                    encoding="utf-8")
    assert settings_mod.load(path)["mail.smtp_user"] == VALUE
    settings_mod.update(path, {"mail.smtp_port": "2525"})
    loaded = settings_mod.load(path)
    assert (loaded["mail.smtp_user"], loaded["mail.smtp_port"]) == (VALUE, 2525)
    assert loaded.problems == []


def test_a_journal_record_round_trips(site):
    book = journal.Journal(site.data.state / "news.journal", "lease-1")
    book.note(journal.INTENT, "t", "job", VALUE, "0")
    book.note(journal.SENT, "t", "job", VALUE, "0")
    book.close()
    assert [(r.email, r.outcome) for r in book.records()] == [(VALUE, journal.SENT)]


def test_a_state_value_and_the_block_reason_round_trip(site):
    path = site.data.state / "served"
    kv.change_kv(path, lambda values: values.update(news=VALUE))
    assert kv.read_kv(path)["news"] == VALUE
    selfblock.set_block(site.data, VALUE, "12s")
    assert (selfblock.block_reason(site.data), selfblock.block_age(site.data)) == (VALUE, "12s")


def test_a_run_log_message_stays_one_entry(site):
    log = runlog.RunLog(site.data, "lease-1")
    log.write(f"first {VALUE}")
    log.write("second")
    assert [e.message for e in runlog.recent(site.data)][-2:] == [f"first {' '.join(WORDS)}", "second"]

