"""The due index beside a subscriber file (docs/design/run.md#due-index) may make a run slower,
never wrong: runs with the index damaged, truncated, deleted or out of date
between them, and with the subscriber file edited by hand, send the same
letters and leave the same files as runs that build it afresh every time."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from vykhukhol import services as svc
from vykhukhol.sender import dueindex, serial
from vykhukhol.services import due_summary, subscriber_line
from vykhukhol.services import rules as series
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber, parse_line
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

HOUR, DAY = 3600, 86400
SERIES = [("One {{ name }}", "0s", "Hello {{ name }}, one."),
          ("Two", "1d", "Two."), ("Three", "2d", "Three.")]


def populate(site) -> Path:
    """A course with every kind of line: due letters (more than a run's quota),
    later ones, reminders, the expired, the finished, the failing, comments,
    malformed lines and a CRLF line."""
    site.set(serial_per_run=7, reminder_period="1d", reminder_count=2)
    service = site.service("course", letters=SERIES, delete_finished="no")
    for i in range(30):
        site.subscriber("course", f"due{i}@example.org", name=f"D{i}", ago=HOUR * (40 - i % 7))
    for i in range(6):
        site.subscriber("course", f"later{i}@example.org", sent=1, last_sent_ago=HOUR * i * 5)
    for i in range(5):
        site.subscriber("course", f"ask{i}@example.org", state="new", ago=DAY + HOUR * i)
    site.subscriber("course", "expired@example.org", state="new", ago=5 * DAY, reminders=2,
                    last_reminder_ago=2 * DAY)
    site.subscriber("course", "finished@example.org", sent=3, last_sent_ago=DAY)
    site.subscriber("course", "failing@example.org", failures=5)
    site.subscriber("course", "far@example.org", sent=1, last_sent_ago=-60 * DAY)
    path = service.subscribers_path
    with path.open("ab") as out:
        out.write(b"# a note left by the owner\n\n")
        out.write(b"broken line without tabs\n")
        out.write(b"crlf@example.org\tCr\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-\r\n")
        out.write("uni@example.org\tЮникод Ünï\tactive\t-\t2020-01-02T00:00:00Z\t1\t"
                  "2020-01-03T00:00:00Z\t0\t-\t0\t-\n".encode())
    return path


def edit_by_hand(path: Path, step: int) -> None:
    """What an owner does over FTP between runs (the same in both series)."""
    text = path.read_bytes()
    if step == 2:  # a count changed in place, a line added in the middle, CRLF
        text = text.replace(b"later0@example.org\t\tactive", b"later0@example.org\tL\tactive", 1)
        head, _, tail = text.partition(b"\n")
        text = head + b"\nnew@example.org\tN\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-\r\n" \
            + tail
    elif step == 4:  # lines appended, the last without a line end
        text += b"tail1@example.org\tT\tnew\t2020-01-01T00:00:00Z\t-\t0\t-\t0\t-\t0\t-\n"
        text += b"tail2@example.org\tT\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-"
    elif step == 6:  # a line deleted by hand
        text = b"\n".join(line for line in text.split(b"\n")
                          if not line.startswith(b"due20@"))
    elif step == 8:  # a date changed in place, same length, same file: now due
        line = next(line for line in text.split(b"\n") if line.startswith(b"far@"))
        fields = line.split(b"\t")
        fields[6] = b"2020" + fields[6][4:]
        text = text.replace(line, b"\t".join(fields))
        with path.open("r+b") as out:
            out.write(text)
        return
    else:
        return
    path.write_bytes(text)


def damage(index: Path, step: int, old: bytes | None) -> None:
    """The index hurt between runs: corrupt, truncated, deleted, out of date."""
    if not index.exists():
        return
    body = bytearray(index.read_bytes())
    if step == 1:
        for at in range(len(body) // 3, len(body), 5):
            body[at] ^= 0x5A
        index.write_bytes(bytes(body))
    elif step == 2:
        index.unlink()
    elif step == 3:
        index.write_bytes(bytes(body[:len(body) * 2 // 3]))
    elif step == 5:
        index.write_bytes(b"")
    elif step == 7 and old is not None:
        index.write_bytes(old)  # an index of an earlier file


def letters(site) -> list[tuple[str, str]]:
    sent = sorted((str(m["To"]), str(m["Subject"])) for m in site.outbox())
    shutil.rmtree(site.data.outbox, ignore_errors=True)
    return sent


def series_of_runs(site, path: Path, keep_index: bool, monkeypatch, base) -> list:
    """Nine runs over nine days from ``base``; what each sent and left."""
    index = site.data.state / "index" / "course.due"
    moments = [base, base + timedelta(minutes=5), base + timedelta(hours=3),
               base + timedelta(days=1, hours=2), base + timedelta(days=1, hours=3),
               base + timedelta(days=2, hours=5), base + timedelta(days=3, hours=4),
               base + timedelta(days=5), base + timedelta(days=9)]
    real = serial.send_letters

    def subscribe_meanwhile(run, work, book):
        real(run, work, book)
        subs.add(path, Subscriber(f"meanwhile{len(results)}@example.org", "M",
                                  SubscriberState.ACTIVE, run.now(), run.now()))

    results, first = [], None
    for step, moment in enumerate(moments):
        edit_by_hand(path, step)
        if keep_index:
            damage(index, step, first)
        else:
            dueindex.remove(index)
        with pytest.MonkeyPatch.context() as patch:
            if step in (3, 6):
                patch.setattr(serial, "send_letters", subscribe_meanwhile)
            report = site.run_at(moment)
        assert "error" not in site.log().lower(), site.log()
        if first is None and index.exists():
            first = index.read_bytes()
        results.append((letters(site), path.read_bytes(), due_summary.read_due(site.data, "course")[0],
                        site.sent_counts(report)))
    return results


@pytest.mark.parametrize("mark_every", [dueindex.MARK_EVERY, 300], ids=["4MB", "300B"])
def test_a_damaged_or_stale_index_changes_nothing_a_run_does(site, monkeypatch, mark_every):
    """(With marks every 300 bytes, an edit keeps the index before it.)"""
    monkeypatch.setattr(dueindex, "MARK_EVERY", mark_every)
    path = populate(site)
    root = site.data.root
    start = root.parent / "start"
    shutil.copytree(root, start)
    base = now() + timedelta(minutes=1)
    with_index = series_of_runs(site, path, True, monkeypatch, base)
    shutil.rmtree(root)
    shutil.copytree(start, root)
    without = series_of_runs(site, path, False, monkeypatch, base)
    for step, (ours, theirs) in enumerate(zip(with_index, without, strict=True)):
        assert ours == theirs, f"after run {step + 1}"
    total = sum(len(sent) for sent, *_ in with_index)
    assert total >= 55  # the runs did send: letters, reminders, over several days
    final = {s.email for s in subs.subscribers(path)}
    assert "expired@example.org" not in final and "failing@example.org" not in final
    assert {"meanwhile3@example.org", "meanwhile6@example.org", "tail2@example.org"} <= final
    assert "due20@example.org" not in final
    assert [sent for sent, *_ in with_index][-1].count(("far@example.org", "Two")) == 1
    members = {s.email: s for s in subs.subscribers(path)}
    assert members["due0@example.org"].sent >= 2 and members["tail2@example.org"].sent >= 1
    assert b"# a note left by the owner" in path.read_bytes()


def test_a_run_with_a_sound_index_reads_only_the_lines_it_takes(site, monkeypatch):
    """The second run trusts the index and parses only the lines it sends to."""
    populate(site)
    site.set(serial_per_run=3)
    site.run_at(now() + timedelta(minutes=1))
    letters(site)
    assert (site.data.state / "index" / "course.due").exists()
    parsed = []
    real = parse_line
    for module in (subs, subscriber_line):  # the rewrite's reads and the index's own
        monkeypatch.setattr(module, "parse_line", lambda line: parsed.append(line) or real(line))
    site.run_at(now() + timedelta(minutes=2))
    monkeypatch.undo()
    # 3 letters and the reminders; the expired and failing went in the first run.
    assert 3 <= len(parsed) <= 3 + 5, parsed
    sent = letters(site)
    assert len(sent) == 3, sent


def test_lines_appended_are_read_without_reading_the_rest(site, monkeypatch):
    populate(site)
    site.run_at(now() + timedelta(minutes=1))
    site.subscriber("course", "added@example.org", ago=60)
    parsed = []
    real, quick = parse_line, dueindex.quick_due
    for module in (subs, subscriber_line):  # the rewrite's reads and the index's own
        monkeypatch.setattr(module, "parse_line", lambda line: parsed.append(line) or real(line))
    monkeypatch.setattr(dueindex, "quick_due",
                        lambda line, rules: parsed.append(line) or quick(line, rules))
    site.run_at(now() + timedelta(minutes=2))
    monkeypatch.undo()
    assert any(line.startswith("added@") for line in parsed)
    assert len(parsed) < 30, len(parsed)  # the appended line and the taken ones, not the file


WRITER = r"""
import sys
from pathlib import Path
from vykhukhol.sender import dueindex
source, target = Path(sys.argv[1]), Path(sys.argv[2])
index = dueindex.load(source, sys.argv[3])
big = dueindex.Index(index.fingerprint, index.covered, index.crc, index.stamp)
for _ in range(20000):
    big.offsets.extend(index.offsets); big.dues.extend(index.dues); big.kinds.extend(index.kinds)
print("ready", flush=True)
while True:
    dueindex.save(target, big)
    dueindex.save(target, index)
"""


def test_a_kill_during_the_index_write_leaves_a_usable_state(site, tmp_path):
    """kill -9 while the index is written over and over (a large and the true
    one in turn): it is the old or the new one, or detected; the next run
    sends what a run without an index sends."""
    from support.servetools import subprocess_env

    path = populate(site)
    site.run_at(now() + timedelta(minutes=1))
    letters(site)
    index = site.data.state / "index" / "course.due"
    keep = tmp_path / "index.keep"
    shutil.copy(index, keep)
    fingerprint = series.rules_of(site.settings(),
                                  svc.find_service(site.data, "course")).fingerprint()
    reference_root = tmp_path / "reference"
    shutil.copytree(site.data.root, reference_root)
    for attempt in range(6):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(keep), str(index), fingerprint],
                                  stdout=subprocess.PIPE, env=subprocess_env())
        assert writer.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.07 * attempt)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        loaded = dueindex.load(index, fingerprint)
        assert loaded is not None  # atomic: an old or a new index, never half of one
        assert len(loaded.kinds) in (len(dueindex.load(keep, fingerprint).kinds),
                                     20000 * len(dueindex.load(keep, fingerprint).kinds))
    moment = now() + timedelta(hours=2)
    site.run_at(moment)
    ours = (letters(site), path.read_bytes())
    for leftover in index.parent.glob(".course.due.*.tmp"):
        leftover.unlink()
    site.root = reference_root
    dueindex.remove(site.data.state / "index" / "course.due")
    site.run_at(moment)
    assert ours == (letters(site), site.data.root.joinpath(
        path.relative_to(tmp_path / "data")).read_bytes())


@pytest.mark.parametrize("text", [
    b"a@x.org\tA\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-\r"
    b"b@x.org\tB\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-\r\n\r\n#c\rbad\n",
    b"\xff\xfe@x.org\tA\tactive\t-\t2020-01-01T00:00:00Z\t0\t-\t0\t-\t0\t-",
])
def test_the_index_splits_lines_as_the_file_reader_does(tmp_path, text):
    from vykhukhol import files

    path = tmp_path / "subscribers.txt"
    path.write_bytes(text)
    lines = [line for line in files.read_lines(path) if line]
    pieces = []
    with open(path, "rb") as handle:
        at = 0
        for raw in handle:
            for offset, piece, length in dueindex._pieces(raw, at):
                assert text[offset:offset + length].decode("utf-8", "surrogateescape") \
                    .rstrip("\r\n") == piece
                pieces.append(piece)
            at += len(raw)
    assert [piece for piece in pieces if piece] == lines


def test_an_index_damaged_anywhere_is_not_loaded(tmp_path):
    """Any byte changed, or the file cut short, and the index is not used."""
    index = dueindex.Index("rules", 300, 7, "300:1:2")
    for i in range(5):
        index.offsets.append(60 * i)
        index.dues.append(1.7e9 + i)
        index.kinds.append(dueindex.SEND)
    path = tmp_path / "index-x"
    dueindex.save(path, index)
    whole = path.read_bytes()
    assert dueindex.load(path, "rules") == index
    assert dueindex.load(path, "other rules") is None
    for at in range(len(whole)):
        damaged = bytearray(whole)
        damaged[at] ^= 0x01
        path.write_bytes(bytes(damaged))
        assert dueindex.load(path, "rules") in (None, index), at
    for cut in range(len(whole)):
        path.write_bytes(whole[:cut])
        assert dueindex.load(path, "rules") is None, cut


def test_an_edit_by_hand_costs_reading_the_file_from_the_edit_on(site, monkeypatch):
    """The marks the splice kept let the index keep the part before an edit."""
    monkeypatch.setattr(dueindex, "MARK_EVERY", 300)
    path = populate(site)
    for i in range(40):
        site.subscriber("course", f"more{i}@example.org", sent=1, last_sent_ago=-30 * DAY)
    site.run_at(now() + timedelta(minutes=1))
    site.run_at(now() + timedelta(minutes=2))  # its index: the splice's marks
    text = path.read_bytes()
    at = text.index(b"more35@")
    with path.open("r+b") as out:  # a name changed in place near the end
        out.seek(at)
        out.write(b"MORE35@")
    read = []
    real, quick = parse_line, dueindex.quick_due
    for module in (subs, subscriber_line):  # the rewrite's reads and the index's own
        monkeypatch.setattr(module, "parse_line", lambda line: read.append(line) or real(line))
    monkeypatch.setattr(dueindex, "quick_due",
                        lambda line, rules: read.append(line) or quick(line, rules))
    site.run_at(now() + timedelta(minutes=3))
    monkeypatch.undo()
    lines = len(path.read_bytes().splitlines())
    assert any(line.startswith("MORE35@") for line in read)
    assert len(read) < 25 < lines, (len(read), lines)


def test_an_index_naming_a_line_twice_sends_no_letter_twice(site, tmp_path):
    """An index whose checksums hold but which names each line twice (as a
    bug could write it): the run notices, reads the file again, and sends
    what a run without an index sends."""
    path = populate(site)
    site.run_at(now() + timedelta(minutes=1))
    letters(site)
    reference = tmp_path / "reference"
    shutil.copytree(site.data.root, reference)
    index_at = site.data.state / "index" / "course.due"
    fingerprint = series.rules_of(site.settings(),
                                  svc.find_service(site.data, "course")).fingerprint()
    index = dueindex.load(index_at, fingerprint)
    doubled = dueindex.Index(index.fingerprint, index.covered, index.crc, index.stamp)
    for i in range(len(index.offsets)):
        for _ in range(2):
            doubled.offsets.append(index.offsets[i])
            doubled.dues.append(index.dues[i])
            doubled.kinds.append(index.kinds[i])
    dueindex.save(index_at, doubled)
    moment = now() + timedelta(hours=2)
    site.run_at(moment)
    ours = (letters(site), path.read_bytes())
    assert len(set(ours[0])) == len(ours[0]), ours[0]
    site.root = reference
    dueindex.remove(site.data.state / "index" / "course.due")
    site.run_at(moment)
    assert ours == (letters(site), (reference / path.relative_to(tmp_path / "data")).read_bytes())
