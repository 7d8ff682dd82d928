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


def test_a_big_job_keeps_of_each_row_what_the_row_alone_would_keep(tmp_path) -> None:
    """Rows are asked a thousand at once whether they keep all their fields;
    a batch where one does not is read row by row, so the file is the same."""
    data = DataDir(tmp_path)
    data.newsletters.mkdir(parents=True)
    kinds = ["f.city=A\tf.age=3", "lang=en", "paused=2026-01-01T00:00:00Z", "x=1\tf.city=B",
             "f.city=C\tlang=ru\tx.f.=2", "lang=\tf.x=", "flang=en"]
    rows = [(index, "lang=ru\tf.age=1") for index in range(1500)]  # a first batch of all kept
    rows += [(index, kinds[index % len(kinds)]) for index in range(1500, 4000)]
    snapshot.write(data, "job", rows)
    assert snapshot.read(data, "job") == {
        index: snapshot.reader_of(snapshot.kept(extra).split("\t"))
        for index, extra in rows if snapshot.kept(extra)}
    assert not any(kept.startswith(("paused", "x", "flang"))
                   for kept in snapshot.path(data, "job").read_text().split())
