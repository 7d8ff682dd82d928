"""files.drop_lock: a lock file is deleted only while nobody holds it.

Real files (pyfakefs makes fcntl locks no-ops); the other holder is a thread,
which record_lock keeps apart from this one exactly as another process.
"""

from __future__ import annotations

import threading

from vykhukhol import files


def test_a_lock_nobody_holds_is_deleted_and_works_again_after(tmp_path):
    path = tmp_path / "job.list"
    with files.record_lock(path):
        pass
    assert files.drop_lock(path) is True
    assert not (tmp_path / "job.list.lock").exists()
    with files.record_lock(path):  # taken again: a new lock file
        assert (tmp_path / "job.list.lock").exists()
    assert files.drop_lock(tmp_path / "never-locked") is False


def test_a_held_lock_is_left_in_place(tmp_path):
    path = tmp_path / "job.list"
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with files.record_lock(path):
            holding.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        assert files.drop_lock(path) is False
        assert (tmp_path / "job.list.lock").exists()
    finally:
        done.set()
        holder.join()
    assert files.drop_lock(path) is True
