"""Disk faults at every write site of a sender run: no space left on the
device, and permission denied (every rewrite is atomic:
docs/reference/data-files.md#data-files-writes; docs/design/run.md#run-steps).

The installation lives on a pyfakefs disk of its own, and the test runs as an
ordinary user (``allow_root_user=False``: as root every write would succeed).
A run of ``sender.run`` sends a newsletter, series letters and reminders
through the outbox; the fault strikes the n-th write at one site — the
subscriber rewrite, the ledger rewrite, the job file, a journal append, a
state file, a log append, an outbox letter — by filling the disk or making
the folder (and an appended file) read-only just before that write. The
fault is either *transient* (only that write fails: a moment of full disk)
or *persistent* (it stays until the run is over).

Checked each time: the file whose write failed is intact (byte for byte, no
temporary file left); no exception escapes ``sender.run``; the run's log
(when the log itself is writable) says what failed and ends with its "run
ended" line; every data file parses and no subscriber is lost; the run gives
its locks back; and once the disk is fixed, later runs finish the work with
no letter twice and every letter sent or in doubt.

pyfakefs makes ``fcntl`` locks no-ops (one process here, so no matter) and
has no zoneinfo database: the zone the settings name is loaded before the
fake file system replaces the real one.

The campaign is exhaustive and fast, so its long version is the same
(``VYKHUKHOL_LONG=1`` adds later occurrences of each site).
"""

from __future__ import annotations

import errno
import os
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import email_validator  # noqa: F401  (imported before the fake file system replaces the real one)
import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from support.faultkit import LONG, assert_data_parses, in_doubt, log_entries, subscriber_sets
from vykhukhol import cli, files, mail, newsletters, sender
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir
from vykhukhol.errors import StorageError
from vykhukhol.sender import doors as locks
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now
from vykhukhol.watch import selfblock

# The fake file system has no zoneinfo database; a zone already loaded is served
# from ZoneInfo's cache as long as somebody holds it.
_UTC_ZONE = ZoneInfo("UTC")

DISK = Path("/disk")
TOTAL = 200_000_000
ROOT = DISK / "data"

SITES: dict[str, tuple[Callable[[Path], bool], tuple[int, ...]]] = {
    # site: (which paths, which of its writes in a run the fault strikes)
    "subscriber rewrite": (lambda p: p.name == "subscribers.txt", (1,)),
    "ledger rewrite": (lambda p: p.suffix == ".list", (1,)),
    "job file": (lambda p: p.suffix == ".job", (1, 2)),
    # (write #1 of a journal is opening it, then one per line)
    "journal append": (lambda p: p.suffix == ".journal", (1, 2, 3, 7) if LONG else (1, 2, 3)),
    "state files": (lambda p: p.parent.name == "state" and p.suffix != ".journal",
                    (1, 2, 3) if LONG else (1, 2)),
    "log append": (lambda p: p.name == "run.log", (1, 2, 3) if LONG else (1, 2)),
    "outbox write": (lambda p: p.suffix == ".eml", (1, 2, 9) if LONG else (1, 2)),
}
KINDS = {"no space": errno.ENOSPC, "permission denied": errno.EACCES}
CASES = [(site, kind, mode, n) for site, (_, ns) in SITES.items() for n in ns
         for kind in KINDS for mode in ("transient", "persistent")]


# --- the installation -----------------------------------------------------------

def _import_the_whole_package() -> None:
    """Every module of vykhukhol loaded before the fake disk: pyfakefs unloads
    what was first imported during its session, and a module that keeps a
    reference to such a one (the admin's dashboard to watch.cronwatch) would
    then call the fake ``os`` in later tests (seen: test_pace's Status page)."""
    import importlib
    import pkgutil

    import vykhukhol

    for module in pkgutil.walk_packages(vykhukhol.__path__, "vykhukhol."):
        if module.name.rpartition(".")[2] not in ("__main__", "wsgi"):
            importlib.import_module(module.name)


@pytest.fixture
def fake() -> Iterator:
    _import_the_whole_package()
    with Patcher(allow_root_user=False) as patcher:
        patcher.fs.add_mount_point(str(DISK), total_size=TOTAL)
        yield patcher.fs


def install() -> tuple[DataDir, set[tuple[str, str]]]:
    """A working installation with a newsletter, a two-letter series and reminders
    due; returns it and every (recipient, subject) the sender owes."""
    (DISK / "cgi").mkdir(parents=True)
    (DISK / "cgi" / "cron.py").write_text("# shipped\n")
    for args in (["init", "--admin-email", "admin@example.org", "--password", "correct-horse-1",
                  "--cgi-dir", str(DISK / "cgi")], ["mode", "working"]):
        assert cli.main(["--data", str(ROOT), *args]) == 0
    data = DataDir(ROOT)
    svc.add_db(data, "main")
    course = svc.add_service(data, "course", "main", {"title": "Course"})
    for subject in ("Lesson 1", "Lesson 2"):
        svc.add_letter(course, subject, "0s", f"{subject}.\n")
    svc.edit_service(data, "course", {"enabled": "yes"})
    hour_ago, days_ago = now() - timedelta(hours=1), now() - timedelta(days=4)
    active = [f"a{i}@example.org" for i in range(6)]
    pending = [f"n{i}@example.org" for i in range(2)]
    subs.add_many(course.subscribers_path,
                  [Subscriber(email=e, state=SubscriberState.ACTIVE, subscribed=hour_ago,
                              confirmed=hour_ago) for e in active]
                  + [Subscriber(email=e, subscribed=days_ago) for e in pending])
    newsletters.create(data, ["course"], "Edition 1", "Hello.\n")
    owed = {(e, s) for e in active for s in ("Edition 1", "Lesson 1", "Lesson 2")}
    owed |= {(e, "Please confirm your subscription: Course") for e in pending}
    settings_mod.update(data.settings, {"language": "en"})
    return data, owed


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def outbox_letters(data: DataDir) -> Counter:
    found: Counter = Counter()
    for path in mail.list_outbox(data.outbox):
        message = mail.read_outbox(path)
        to = message["To"].addresses[0].addr_spec
        if to != "admin@example.org":
            found[(to, str(message["Subject"]))] += 1
    return found


# --- the fault --------------------------------------------------------------------

class Fault:
    """Strikes the ``occurrence``-th write at one site with a real fault of the fake disk."""

    def __init__(self, fs, site: str, kind: str, persistent: bool, occurrence: int) -> None:
        self.fs, self.kind, self.persistent, self.occurrence = fs, kind, persistent, occurrence
        self.matches = SITES[site][0]
        self.calls = 0
        self.struck: Path | None = None
        self.raised: BaseException | None = None
        self.not_intact: list[str] = []
        self._modes: list[tuple[Path, int]] = []
        self._inside = False
        self.harmless = False  # the struck write went through all the same

    def install(self, monkeypatch) -> None:
        # (a subscriber file is rewritten by splice since the due index: the
        # changed lines replaced, every other byte copied through)
        for name in ("atomic_write", "atomic_write_bytes", "splice", "append_line"):
            monkeypatch.setattr(files, name, self._wrap(getattr(files, name)))
        # A journal is held open for the run: opening it and each line are writes.
        # Its zeros written ahead would keep a full disk from striking a line
        # (files.AppendFile's room): here every line needs new room.
        from vykhukhol.sender import journal

        monkeypatch.setattr(journal, "ROOM", 1)
        for name in ("__init__", "append"):
            monkeypatch.setattr(files.AppendFile, name,
                                self._wrap(getattr(files.AppendFile, name), method=True))

    def _wrap(self, write: Callable, method: bool = False) -> Callable:
        def faulty(*args, **kwargs):
            if self._inside:  # append_line opens and appends: one write, counted once
                return write(*args, **kwargs)
            target = Path(args[0].path if method and write.__name__ == "append" else
                          args[1] if method else args[0])
            self._inside = True
            try:
                if self.struck is None and self.matches(target):
                    self.calls += 1
                    if self.calls == self.occurrence:
                        return self._strike(write, target, args, kwargs)
                return write(*args, **kwargs)
            finally:
                self._inside = False
        return faulty

    def _strike(self, write: Callable, target: Path, args, kwargs):
        self.struck = target
        appending = write.__name__ in ("append_line", "__init__", "append")
        before = target.read_bytes() if target.exists() else None
        others = set(os.listdir(target.parent)) if target.parent.exists() else set()
        self.on(target)
        try:
            done = write(*args, **kwargs)
            self.harmless = True
            return done
        except BaseException as exc:
            self.raised = exc
            after = target.read_bytes() if target.exists() else None
            if after != before and not (before is None and after == b"" and appending):
                self.not_intact.append(f"{target.name} changed by the failed write")
            left = set(os.listdir(target.parent)) - others if target.parent.exists() else set()
            left.discard(target.name)  # an append may create its file before the write fails
            if left:
                self.not_intact.append(f"the failed write left {sorted(left)}")
            raise
        finally:
            if not self.persistent:
                self.off()

    def on(self, target: Path) -> None:
        if self.kind == "no space":
            self.fs.set_disk_usage(self.fs.get_disk_usage(str(DISK)).used, str(DISK))
            return
        for path in (target.parent, target):
            if path.exists():
                self._modes.append((path, path.stat().st_mode & 0o777))
                os.chmod(path, 0o555 if path.is_dir() else 0o444)

    def off(self) -> None:
        self.fs.set_disk_usage(TOTAL, str(DISK))
        while self._modes:
            path, mode = self._modes.pop()
            os.chmod(path, mode)

    @property
    def log_writable(self) -> bool:
        """Whether the log could be written at the end of the run."""
        if not self.persistent:
            return True
        return self.kind != "no space" and not self.hit_the_log

    @property
    def hit_the_log(self) -> bool:
        # (compared as text: ROOT is a real path, the struck one a fake file system's)
        return self.struck is not None and str(self.struck.parent) == str(ROOT / "log")


def doubted(data: DataDir) -> set[tuple[str, str]]:
    """(recipient, subject) of the letters the log says are in doubt."""
    subjects = {"1": "Lesson 1", "2": "Lesson 2", "news": "Edition 1",
                "reminder": "Please confirm your subscription: Course"}
    return {(email, subjects[item]) for _, item, email in in_doubt(data)}


def free_locks(data: DataDir) -> list[str]:
    """Locks left busy (freed, as the admin's debug→working switch would once the
    process is gone); returns their names."""
    left = []
    for lock in [newsletters.lock(data)] + [svc.db_lock(data, db) for db in svc.list_dbs(data)]:
        if lock.busy.exists():
            left.append(str(lock.busy.relative_to(data.root)))
            lock.force_free()
    return left


# --- the campaign -------------------------------------------------------------------

@pytest.mark.parametrize("site_name, kind, mode, occurrence", CASES,
                         ids=[f"{s}-{k}-{m}-{n}".replace(" ", "_") for s, k, m, n in CASES])
def test_a_disk_fault_at_a_write_site_keeps_old_files_and_ends_the_run_cleanly(
        fake, monkeypatch, site_name, kind, mode, occurrence):
    """The failed write leaves its file intact, nothing escapes sender.run, the log says why, nothing lost or doubled."""
    data, owed = install()
    members = subscriber_sets(data)
    fault = Fault(fake, site_name, kind, mode == "persistent", occurrence)
    fault.install(monkeypatch)
    problems: list[str] = []
    report = None
    try:
        report = sender.run(data, settings_mod.load(data.settings))
    except BaseException as exc:  # noqa: BLE001 - anything escaping is the finding
        problems.append("escaped sender.run: " + "".join(
            traceback.format_exception_only(type(exc), exc)).strip())
        problems.append("".join(traceback.format_exception(exc))[-1500:])
    finally:
        fault.off()
        monkeypatch.undo()
    if fault.struck is None:
        pytest.skip(f"a run makes fewer than {occurrence} writes at the {site_name}")
    if fault.harmless:  # as on a real disk: an open file takes writes whatever its mode,
        # and creating an empty file needs no space
        pytest.skip(f"the fault does not strike write #{occurrence} at the {site_name}")
    problems += fault.not_intact
    if fault.raised is not None and not isinstance(fault.raised, StorageError):
        problems.append(f"the failed write raised {fault.raised!r}, not StorageError")

    reason = os.strerror(KINDS[kind])
    if report is not None:
        said = [e.message for e in log_entries(data) if e.lease == report.lease]
        if fault.log_writable and not fault.hit_the_log and not any(reason in m for m in said):
            problems.append(f"the run's log never says {reason!r}: {said}")
        if (fault.hit_the_log or not fault.log_writable) and reason not in report.text():
            # the log could not take the line: the run's report (the cron URL's answer) must
            problems.append(f"neither the log nor the run's report says {reason!r}:\n{report.text()}")
        if fault.log_writable and (not said or not said[-1].startswith("run ended")):
            problems.append(f"the run's log does not end with 'run ended': {said[-3:]}")
    try:
        assert_data_parses(data)
    except AssertionError as exc:
        problems.append(str(exc))
    if subscriber_sets(data) != members:
        problems.append("a subscriber was lost")
    left_busy = free_locks(data)
    if left_busy and fault.persistent and kind == "permission denied" and report is not None \
            and all(str(ROOT / name).rsplit("/", 1)[0] == str(fault.struck.parent) for name in left_busy) \
            and "not can terminate sender" in report.text():
        left_busy = []  # the folder of the lock itself refuses the rename back
    if left_busy:
        problems.append(f"the run left its locks busy: {left_busy} (the next run takes them for "
                        "a killed run and blocks the sender: 'script is down by hoster')")

    # The disk is fixed: later runs finish the work, none of it twice.
    for _ in range(4):
        if not newsletters.list_jobs(data) and selfblock.block_reason(data) is None and \
                set(outbox_letters(data)) | doubted(data) >= owed:
            break
        if selfblock.block_reason(data) is not None:
            locks.set_mode(data, data.settings, "debug")
            locks.set_mode(data, data.settings, "working")
        sender.run(data, settings_mod.load(data.settings))
    sent = outbox_letters(data)
    twice = sorted(k for k, n in sent.items() if n > 1)
    if twice:
        problems.append(f"letters sent twice: {twice}")
    missing = sorted(owed - set(sent) - doubted(data))
    if missing:
        problems.append(f"letters never sent nor in doubt after the disk was fixed: {missing}")
    assert not problems, f"{site_name}, {kind}, {mode}, write #{occurrence} " \
                         f"({fault.struck.name}):\n" + "\n".join(problems)
