"""The work after a page's answer runs in a forked child (web/cgi.py): what the
process holds by then is frozen out of the garbage collector first, so the
child's collections do not touch, and copy, every page it shares with its
parent (docs/design/startup.md#startup-quickletter)."""

from __future__ import annotations

import gc

from vykhukhol.web import cgi


def test_the_work_after_the_answer_finds_the_answer_s_objects_frozen(monkeypatch) -> None:
    def no_fork() -> int:
        raise OSError("no fork here: the work runs in this process, as on a host without fork")

    monkeypatch.setattr(cgi.os, "fork", no_fork)
    monkeypatch.setattr(cgi, "_end_answer", lambda: None)
    seen: list[int] = []
    try:
        cgi._after_answer([lambda: seen.append(gc.get_freeze_count())])
    finally:
        gc.unfreeze()
    assert seen and seen[0] > 0
