"""The suppression list's file: entries, lookups, erasure by keyed hash."""

from __future__ import annotations

from datetime import datetime, timezone

from vykhukhol.datadir import DataDir
from vykhukhol.members import suppression
from vykhukhol.members.suppression import Why

SECRET = b"s" * 40
WHEN = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def test_an_added_address_is_suppressed_in_any_spelling_with_each_reason_once(tmp_path):
    data = DataDir(tmp_path)
    assert not suppression.is_suppressed(data, SECRET, "Dead@Example.org")
    assert suppression.add(data, SECRET, "Dead@Example.org", Why.GONE, "imap", WHEN)
    assert not suppression.add(data, SECRET, "dead@example.ORG", Why.COMPLAINT, "ses", WHEN)
    assert not suppression.add(data, SECRET, "dead@example.org", Why.COMPLAINT, "imap", WHEN)
    assert suppression.is_suppressed(data, SECRET, "DEAD@example.org")
    assert not suppression.is_suppressed(data, SECRET, "ead@example.org")  # a line's start only
    assert not suppression.is_suppressed(data, SECRET, "dead@example.or")
    assert [e.address for e in suppression.entries(data)] == ["dead@example.org"] * 2
    text = (tmp_path / "suppressed.txt").read_text()
    assert text == ("#address\twhen\twhy\tfrom\n"
                    "dead@example.org\t2026-12-01T10:00:00Z\taddress gone\timap\n"
                    "dead@example.org\t2026-12-01T10:00:00Z\tcomplaint\tses\n")
    assert suppression.remove(data, SECRET, "dead@example.org", only=["address gone"])
    assert [e.why for e in suppression.entries(data)] == ["complaint"]


def test_many_at_once_count_only_the_new_and_a_checker_answers_for_all(tmp_path):
    data = DataDir(tmp_path)
    suppression.add(data, SECRET, "a@example.org", Why.ADMIN, "cli", WHEN)
    assert suppression.add_many(data, SECRET, ["a@example.org", "b@example.org", "B@example.org",
                                               "c@example.org"], Why.ADMIN, "import", WHEN) == 2
    checker = suppression.Checker(data, SECRET)
    assert [e in checker for e in ("A@example.org", "b@example.org", "c@example.org",
                                   "d@example.org")] == [True, True, True, False]


def test_a_hand_edited_file_without_a_final_line_end_keeps_both_lines(tmp_path):
    data = DataDir(tmp_path)
    (tmp_path / "suppressed.txt").write_text("#address\twhen\twhy\tfrom\nold@example.org\t-\tadmin\t-")
    suppression.add(data, SECRET, "new@example.org", Why.ADMIN, "cli", WHEN)
    assert [e.address for e in suppression.entries(data)] == ["old@example.org", "new@example.org"]


def test_removal_takes_the_address_off_and_keeps_the_other_lines_as_they_are(tmp_path):
    data = DataDir(tmp_path)
    suppression.add_many(data, SECRET, ["a@example.org", "b@example.org"], Why.ADMIN, "cli", WHEN)
    with open(tmp_path / "suppressed.txt", "a") as handle:
        handle.write("not a line the reader knows\n")
    assert suppression.remove(data, SECRET, "A@example.org")
    assert not suppression.remove(data, SECRET, "a@example.org")
    assert not suppression.is_suppressed(data, SECRET, "a@example.org")
    assert (tmp_path / "suppressed.txt").read_text().splitlines()[1:] == [
        "b@example.org\t2026-12-01T10:00:00Z\tadmin\tcli", "not a line the reader knows"]


def test_an_erased_address_stays_suppressed_but_the_file_no_longer_names_it(tmp_path):
    data = DataDir(tmp_path)
    suppression.add(data, SECRET, "gone@example.org", Why.COMPLAINT, "imap", WHEN)
    suppression.erase(data, SECRET, "Gone@example.org", WHEN)
    text = (tmp_path / "suppressed.txt").read_text()
    assert "gone@example.org" not in text.lower() and "hmac:" in text
    assert suppression.is_suppressed(data, SECRET, "gone@example.org")
    assert "gone@example.org" in suppression.Checker(data, SECRET)
    assert not suppression.is_suppressed(data, b"t" * 40, "gone@example.org")  # keyed
    assert not suppression.remove(data, SECRET, "gone@example.org")  # erasure is not undone
    assert not suppression.add(data, SECRET, "gone@example.org", Why.ADMIN, "cli", WHEN)
    assert "gone@example.org" not in (tmp_path / "suppressed.txt").read_text()  # never named again
    assert suppression.add(data, SECRET, "never@example.org", Why.ERASED, "subscriber", WHEN)
    assert "never@example.org" not in (tmp_path / "suppressed.txt").read_text()
    assert [e.erased for e in suppression.entries(data)] == [True, True]


def test_reasons_read_in_both_languages():
    assert Why.GONE.label("en") == "the address does not exist"
    assert Why.GONE.label("ru") == "адреса не существует"


def test_the_checker_reads_the_same_lines_as_the_parser(tmp_path):
    """Checker reads only first fields; it must agree with entries() on hand-edited lines."""
    (tmp_path / "suppressed.txt").write_text(
        "#address\twhen\twhy\tfrom\n"
        "  Spaced@Example.org \t-\tadmin\tcli\n"   # spaces and capitals: still one address
        "short@example.org\tadmin\n"              # two fields: not an entry
        "\t-\tadmin\tcli\n"                       # no address
        "# note@example.org\t-\tadmin\tcli\n"     # a comment
        "plain@example.org\tyesterday\tadmin\n", encoding="utf-8")
    data = DataDir(tmp_path)
    checker = suppression.Checker(data, SECRET)
    assert checker.keys == {entry.address for entry in suppression.entries(data)} == {
        "spaced@example.org", "plain@example.org"}
    assert "SPACED@example.org" in checker and "short@example.org" not in checker


def test_search_pages_newest_first_and_counts_what_matches(tmp_path):
    data = DataDir(tmp_path)
    suppression.add_many(data, SECRET, [f"u{i:02}@example.org" for i in range(25)], Why.ADMIN,
                         "cli", WHEN)
    first = suppression.search(data, "", 1, 10)
    assert (first.total, first.page, first.pages) == (25, 1, 3)
    assert [e.address for e in first.entries][:2] == ["u24@example.org", "u23@example.org"]
    last = suppression.search(data, "", 7, 10)  # past the end: the last page
    assert last.page == 3 and [e.address for e in last.entries] == [
        "u04@example.org", "u03@example.org", "u02@example.org", "u01@example.org",
        "u00@example.org"]
    found = suppression.search(data, "U1", 1, 10)
    assert found.total == 10 and found.pages == 1
    assert suppression.search(data, "nobody", 1, 10) == suppression.Page([], 0, 1, 1)


def test_a_lookup_matches_whole_first_fields_only_in_any_line_ending(tmp_path):
    (tmp_path / "suppressed.txt").write_bytes(
        b"first@example.org\t-\tadmin\tcli\r\n"        # a hand edit: no header, CRLF
        b"ann@example.org.uk\t-\tadmin\tcli\r\n"
        b"x\tann@example.org\tadmin\tcli\r\n"          # the address in another field
        b"last@example.org\t-\tadmin\tcli")             # no final line end
    data = DataDir(tmp_path)
    for email in ("first@example.org", "LAST@example.org"):
        assert suppression.is_suppressed(data, SECRET, email), email
    for email in ("ann@example.org", "irst@example.org", "first@example.or"):
        assert not suppression.is_suppressed(data, SECRET, email), email
