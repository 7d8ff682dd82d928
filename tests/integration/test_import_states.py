"""`vykhukhol import-from` in a subprocess, as an owner moving from another tool
runs it (docs/using/import.md#import-from): an empty status cell, the
addresses listed by state, people who left the other tool while subscribed
here, and the time each left, kept from the tool's own columns."""

from __future__ import annotations

import zipfile
from datetime import UTC, datetime
from pathlib import Path

from vykhukhol.members import suppression
from vykhukhol.states import SubscriberState

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "imports"
PHPLIST = next((SAMPLES / "phplist").glob("*.csv"))


def suppressed(site) -> dict[str, suppression.Entry]:
    return {e.address: e for e in suppression.entries(site.data)}


def run(site, *args: str):
    result = site.cli("import-from", *args, check=False)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_an_empty_status_cell_is_no_status_so_the_person_is_asked_to_confirm(site, tmp_path):
    site.service("news")
    people = tmp_path / "people.csv"
    people.write_text("email,name,status\nrita@example.com,Rita,\npavel@example.com,Pavel,subscribed\n")
    result = run(site, "csv", str(people), "--service", "news")
    assert result.returncode == 0 and "refused: 0" in result.stdout, result.stdout
    assert site.subscribers("news")["rita@example.com"].state is SubscriberState.NEW
    assert site.subscribers("news")["pavel@example.com"].state is SubscriberState.ACTIVE


def test_a_dry_run_with_show_lists_every_address_under_its_state_and_changes_nothing(site, tmp_path):
    site.service("news")
    people = tmp_path / "people.csv"
    people.write_text("email,status\npavel@example.com,subscribed\nrita@example.com,pending\n"
                      "tanya@example.com,unsubscribed\nzoe@example.com,subscribed\n")
    result = run(site, "csv", str(people), "--service", "news", "--dry-run", "--show")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    at = lines.index("confirmed (2):")
    assert lines[at + 1:at + 3] == ["  pavel@example.com", "  zoe@example.com"]
    at = lines.index("unconfirmed (1):")
    assert lines[at + 1] == "  rita@example.com"
    at = lines.index("to the suppression list (1):")
    assert lines[at + 1] == "  tanya@example.com"
    assert site.subscribers("news") == {} and suppressed(site) == {}


def test_a_subscriber_here_who_left_the_other_tool_is_named_counted_and_marked(site, tmp_path):
    site.service("news")
    site.subscriber("news", "tanya@example.com", state="new")
    people = tmp_path / "people.csv"
    people.write_text("email,status\ntanya@example.com,unsubscribed\npavel@example.com,subscribed\n")
    dry = run(site, "csv", str(people), "--service", "news", "--dry-run", "--show")
    assert "1 subscriber here left in the other tool (tanya@example.com)" in dry.stdout, dry.stdout
    lines = dry.stdout.splitlines()
    at = lines.index("subscribed here, left in the other tool (1):")
    assert lines[at + 1] == "  tanya@example.com"
    done = run(site, "csv", str(people), "--service", "news")
    assert "1 subscriber here left in the other tool (tanya@example.com)" in done.stdout
    assert "tanya@example.com" in suppressed(site)


def test_who_left_keeps_the_time_the_other_tool_says_they_left(site, tmp_path):
    site.service("news")
    archive = tmp_path / "export_audience.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        for part in sorted((SAMPLES / "mailchimp").glob("*.csv")):
            packed.write(part, part.name)
    run(site, "mailchimp", str(archive), "--service", "news")
    run(site, "listmonk", str(SAMPLES / "listmonk" / "subscribers.csv"), "--service", "news")
    run(site, "phplist", str(PHPLIST), "--service", "news")
    people = tmp_path / "people.csv"
    people.write_text("email,status,unsubscribed_at\numa@example.com,unsubscribed,2022-02-02 02:02:02\n")
    run(site, "csv", str(people), "--service", "news")
    listed = suppressed(site)
    assert listed["dmitri@example.com"].when == datetime(2023, 9, 9, 9, 9, 9, tzinfo=UTC)    # UNSUB_TIME
    assert listed["gone@example.com"].when == datetime(2022, 7, 7, 7, 7, 7, tzinfo=UTC)      # CLEAN_TIME
    assert listed["nina@example.com"].when == datetime(2024, 3, 3, 3, 0, tzinfo=UTC)        # updated_at
    assert listed["ivan@example.com"].when == datetime(2023, 3, 3, 10, 0, tzinfo=UTC)       # Last Modified
    assert listed["uma@example.com"].when == datetime(2022, 2, 2, 2, 2, 2, tzinfo=UTC)


def test_a_refused_non_latin_address_is_explained_in_russian(site, tmp_path):
    """The CLI speaks English; the same refusal on a Russian page reads in Russian
    (tests/browser/test_import_from_page.py), so its words are ours, not the
    validator's."""
    from vykhukhol.addresses import check_email
    from vykhukhol.errors import BadInput

    try:
        check_email("иван@example.org")
    except BadInput as exc:
        said = exc.text("ru")
    assert "латиницей" in said and "Internationalized" not in said, said
