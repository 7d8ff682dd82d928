"""Temporary files of a rewrite killed half-way are cleaned up by the next run."""

import os
import time

from vykhukhol import files


def test_a_killed_rewrites_temporary_file_is_removed_once_older_than_the_time_limit(tmp_path):
    """Old `.name.xxx.tmp` files go; a young one (a live rewrite) and other files stay."""
    old = tmp_path / ".subscribers.txt.abc123.tmp"
    young = tmp_path / ".subscribers.txt.def456.tmp"
    keep = tmp_path / "subscribers.txt"
    for path in (old, young, keep):
        path.write_text("x")
    past = time.time() - 120
    os.utime(old, (past, past))
    os.utime(keep, (past, past))
    assert files.remove_stale_temps(tmp_path, older_than=30) == 1
    assert not old.exists() and young.exists() and keep.exists()


def left_by_a_kill(path, text: str):
    """A rewrite's temporary file, an hour old."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    past = time.time() - 3600
    os.utime(path, (past, past))
    return path


def test_the_next_run_removes_what_a_killed_rewrite_left(site):
    """A run that takes the DB lock sweeps the DB's and its services' folders."""
    service = site.service("news", letters=[("Hi", "0s", "Body")])
    stray = left_by_a_kill(service.folder / ".subscribers.txt.zz9.tmp", "half a file")
    site.ok("cron")
    assert not stray.exists()
    assert "killed rewrite" in site.log()


def test_a_run_sweeps_the_newsletters_folder_even_when_no_job_is_left(site):
    """A kill during the last job's ledger rewrite leaves a copy of its recipients;
    the job then finishes and no later run takes the newsletters' lock."""
    stray = left_by_a_kill(site.data.newsletters / ".20261129-211119-25d8aa.list.uzosatkk.tmp",
                           "someone@example.org\tSomeone\tpending\t-\t-\n")
    site.ok("cron")
    assert not stray.exists()
    assert "killed rewrite left in newsletters" in site.log()
