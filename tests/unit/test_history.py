"""data/newsletters/history.txt, its one home (lib/vykhukhol/newsletters/history.py): lines
read back as written, a spoiled line read without an error, a bounce batch
counted once, a name from a link never making a line, and other lines copied
untouched by a rewrite."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vykhukhol.datadir import DataDir
from vykhukhol.newsletters import history

JOB, OTHER = "20261201-090000-abcdef", "20261101-090000-123456"
MOMENT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def data(tmp_path) -> DataDir:
    found = DataDir(tmp_path / "data")
    found.newsletters.mkdir(parents=True)
    return found


def test_a_newsletter_begins_closes_and_reads_back(data):
    history.begin(data, JOB, "Edition\t7\nof the year", ["news", "offers"], MOMENT)
    history.close(data, JOB, ["news", "offers"], {"handed": 40, "failed": 2, "in_doubt": 1},
                  MOMENT.replace(hour=10))
    [entry] = history.entries(data)
    assert entry == history.Entry(JOB, "Edition 7 of the year", ("news", "offers"),
                                  "2026-12-01T09:00:00Z", "2026-12-01T10:00:00Z", 40, 2, 1,
                                  0, 0, 0, "-")
    assert history.path(data).read_text().splitlines()[0] == history.HEADER
    assert entry.to_json()["services"] == ["news", "offers"]


def test_a_line_spoiled_by_hand_reads_with_zeros_and_a_short_one_with_dashes(data):
    history.path(data).write_text(f"{history.HEADER}\n{JOB}\tS\tnews\t-\t-\tmany\t-3\n\n# note\n")
    [entry] = history.entries(data)
    assert (entry.handed, entry.failed, entry.bounced, entry.finished) == (0, 0, 0, "-")
    assert entry.to_json()["started"] is None


def test_late_reports_count_once_per_batch_and_only_the_fields_that_grow(data):
    history.begin(data, JOB, "S", ["news"], MOMENT)
    changes = {(JOB, "bounced"): 2, (JOB, "complaints"): 1}
    history.count(data, changes, once="batch-1")
    history.count(data, changes, once="batch-1")  # the same batch, redone after a kill
    history.count(data, {(JOB, "unsubscribed"): 1})  # a link: no batch
    [entry] = history.entries(data)
    assert (entry.bounced, entry.complaints, entry.unsubscribed) == (2, 1, 1)
    with pytest.raises(ValueError):
        history.count(data, {(JOB, "handed"): 1})


def test_a_job_name_from_a_link_never_makes_a_line_but_a_report_does(data):
    history.count(data, {(JOB, "unsubscribed"): 1}, create=False)
    assert history.entries(data) == []
    history.count(data, {(JOB, "bounced"): 1}, once="b", services={JOB: ["news"]})
    assert [(e.job, e.services, e.bounced) for e in history.entries(data)] == [
        (JOB, ("news",), 1)]


def test_a_rewrite_copies_every_other_line_as_it_was(data):
    odd = f"{OTHER}\tÜber\tnews\t2026-11-01T09:00:00Z\t-\t1\t2\t3\t4\t5\t6\tx\textra"
    history.path(data).write_text(f"{history.HEADER}\n{odd}\n")
    history.begin(data, JOB, "S", ["news"], MOMENT)
    assert history.path(data).read_text().splitlines()[1] == odd
    assert history.finished_jobs(data) == [(OTHER, ["news"]), (JOB, ["news"])]


def test_the_older_finished_txt_still_names_its_jobs_services(data):
    (data.newsletters / "finished.txt").write_text(f"{OTHER}\tnews,offers\t2026-11-01T09:00:00Z\n")
    history.count(data, {(OTHER, "bounced"): 1}, once="b")  # a line without services
    assert history.finished_jobs(data) == [(OTHER, ["news", "offers"])]


def test_a_segments_condition_and_count_ride_at_the_end_and_an_older_line_still_reads(data):
    values = {"where": 'city = "Тверь" and joined > 2026-01-01', "matched": "2", "total": "2"}
    history.begin(data, JOB, "News", ["news"], MOMENT, values)
    history.close(data, JOB, ["news"], {"handed": 2}, MOMENT.replace(hour=10), segment=values)
    older = "\t".join([OTHER, "Old", "news", "-", "-", "5", "0", "0", "0", "0", "0", "-", "-"])
    with history.path(data).open("a", encoding="utf-8") as handle:
        handle.write(older + "\n")
    entry, old = history.entries(data)
    assert (entry.where, entry.matched, entry.handed) == (values["where"], 2, 2)
    assert (old.where, old.matched, old.handed) == ("", None, 5)
    line = history.path(data).read_text(encoding="utf-8").splitlines()[1].split("\t")
    assert line[13:] == [values["where"], "2"] and len(line) == 15
    assert entry.to_json()["where"] == values["where"] and old.to_json()["where"] is None
    # a reader that knows the first thirteen fields reads the newer line as before
    assert line[:13] == entry.to_line().split("\t")[:13]


def test_a_conditions_own_spaces_are_kept_and_nothing_breaks_its_line(data):
    values = {"where": 'city = "Old  Town"\tand\u2028x', "matched": "1"}
    history.begin(data, JOB, "News", ["news"], MOMENT, values)
    [entry] = history.entries(data)
    assert entry.where == 'city = "Old  Town" and x'
    assert len(history.path(data).read_text(encoding="utf-8").splitlines()) == 2
