"""A newsletter's readers file (docs/using/newsletters.md#newsletter-languages):
what a job keeps of each recipient, read back row by row as a run asks."""

from __future__ import annotations

from vykhukhol.datadir import DataDir
from vykhukhol.newsletters import snapshot


def test_a_run_reads_each_rows_reader_alongside_the_ledger(tmp_path) -> None:
    data = DataDir(tmp_path)
    data.newsletters.mkdir(parents=True)
    snapshot.write(data, "job", [(1, "lang=en\tf.city=Tver%09Center"), (4, "f.age=30"),
                                 (7, "lang=ru")])
    reader = snapshot.follow(data, "job")
    assert [reader(index) for index in (0, 1, 2, 4, 6, 7, 8)] == [
        snapshot.NOBODY, snapshot.Reader("en", {"city": "Tver\tCenter"}), snapshot.NOBODY,
        snapshot.Reader(None, {"age": "30"}), snapshot.NOBODY, snapshot.Reader("ru", {}),
        snapshot.NOBODY]
    assert snapshot.read(data, "job")[4] == snapshot.Reader(None, {"age": "30"})


def test_nothing_to_keep_writes_no_file_and_reads_as_nobody(tmp_path) -> None:
    data = DataDir(tmp_path)
    data.newsletters.mkdir(parents=True)
    snapshot.write(data, "job", [])
    assert not snapshot.path(data, "job").exists()
    assert snapshot.follow(data, "job")(0) is snapshot.NOBODY
    assert snapshot.kept("paused=2026-01-01T00:00:00Z\tlang=en\tx=1\tf.city=A") == \
        "lang=en\tf.city=A"
    assert snapshot.kept("paused=2026-01-01T00:00:00Z") == ""


def test_forgetting_rows_rewrites_the_file_and_removes_it_when_empty(tmp_path) -> None:
    data = DataDir(tmp_path)
    data.newsletters.mkdir(parents=True)
    snapshot.write(data, "job", [(0, "lang=en"), (3, "lang=ru")])
    assert not snapshot.forget(data, "job", {1})
    assert snapshot.forget(data, "job", {0})
    assert snapshot.read(data, "job") == {3: snapshot.Reader("ru", {})}
    assert snapshot.forget(data, "job", {3})
    assert not snapshot.path(data, "job").exists()
