"""``kill -9`` during ``vykhukhol removed restore`` (docs/deliverability/suppression.md#undo-bounce): every
file is left old or new, never half, and the same command run again
finishes the restore exactly as one that was never killed.

The installation: three services, each with other subscribers and the
address at a different place of its series, one soft failure counted for
it, then a real RFC 3464 report piped in saying it is gone — so a restore
rewrites the suppression list, appends to three subscriber files, drops
three due summaries, rewrites the soft counts and then ``removed.txt``.

The restore runs in a real subprocess that sends itself SIGKILL at one
point of its disk work: right after each fsync (a temporary file or an
appended line on disk, not yet renamed), and just before and just after
each ``os.replace``. Every point a restore reaches is tried, each on a fresh
copy of the same installation (12 points; with ``VYKHUKHOL_LONG=1`` also
just before each rename: 15).
"""

from __future__ import annotations

import contextlib
import io
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from support.bouncekit import dsn, pipe, tagged_sender  # noqa: E402
from support.faultkit import LIB, assert_data_parses, env, leftover_temp_files, scale
from vykhukhol import cli  # noqa: E402
from vykhukhol.datadir import DataDir  # noqa: E402
from vykhukhol.members import removed  # noqa: E402
from vykhukhol.timeutil import now  # noqa: E402

DEAD = "dead@example.com"
LESSONS = [("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again."), ("Lesson 3", "30d", "More.")]

# The restore, killed by itself (a real SIGKILL) at the ``at``-th event of ``mode``.
KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {lib!r})
    mode, at, root, email = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    seen = {{"fsync": 0, "replace": 0}}
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        real_fsync(fd)
        seen["fsync"] += 1
        if mode == "fsync" and seen["fsync"] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    def replace(src, dst, **kw):
        seen["replace"] += 1
        if mode == "before-replace" and seen["replace"] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst, **kw)
        if mode == "after-replace" and seen["replace"] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    os.fsync, os.replace = fsync, replace
    from vykhukhol import cli
    code = cli.main(["--data", root, "removed", "restore", email])
    print(seen["fsync"], seen["replace"], file=sys.stderr)
    sys.exit(code)
""").format(lib=str(LIB))


def files_of(root: Path) -> dict[str, bytes]:
    """Every data file but lock files and a killed rewrite's temporary files."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock") and not p.name.endswith(".tmp")}


def restore(root: Path, mode: str = "count", at: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", KILLER, mode, str(at), str(root), DEAD],
                          capture_output=True, text=True, timeout=60, env=env())


def restore_here(root: Path) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(["--data", str(root), "removed", "restore", DEAD])
    return code, err.getvalue()


def test_a_restore_killed_anywhere_leaves_old_or_new_files_and_finishes_when_run_again(
        site, tmp_path):
    site.set(mail__from_email="list@example.org", bounce_limit=3)
    for number, name in enumerate(("course", "digest", "tips")):
        site.service(name, letters=LESSONS)
        site.subscriber(name, f"first-{name}@example.com")
        site.subscriber(name, DEAD, sent=number, last_sent_ago=3600 if number else None)
        site.subscriber(name, f"last-{name}@example.com")
    sender = tagged_sender(site, None, "s", "course", DEAD)
    pipe(site, dsn(DEAD, sender, "<soft.1@example.org>"))  # a full mailbox: one soft failure
    pipe(site, dsn(DEAD, sender, "<gone.1@example.org>", status="5.1.1",
                   diagnostic="smtp; 550 5.1.1 <{failed}>: User unknown"))
    assert len(removed.find(site.data, DEAD, now()).lines) == 3
    old_root = tmp_path / "old"
    shutil.copytree(site.data.root, old_root)
    old = files_of(old_root)

    reference = tmp_path / "reference"
    shutil.copytree(old_root, reference)
    whole = restore(reference)
    assert whole.returncode == 0, whole.stderr
    new = files_of(reference)
    fsyncs, replaces = (int(n) for n in whole.stderr.split()[-2:])
    changed = {name for name in set(old) | set(new) if old.get(name) != new.get(name)}
    assert {"suppressed.txt", "removed.txt", "state/soft"} <= changed
    assert sum(name.endswith("subscribers.txt") for name in changed) == 3

    # Right after a temporary file's fsync is right before its rename: the
    # short version leaves "before-replace" to the long one.
    modes = scale(("after-replace",), ("before-replace", "after-replace"))
    points = ([("fsync", n) for n in range(1, fsyncs + 1)]
              + [(mode, n) for n in range(1, replaces + 1) for mode in modes])
    assert fsyncs >= 9 and replaces >= 3, points
    print(f"{len(points)} kill points: {fsyncs} fsyncs, {replaces} renames")
    for mode, at in points:
        root = tmp_path / f"{mode}-{at}"
        shutil.copytree(old_root, root)
        killed = restore(root, mode, at)
        assert killed.returncode == -signal.SIGKILL, (mode, at, killed.stderr)
        after = files_of(root)
        for name in set(old) | set(after):
            assert after.get(name) in (old.get(name), new.get(name)), (mode, at, name)
        assert all(p.name.endswith(".tmp") for p in leftover_temp_files(DataDir(root)))
        assert_data_parses(DataDir(root))
        finished = removed.find(DataDir(root), DEAD, now()) is None  # the last step was done
        # The owner presses Restore again (in this process: the crash was the subprocess's).
        code, err = restore_here(root)
        assert code == (1 if finished else 0), (mode, at, err)
        assert files_of(root) == new, (mode, at)
        shutil.rmtree(root)
