"""Atomic rewrites, journals, record locks and the rename lock under faults (files.py).

The faults (a full disk, a folder the process may not write) are made with
pyfakefs as a non-root user (``allow_root_user=False``: as root every write
would succeed). pyfakefs turns ``fcntl`` locks into no-ops, so the record-lock
timeouts run on real files in ``tmp_path``.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import email_validator  # noqa: F401  (imported before the fake file system replaces the real one)
import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from vykhukhol import files, settings
from vykhukhol.errors import BadInput, LockBusy, StorageError
from vykhukhol.files import RenameLock
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER, parse_line

# The fake file system has no zoneinfo database; a zone already loaded is served
# from ZoneInfo's cache as long as somebody holds it.
_UTC_ZONE = ZoneInfo("UTC")

DISK = Path("/disk")  # a mount point of its own, so its size can be set
OLD = "old line 1\nold line 2\n"
BOB = "bob@example.org\tBob\tactive\t2026-11-01T10:00:00Z\t2026-11-01T10:05:00Z\t1\t-\t0\t-\t0\t-"


@pytest.fixture
def fake() -> Iterator:
    """A fake file system where the test runs as an ordinary user, with /disk mounted."""
    with Patcher(allow_root_user=False) as patcher:
        patcher.fs.add_mount_point(str(DISK), total_size=10_000_000)
        yield patcher.fs


def fill_disk(fs) -> None:
    """Make /disk exactly full: any further byte fails with ENOSPC."""
    fs.set_disk_usage(fs.get_disk_usage(str(DISK)).used, str(DISK))


def make_read_only(folder: Path) -> None:
    os.chmod(folder, 0o555)


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


# --- atomic_write ------------------------------------------------------------

def test_atomic_write_replaces_the_file_and_leaves_no_temp_file(fake):
    """The normal case: the new content, the same name, nothing else in the folder."""
    target = DISK / "a.txt"
    target.write_text(OLD)
    files.atomic_write(target, ["new 1\n", "new 2\n"])
    assert target.read_text() == "new 1\nnew 2\n"
    assert names(DISK) == ["a.txt"]


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(fake):
    """A file the admin made private (0600) stays private after a rewrite."""
    target = DISK / "a.txt"
    target.write_text(OLD)
    os.chmod(target, 0o600)
    files.atomic_write(target, "new\n")
    assert target.stat().st_mode & 0o777 == 0o600


def test_atomic_write_on_a_full_disk_raises_storage_error_and_keeps_the_old_file(fake):
    """No space: StorageError says so and that the old file is kept; no temp file is left."""
    target = DISK / "a.txt"
    target.write_text(OLD)
    fill_disk(fake)
    with pytest.raises(StorageError) as caught:
        files.atomic_write(target, "new content that does not fit\n" * 20)
    message = caught.value.message
    assert "a.txt" in message and "No space left on device" in message
    assert "old file is kept" in message
    assert "\n" not in message
    assert target.read_text() == OLD
    assert names(DISK) == ["a.txt"]


def test_atomic_write_of_a_streamed_file_on_a_full_disk_keeps_the_old_file(fake):
    """A rewrite streamed line by line fails whole: the old file, no temp file."""
    target = DISK / "a.txt"
    target.write_text(OLD)
    fill_disk(fake)
    with pytest.raises(StorageError):
        files.atomic_write(target, (f"line {n}\n" for n in range(5000)))
    assert target.read_text() == OLD
    assert names(DISK) == ["a.txt"]


def test_atomic_write_in_a_read_only_folder_raises_storage_error_and_keeps_the_old_file(fake):
    """Permission denied: StorageError with a clear message; the old file as it was."""
    folder = DISK / "ro"
    folder.mkdir()
    target = folder / "a.txt"
    target.write_text(OLD)
    make_read_only(folder)
    with pytest.raises(StorageError) as caught:
        files.atomic_write(target, "new\n")
    assert "a.txt" in caught.value.message and "Permission denied" in caught.value.message
    assert "old file is kept" in caught.value.message
    assert target.read_text() == OLD
    assert names(folder) == ["a.txt"]


def test_atomic_write_into_a_folder_that_cannot_be_made_raises_storage_error(fake):
    """A missing folder under a read-only one: StorageError, nothing made."""
    make_read_only(DISK)
    with pytest.raises(StorageError):
        files.atomic_write(DISK / "sub" / "a.txt", "new\n")
    assert names(DISK) == []


def test_an_error_while_producing_the_lines_keeps_the_old_file_and_no_temp_file(fake):
    """A change that fails half-way through a streamed rewrite leaves the old file whole."""
    target = DISK / "a.txt"
    target.write_text(OLD)

    def lines() -> Iterator[str]:
        yield "new 1\n"
        raise BadInput("a change refused half-way")

    with pytest.raises(BadInput):
        files.atomic_write(target, lines())
    assert target.read_text() == OLD
    assert names(DISK) == ["a.txt"]


# --- append_line -------------------------------------------------------------

def test_append_line_on_a_full_disk_raises_storage_error(fake):
    """No space for a journal line: StorageError naming the file and the reason."""
    journal = DISK / "run.log"
    journal.write_text("first\n")
    fill_disk(fake)
    with pytest.raises(StorageError) as caught:
        files.append_line(journal, "second line that does not fit")
    assert "run.log" in caught.value.message
    assert "No space left on device" in caught.value.message
    assert journal.read_text().startswith("first\n")


def test_append_line_in_a_read_only_folder_raises_storage_error(fake):
    """A journal that cannot be created: StorageError, no file made."""
    make_read_only(DISK)
    with pytest.raises(StorageError, match="Permission denied"):
        files.append_line(DISK / "run.log", "a line")
    assert names(DISK) == []


def test_append_line_adds_exactly_one_line(fake):
    """A line is added with one line end, whether or not it had one."""
    journal = DISK / "run.log"
    files.append_line(journal, "one")
    files.append_line(journal, "two\n")
    assert journal.read_text() == "one\ntwo\n"


def test_a_journal_with_room_grows_by_zeros_and_closes_to_its_lines(tmp_path):
    """With ``room`` the lines go into zeros written ahead (several growths
    here); while open, readers see the lines and then zeros; close cuts them."""
    from vykhukhol.sender import journal

    path = tmp_path / "db-1.journal"
    book = files.AppendFile(path, room=100)
    lines = [f"intent\tL\t2026-12-01T10:00:00Z\tnews\tu{n}@example.org\t1" for n in range(40)]
    for number, line in enumerate(lines):
        book.append(line, sync=number % 2 == 0)
        if number == 9:
            book.sync()
    held = path.read_bytes()
    body = "".join(line + "\n" for line in lines).encode()
    assert held.startswith(body) and len(held) > len(body) and not held[len(body):].strip(b"\0")
    assert [r.email for r in journal.read(path)] == [f"u{n}@example.org" for n in range(40)]
    book.close()
    assert path.read_bytes() == body


def test_a_journal_killed_with_its_zeros_goes_on_after_its_last_line(tmp_path):
    """kill -9 leaves the zeros written ahead; the next writer starts right
    after the last line, and a reader sees every line once."""
    from vykhukhol.sender import journal

    path = tmp_path / "db-1.journal"
    child = (
        "import os, signal, sys\n"
        "from vykhukhol import files\n"
        "book = files.AppendFile(sys.argv[1], room=1 << 16)\n"
        "for n in range(3):\n"
        "    book.append(f'intent\\tL\\t2026-12-01T10:00:00Z\\tnews\\tk{n}@example.org\\t1')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True)
    assert done.returncode == -9, done.stderr
    held = path.read_bytes()
    lines_end = held.rstrip(b"\0")
    assert lines_end.count(b"\n") == 3 and lines_end.endswith(b"\n")
    assert len(held) > 1 << 16  # the zeros written ahead (room past the first line) were left
    book = files.AppendFile(path, room=1 << 16)
    book.append("sent\tL\t2026-12-01T10:00:01Z\tnews\tk0@example.org\t1")
    book.close()
    text = path.read_text()
    assert "\0" not in text and text.count("\n") == 4
    assert {r.email: r.outcome for r in journal.read(path)} == {
        "k0@example.org": journal.SENT, "k1@example.org": journal.IN_DOUBT,
        "k2@example.org": journal.IN_DOUBT}


def test_a_journal_with_room_on_a_full_disk_raises_storage_error_and_keeps_its_lines(fake):
    """No space for the zeros ahead: StorageError naming the file; the lines
    written before stay."""
    path = DISK / "db-1.journal"
    book = files.AppendFile(path, room=1 << 16)
    book.append("intent\tL\tT\tnews\ta@example.org\t1")
    fill_disk(fake)
    with pytest.raises(StorageError, match="db-1.journal"):
        for _ in range(3000):  # past the first zeros: the next growth does not fit
            book.append("intent\tL\tT\tnews\tb@example.org\t1")
    book.close()
    assert path.read_text().startswith("intent\tL\tT\tnews\ta@example.org\t1\n")


# --- settings and subscribers under faults -----------------------------------

def test_settings_update_on_a_full_disk_keeps_settings_ini(fake):
    """A settings change that cannot be written raises StorageError; settings.ini is intact."""
    path = DISK / "settings.ini"
    settings.write_initial(path, settings.initial("admin@example.org", "https://lists.example.org"))
    before = path.read_bytes()
    fill_disk(fake)
    with pytest.raises(StorageError, match="settings.ini"):
        settings.update(path, {"site_url": "https://lists.example.org/a/much/longer/path"})
    assert path.read_bytes() == before
    assert settings.load(path)["site_url"] == "https://lists.example.org"
    assert [n for n in names(DISK) if not n.endswith(".lock")] == ["settings.ini"]


def test_subscribers_rewrite_in_a_read_only_folder_keeps_the_file(fake):
    """A rewrite the folder refuses raises StorageError; subscribers.txt is as it was."""
    folder = DISK / "news"
    folder.mkdir()
    path = folder / "subscribers.txt"
    path.write_text(HEADER + "\n" + BOB + "\n")
    subs.add(path, parse_line(BOB.replace("bob@", "erin@")))  # an ordinary day: locked once
    before = path.read_bytes()
    make_read_only(folder)
    with pytest.raises(StorageError, match="Permission denied"):
        subs.rewrite(path, lambda s: s.replace(sent=s.sent + 1))
    assert path.read_bytes() == before
    assert [n for n in names(folder) if not n.endswith(".lock")] == ["subscribers.txt"]


def test_subscribers_rewrite_of_a_never_locked_file_in_a_read_only_folder_raises_storage_error(fake):
    """A service as `service add` makes it (no .lock file yet): still StorageError, file intact."""
    folder = DISK / "news"
    folder.mkdir()
    path = folder / "subscribers.txt"
    files.atomic_write(path, HEADER + "\n" + BOB + "\n")
    before = path.read_bytes()
    make_read_only(folder)
    with pytest.raises(StorageError):
        subs.rewrite(path, lambda s: s.replace(sent=s.sent + 1))
    assert path.read_bytes() == before
    assert names(folder) == ["subscribers.txt"]


# --- RenameLock --------------------------------------------------------------

def test_ensure_creates_the_free_file_when_neither_exists(fake):
    """A fresh or copied folder gets its <stem>.free."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    assert lock.free.exists() and not lock.busy.exists()
    assert lock.holder() is None


def test_ensure_does_not_make_a_free_file_beside_a_busy_one(fake):
    """While a run holds the lock, ensure() must not create a second way in."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    lock.acquire("lease-1")
    lock.ensure()
    assert not lock.free.exists() and lock.busy.exists()


def test_acquire_renames_free_to_busy_and_stamps_the_lease_and_time(fake):
    """free → busy; holder() tells the lease and when it was taken (not the free file's age)."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    os.utime(lock.free, (0, 0))  # the free file is years old
    lock.acquire("lease-abc")
    assert not lock.free.exists() and lock.busy.exists()
    holder = lock.holder()
    assert holder is not None and holder.lease == "lease-abc"
    assert abs(holder.since - time.time()) < 60


def test_acquire_of_a_held_lock_raises_lock_busy_and_keeps_the_holder(fake):
    """A second run meets LockBusy; the first run's lease stays on the busy file."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    lock.acquire("lease-1")
    with pytest.raises(LockBusy, match="db.busy"):
        RenameLock(DISK, "db").acquire("lease-2")
    assert lock.holder().lease == "lease-1"


def test_acquire_without_any_lock_file_is_a_storage_error_not_busy(fake):
    """Neither file: not a held lock but a broken folder, said so."""
    with pytest.raises(StorageError, match="missing"):
        RenameLock(DISK, "db").acquire("lease-1")
    assert names(DISK) == []


def test_acquire_in_a_read_only_folder_is_a_storage_error(fake):
    """The rename refused by the folder is a StorageError; the free file stays."""
    folder = DISK / "main"
    folder.mkdir()
    lock = RenameLock(folder, "db")
    lock.ensure()
    make_read_only(folder)
    with pytest.raises(StorageError, match="Permission denied"):
        lock.acquire("lease-1")
    assert lock.free.exists() and not lock.busy.exists()


def test_release_renames_busy_back_to_free(fake):
    """busy → free; the lock can be taken again."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    lock.acquire("lease-1")
    lock.release()
    assert lock.free.exists() and not lock.busy.exists()
    assert lock.holder() is None
    lock.acquire("lease-2")
    assert lock.holder().lease == "lease-2"


def test_release_of_a_lock_not_held_is_a_storage_error(fake):
    """Releasing twice is a mistake that is reported, and the free file stays."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    with pytest.raises(StorageError, match="db.busy"):
        lock.release()
    assert lock.free.exists()


def test_force_free_clears_a_busy_lock(fake):
    """The admin's switch frees a lock a dead run left behind."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    lock.acquire("dead-run")
    assert lock.force_free() is True
    assert lock.free.exists() and not lock.busy.exists()


def test_force_free_removes_a_busy_file_beside_a_free_one(fake):
    """Both files (a half-copied folder): the busy one goes, the free one stays."""
    lock = RenameLock(DISK, "db")
    lock.free.write_text("")
    lock.busy.write_text("dead-run")
    assert lock.force_free() is True
    assert lock.free.exists() and not lock.busy.exists()


def test_force_free_of_a_free_lock_changes_nothing(fake):
    """Nothing held: False, and the free file stays."""
    lock = RenameLock(DISK, "db")
    lock.ensure()
    assert lock.force_free() is False
    assert lock.free.exists() and not lock.busy.exists()


def test_force_free_with_no_lock_file_creates_the_free_one(fake):
    """Neither file: False, and the lock is made usable."""
    lock = RenameLock(DISK, "db")
    assert lock.force_free() is False
    assert lock.free.exists()


# --- record_lock (real files: pyfakefs makes fcntl locks no-ops) -------------

def test_record_lock_held_elsewhere_raises_lock_busy_after_the_timeout(tmp_path):
    """A writer that cannot get the lock in time gets LockBusy naming the file."""
    path = tmp_path / "subscribers.txt"
    with open(f"{path}.lock", "w") as other:  # another open file description: as another process
        fcntl.flock(other, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(LockBusy, match="subscribers.txt is being changed"):
            with files.record_lock(path, timeout=0.3):
                pytest.fail("the lock was taken twice")
        waited = time.monotonic() - started
    assert 0.25 <= waited < 5


def test_record_lock_excludes_another_thread_of_the_same_process(tmp_path):
    """Two threads (as in `vykhukhol serve`) never hold one record lock together."""
    path = tmp_path / "settings.ini"
    outcome: list[BaseException | None] = []

    def second_writer() -> None:
        try:
            with files.record_lock(path, timeout=0.2):
                outcome.append(None)
        except LockBusy as exc:
            outcome.append(exc)

    with files.record_lock(path, timeout=0.2):
        thread = threading.Thread(target=second_writer)
        thread.start()
        thread.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], LockBusy)


def test_record_lock_held_by_another_process_raises_lock_busy(tmp_path):
    """Across processes, as between a CGI writer and the sender."""
    path = tmp_path / "subscribers.txt"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, sys, time\n"
         "with open(sys.argv[1], 'w') as lock:\n"
         "    fcntl.flock(lock, fcntl.LOCK_EX)\n"
         "    print('held', flush=True)\n"
         "    time.sleep(30)\n",
         f"{path}.lock"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockBusy):
            with files.record_lock(path, timeout=0.3):
                pass
    finally:
        holder.kill()
        holder.wait()
    with files.record_lock(path, timeout=5):
        pass  # free again once the holder is gone


def test_record_lock_makes_the_missing_folder_of_its_file(tmp_path):
    """As filelock did: the first write of a file in a new folder (the
    archive's entries file) takes its lock before the folder is there."""
    path = tmp_path / "archive" / "news" / "entries.txt"
    with files.record_lock(path, timeout=0.3):
        files.atomic_write(path, "one\n")
    assert path.read_text() == "one\n"
    assert (path.parent.stat().st_mode & 0o777) == files.masked(files.FOLDER_MODE)


def test_record_lock_is_released_when_the_body_fails(tmp_path):
    """An error inside the locked block propagates and frees the lock."""
    path = tmp_path / "settings.ini"
    with pytest.raises(BadInput):
        with files.record_lock(path, timeout=0.3):
            raise BadInput("refused")
    with files.record_lock(path, timeout=0.3):
        pass


def test_record_lock_turns_an_os_error_of_its_block_into_a_storage_error(tmp_path):
    """The block's OSError reads as the file's StorageError, and frees the lock."""
    path = tmp_path / "served"
    with pytest.raises(StorageError, match="cannot lock served: no room"):
        with files.record_lock(path, timeout=0.3):
            raise OSError(28, "no room")
    with open(f"{path}.lock", "w") as other:  # free: another description takes it at once
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_record_lock_is_reentrant_within_a_thread_and_held_to_the_outer_end(tmp_path):
    path = tmp_path / "settings.ini"
    with files.record_lock(path, timeout=0.3):
        with files.record_lock(path, timeout=0.3):
            pass
        with open(f"{path}.lock", "w") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # still held by the outer block
    with open(f"{path}.lock", "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_quick_record_lock_is_the_same_lock(tmp_path):
    """The idle tick's plain lock keeps out a record lock, and frees it after."""
    path = tmp_path / "served"
    with files.quick_record_lock(path, timeout=0.3):
        with pytest.raises(LockBusy):
            with files.record_lock(path, timeout=0):
                pytest.fail("the lock was taken twice")
    with files.record_lock(path, timeout=0):
        pass
