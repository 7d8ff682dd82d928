"""The subscriber line format (docs/reference/data-formats.md#file-services-db-service-subscribers-txt) and every change made to subscribers.txt.

Real files in ``tmp_path``: the format is parsed from and written to disk the
way the sender and the pages do it. A malformed line is kept verbatim by every
rewrite, skipped by readers and reported — never dropped.
"""

from __future__ import annotations

import string
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vykhukhol import files
from vykhukhol.errors import Conflict
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER, Subscriber, parse_line
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import UTC

T0 = datetime(2026, 11, 29, 17, 0, 0, tzinfo=UTC)

BOB = "bob@example.org\tBob\tactive\t2026-11-01T10:00:00Z\t2026-11-01T10:05:00Z\t1\t2026-11-02T10:05:00Z\t0\t-\t0\t192.0.2.1"
CAROL = "carol@example.org\tCarol\tnew\t2026-11-03T08:00:00Z\t-\t0\t-\t1\t2026-11-06T08:00:00Z\t0\t-"

MALFORMED = {
    "too few fields": "dan@example.org\tDan\tactive",
    "non-numeric count": "dan@example.org\tDan\tactive\t2026-11-01T10:00:00Z\t-\tone\t-\t0\t-\t0\t-",
    "negative count": "dan@example.org\tDan\tactive\t2026-11-01T10:00:00Z\t-\t0\t-\t-2\t-\t0\t-",
    "unknown state": "dan@example.org\tDan\tgone\t2026-11-01T10:00:00Z\t-\t0\t-\t0\t-\t0\t-",
    "no address": "dan at example.org\tDan\tactive\t2026-11-01T10:00:00Z\t-\t0\t-\t0\t-\t0\t-",
    "bad time": "dan@example.org\tDan\tactive\tyesterday\t-\t0\t-\t0\t-\t0\t-",
    "spaces for tabs": "dan@example.org Dan active 2026-11-01T10:00:00Z - 0 - 0 - 0 -",
}
GARBAGE = b"\xff\xfe\x00gar\x80bage \xc3\x28 from an FTP upload"


def write(path: Path, *lines: str) -> Path:
    path.write_bytes(("\n".join((HEADER, *lines)) + "\n").encode("utf-8"))
    return path


def sub(email: str, **fields) -> Subscriber:
    values = {"name": "", "state": SubscriberState.ACTIVE, "subscribed": T0, "confirmed": T0, "ip": "-"}
    values.update(fields)
    return Subscriber(email=email, **values)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "subscribers.txt"


# --- the line format ---------------------------------------------------------

field_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\r\n"), max_size=30)
moments = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1),
                 timezones=st.just(UTC)).map(lambda moment: moment.replace(microsecond=0)),
)
addresses = st.builds(
    "{}@{}.{}".format,
    st.text(string.ascii_letters + string.digits + "._+-", min_size=1, max_size=20),
    st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=20),
    st.sampled_from(["org", "com", "рф", "example"]),
)
counts = st.integers(min_value=0, max_value=10**9)
subscribers_st = st.builds(
    Subscriber,
    email=addresses,
    name=field_text,
    state=st.sampled_from(list(SubscriberState)),
    subscribed=moments, confirmed=moments, sent=counts, last_sent=moments,
    reminders=counts, last_reminder=moments, failures=counts,
    ip=field_text.filter(bool),
    extra=st.lists(field_text, max_size=3),
)


@given(subscribers_st)
def test_a_subscriber_line_parses_back_to_the_same_subscriber(subscriber):
    """to_line → parse_line is the identity, extra trailing fields included."""
    line = subscriber.to_line()
    assert "\n" not in line and "\r" not in line
    assert parse_line(line) == subscriber
    assert parse_line(line).to_line() == line


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(st.lists(subscribers_st, max_size=5, unique_by=lambda s: s.key))
def test_subscribers_written_to_a_file_read_back_the_same(tmp_path, people):
    """Lines written to subscribers.txt read back as the same subscribers, in order."""
    path = tmp_path / "subscribers.txt"
    files.atomic_write(path, [HEADER + "\n"] + [person.to_line() + "\n" for person in people])
    assert list(subs.subscribers(path)) == people
    assert subs.malformed(path) == []


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(st.lists(subscribers_st, max_size=5, unique_by=lambda s: s.key),
       st.lists(st.sampled_from(sorted(MALFORMED.values())), max_size=3))
def test_a_rewrite_that_changes_nothing_leaves_the_file_byte_for_byte(tmp_path, people, broken):
    """rewrite(identity) gives back the very same bytes, malformed lines and extras included."""
    path = tmp_path / "subscribers.txt"
    lines = [person.to_line() for person in people] + broken
    write(path, *sorted(lines))
    before = path.read_bytes()
    assert subs.rewrite(path, lambda s: s) == 0
    assert path.read_bytes() == before


def test_the_header_names_every_field_in_order():
    """The # header line is the field list, tab-separated."""
    assert HEADER == ("#email\tname\tstate\tsubscribed\tconfirmed\tsent\tlast_sent\t"
                      "reminders\tlast_reminder\tfailures\tip")


def test_an_absent_time_is_written_as_a_dash_and_read_as_none():
    """`-` stands for no time; a subscriber never confirmed has confirmed None."""
    carol = parse_line(CAROL)
    assert carol.confirmed is None and carol.last_sent is None
    assert carol.to_line() == CAROL


# --- malformed lines ----------------------------------------------------------

@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_line_is_skipped_and_reported(path, kind):
    """subscribers() skips it; malformed() and counts() report it with its line number."""
    write(path, BOB, MALFORMED[kind], CAROL)
    assert [s.email for s in subs.subscribers(path)] == ["bob@example.org", "carol@example.org"]
    [bad] = subs.malformed(path)
    assert (bad.lineno, bad.text) == (3, MALFORMED[kind])
    assert bad.reason
    assert subs.counts(path) == {"new": 1, "active": 1, "done": 0, "malformed": 1}


@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_line_is_kept_verbatim_in_place_by_rewrite(path, kind):
    """A rewrite that changes every subscriber keeps the bad line as it was, where it was."""
    write(path, BOB, MALFORMED[kind], CAROL)
    changed = subs.rewrite(path, lambda s: s.replace(failures=s.failures + 1))
    assert changed == 2
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == HEADER
    assert lines[2] == MALFORMED[kind]
    assert [s.failures for s in subs.subscribers(path)] == [1, 1]


@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_line_is_kept_verbatim_by_add_many(path, kind):
    """Adding many subscribers at once keeps the bad line too."""
    write(path, BOB, MALFORMED[kind])
    assert subs.add_many(path, [sub("erin@example.org")]) == (1, 0)
    assert MALFORMED[kind] in path.read_text(encoding="utf-8").split("\n")
    assert [s.email for s in subs.subscribers(path)] == ["bob@example.org", "erin@example.org"]


@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_line_survives_add_update_and_remove(path, kind):
    """Every kind of change leaves the bad line in the file."""
    write(path, BOB, MALFORMED[kind], CAROL)
    subs.add(path, sub("erin@example.org"))
    subs.update_one(path, "carol@example.org", lambda s: s.replace(reminders=2))
    subs.remove(path, "bob@example.org")
    assert MALFORMED[kind] in path.read_text(encoding="utf-8").split("\n")
    assert subs.counts(path)["malformed"] == 1


def test_a_line_of_garbage_bytes_is_reported_not_fatal(path):
    """Bytes that are not UTF-8 make a malformed line; reading does not fail."""
    path.write_bytes(HEADER.encode() + b"\n" + BOB.encode() + b"\n" + GARBAGE + b"\n")
    assert [s.email for s in subs.subscribers(path)] == ["bob@example.org"]
    assert len(subs.malformed(path)) == 1
    assert subs.counts(path)["malformed"] == 1


def test_a_line_of_garbage_bytes_is_kept_byte_for_byte_by_rewrite(path):
    """A rewrite keeps a non-UTF-8 line exactly: no byte is replaced by U+FFFD."""
    path.write_bytes(HEADER.encode() + b"\n" + BOB.encode() + b"\n" + GARBAGE + b"\n")
    subs.rewrite(path, lambda s: s.replace(sent=2))
    assert GARBAGE + b"\n" in path.read_bytes()


def test_a_line_of_garbage_bytes_is_kept_byte_for_byte_by_add_many(path):
    """add_many keeps a non-UTF-8 line exactly, too."""
    path.write_bytes(HEADER.encode() + b"\n" + BOB.encode() + b"\n" + GARBAGE + b"\n")
    subs.add_many(path, [sub("erin@example.org")])
    assert GARBAGE + b"\n" in path.read_bytes()


def test_a_subscriber_line_in_another_encoding_is_malformed_and_kept_byte_for_byte(path):
    """A whole line saved in cp1251 by an FTP editor is reported, and no change rewrites it."""
    vasya = "vasya@example.org\tВася\tactive\t2026-11-01T10:00:00Z\t-\t0\t-\t0\t-\t0\t-".encode("cp1251")
    path.write_bytes(HEADER.encode() + b"\n" + BOB.encode() + b"\n" + vasya + b"\n")
    [bad] = subs.malformed(path)
    assert bad.lineno == 3
    subs.rewrite(path, lambda s: s.replace(sent=2))
    subs.add_many(path, [sub("erin@example.org")])
    assert vasya + b"\n" in path.read_bytes()
    assert [s.email for s in subs.subscribers(path)] == ["bob@example.org", "erin@example.org"]


def test_unknown_trailing_fields_are_kept_by_a_rewrite(path):
    """Fields after ip belong to someone else: a change keeps them."""
    write(path, BOB + "\tvip\tsource=fair")
    subs.rewrite(path, lambda s: s.replace(sent=2))
    [bob] = subs.subscribers(path)
    assert (bob.sent, bob.extra) == (2, ["vip", "source=fair"])
    assert path.read_text(encoding="utf-8").split("\n")[1].endswith("\t192.0.2.1\tvip\tsource=fair")


# --- add ---------------------------------------------------------------------

def test_add_to_a_missing_file_writes_the_header_first(path):
    """The first subscriber makes the file: header, then the line."""
    subs.add(path, sub("bob@example.org", name="Bob"))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == HEADER
    assert lines[1].startswith("bob@example.org\tBob\tactive\t")
    assert lines[2:] == [""]


@pytest.mark.parametrize("again", ["BOB@example.org", "Bob@Example.Org", "bob@EXAMPLE.ORG", " bob@example.org"])
def test_add_refuses_an_address_that_differs_only_in_case(path, again):
    """The same address in another case is the same subscriber: Conflict, file unchanged."""
    write(path, BOB, CAROL)
    before = path.read_bytes()
    with pytest.raises(Conflict, match="subscribed already"):
        subs.add(path, sub(again))
    assert path.read_bytes() == before


def test_add_appends_after_a_last_line_without_a_line_break(path):
    """A file edited by hand may lack its final newline: the new line is not glued to it."""
    path.write_bytes((HEADER + "\n" + BOB).encode())
    subs.add(path, sub("erin@example.org"))
    assert [s.email for s in subs.subscribers(path)] == ["bob@example.org", "erin@example.org"]
    assert subs.malformed(path) == []


def test_add_keeps_every_line_already_there(path):
    """Adding appends; the lines before stay byte for byte."""
    write(path, BOB, MALFORMED["unknown state"], CAROL)
    before = path.read_bytes()
    subs.add(path, sub("erin@example.org"))
    assert path.read_bytes().startswith(before)


# --- find --------------------------------------------------------------------

def test_find_is_case_insensitive_and_returns_the_stored_spelling(path):
    """find() matches the whole address in any case and gives the line as stored."""
    write(path, BOB.replace("bob@", "Bob@", 1), CAROL)
    found = subs.find(path, "BOB@EXAMPLE.ORG")
    assert found is not None
    assert (found.email, found.name, found.sent) == ("Bob@example.org", "Bob", 1)


@pytest.mark.parametrize("other", ["bo@example.org", "bob@example.com", "bob@example.org.uk",
                                   "obob@example.org", "carol@example"])
def test_find_does_not_match_a_similar_address(path, other):
    """A prefix or a different domain is another person."""
    write(path, BOB, CAROL)
    assert subs.find(path, other) is None


def test_find_in_a_missing_file_is_none(path):
    """No file, no subscribers."""
    assert subs.find(path, "bob@example.org") is None


def find_by_reading_every_line(path: Path, email: str) -> Subscriber | None:
    """What find() answers, the slow way: the first line whose address is ``email``."""
    wanted = email.strip().lower()
    for line in files.read_lines(path):
        if line.lower().startswith(wanted) and line.split("\t", 1)[0].strip().lower() == wanted:
            try:
                return parse_line(line)
            except Exception:  # noqa: BLE001 - a malformed line is "not found", as in find()
                return None
    return None


line_starts = st.sampled_from(["bob", "Bob", "BOB", "b", "\u212aate", "kate", "\u0130van", "ivan",
                               " bob", "xbob", "Вася", "#bob"])
line_ends = st.sampled_from(["\n", "\r\n", "\r"])


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(st.lists(st.tuples(line_starts, st.sampled_from(["@example.org", "@Example.ORG", "@x.net"]),
                          st.booleans(), line_ends), max_size=8),
       st.sampled_from(["bob@example.org", "kate@example.org", "ivan@x.net", "BOB@X.NET"]),
       st.sampled_from([1, 3, 16, 40, 64, 100, 1 << 20]), st.booleans())
def test_find_answers_as_reading_every_line_does_whatever_the_blocks(
        tmp_path, lines, email, block, cut_last_end):
    """find() skips the lines it need not decode: line ends of any kind, lines cut
    between blocks, characters that lower-case to ASCII (K → k) and malformed
    lines change nothing of its answer."""
    text = "".join(start + domain + (BOB[BOB.index("\t"):] if whole else "\tbroken") + end
                   for start, domain, whole, end in lines)
    path = tmp_path / "subscribers.txt"
    path.write_bytes((text.rstrip("\r\n") if cut_last_end else text).encode())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subs, "_BLOCK", block)
        assert subs.find(path, email) == find_by_reading_every_line(path, email)


# --- update_one and remove ---------------------------------------------------

def test_update_one_changes_that_subscriber_only(path):
    """update_one rewrites one subscriber and leaves the others byte for byte."""
    write(path, BOB, CAROL)
    assert subs.update_one(path, "CAROL@example.org", lambda s: s.replace(state=SubscriberState.ACTIVE,
                                                                         confirmed=T0))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[1] == BOB
    carol = subs.find(path, "carol@example.org")
    assert (carol.state, carol.confirmed, carol.reminders) == (SubscriberState.ACTIVE, T0, 1)


def test_update_one_of_an_unknown_address_is_false_and_writes_nothing(path):
    """Nothing to change: False, and the file keeps its bytes and its time."""
    write(path, BOB, CAROL)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert subs.update_one(path, "erin@example.org", lambda s: s.replace(sent=9)) is False
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert subs.update_one(path.with_name("missing.txt"), "bob@example.org", lambda s: s) is False


def test_remove_deletes_the_subscriber_and_keeps_the_rest(path):
    """remove() takes one line out; a second remove finds nothing."""
    write(path, BOB, MALFORMED["too few fields"], CAROL)
    assert subs.remove(path, "Bob@Example.org") is True
    assert [s.email for s in subs.subscribers(path)] == ["carol@example.org"]
    assert MALFORMED["too few fields"] in path.read_text(encoding="utf-8")
    assert subs.remove(path, "bob@example.org") is False


def test_rewrite_counts_changes_and_deletions_and_shows_kept_lines(path):
    """rewrite returns how many changed (deleted included); on_line sees what is kept."""
    write(path, BOB, CAROL, "erin@example.org\t\tdone\t2026-11-01T10:00:00Z\t-\t2\t-\t0\t-\t0\t-")
    seen = []

    def change(s: Subscriber) -> Subscriber | None:
        if s.state is SubscriberState.DONE:
            return None
        if s.state is SubscriberState.NEW:
            return s.replace(reminders=2, last_reminder=T0 + timedelta(days=1))
        return s

    assert subs.rewrite(path, change, on_line=lambda s: seen.append(s.email)) == 2
    assert seen == ["bob@example.org", "carol@example.org"]
    assert subs.counts(path) == {"new": 1, "active": 1, "done": 0, "malformed": 0}


def test_rewrite_of_a_missing_file_creates_nothing(path):
    """No file: nothing changed and nothing made."""
    assert subs.rewrite(path, lambda s: None) == 0
    assert not path.exists()


# --- add_many ----------------------------------------------------------------

def test_add_many_skips_addresses_already_there_or_twice_in_the_batch(path):
    """(added, already there) counts duplicates against the file and within the batch, by case."""
    write(path, BOB, CAROL)
    added, duplicates = subs.add_many(path, [
        sub("erin@example.org"), sub("BOB@example.org"), sub("Erin@Example.org"), sub("frank@example.org")])
    assert (added, duplicates) == (2, 2)
    assert [s.email for s in subs.subscribers(path)] == [
        "bob@example.org", "carol@example.org", "erin@example.org", "frank@example.org"]


def test_add_many_with_nothing_new_leaves_the_file_alone(path):
    """Only duplicates: no rewrite at all."""
    write(path, BOB, CAROL)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert subs.add_many(path, [sub("bob@example.org")]) == (0, 1)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
