"""`vykhukhol import-from` (SPEC 14, issue 29 item 1): each tool's export, as
that tool writes it (the samples in tests/data/imports/, README §5 says where
each layout comes from), read into a service — the confirmed confirmed, with
their original times, the pending asked by the reminders, and everyone who
left or bounced on the suppression list and never a subscriber."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vykhukhol.members import suppression
from vykhukhol.states import SubscriberState

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "imports"
MAILCHIMP = SAMPLES / "mailchimp"
PHPLIST = next((SAMPLES / "phplist").glob("*.csv"))


def suppressed(site) -> dict[str, suppression.Entry]:
    return {e.address: e for e in suppression.entries(site.data)}


def mailchimp_zip(tmp_path: Path) -> Path:
    """The three CSVs zipped as Mailchimp's "Export Audience" gives them."""
    target = tmp_path / "export_audience_5f3c2a9e1b.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for part in sorted(MAILCHIMP.glob("*.csv")):
            archive.write(part, part.name)
    return target


def test_a_mailchimp_zip_keeps_states_times_and_names(site, tmp_path):
    site.service("news")
    out = site.ok("import-from", "mailchimp", str(mailchimp_zip(tmp_path)), "--service", "news")
    people = site.subscribers("news")
    assert sorted(people) == ["Claire.Dubois@example.com", "anna.petrova@example.com",
                              "boris@example.com"]
    anna = people["anna.petrova@example.com"]
    assert anna.state is SubscriberState.ACTIVE and anna.name == "Anna Petrova"
    assert anna.subscribed == datetime(2021, 3, 4, 10, 0, tzinfo=UTC)        # OPTIN_TIME
    assert anna.confirmed == datetime(2021, 3, 4, 10, 2, 13, tzinfo=UTC)     # CONFIRM_TIME
    assert anna.ip == "192.0.2.10"
    listed = suppressed(site)
    assert listed["dmitri@example.com"].why == "unsubscribed"
    assert listed["eva@example.com"].why == "unsubscribed"
    assert listed["gone@example.com"].why == "address gone"
    assert {e.source for e in listed.values()} == {"import mailchimp"}
    assert "confirmed: 3, unconfirmed: 0, to the suppression list: 3; refused: 1." in out
    assert "3 subscribers added" in out and "3 new on the suppression list" in out


def test_a_dry_run_says_the_same_counts_and_changes_nothing(site, tmp_path):
    path = site.service("news").subscribers_path
    before = path.read_bytes() if path.exists() else None
    code, out, err = site.call("import-from", "mailchimp", str(mailchimp_zip(tmp_path)),
                               "--service", "news", "--dry-run")
    assert code == 0, err
    assert (path.read_bytes() if path.exists() else None) == before
    assert not suppression.path(site.data).exists() or suppressed(site) == {}
    assert "Dry run, nothing changed" in out
    assert "subscribed_members_export_5f3c2a9e1b.csv, line 5: 'not-an-address" in err
    assert "@-sign" in err
    real = site.ok("import-from", "mailchimp", str(mailchimp_zip(tmp_path)), "--service", "news")
    assert out.splitlines()[0] == real.splitlines()[0]  # the counts by state, word for word
    assert out.splitlines()[1] == real.splitlines()[1]  # the suppressed by reason


def test_one_mailchimp_csv_reads_its_status_from_its_columns(site, tmp_path):
    site.service("news")
    single = tmp_path / "members.csv"  # a renamed file: UNSUB_TIME says what it is
    single.write_bytes((MAILCHIMP / "unsubscribed_members_export_5f3c2a9e1b.csv").read_bytes())
    site.ok("import-from", "mailchimp", str(single), "--service", "news")
    assert site.subscribers("news") == {}
    assert set(suppressed(site)) == {"dmitri@example.com", "eva@example.com"}


def test_phplist_blacklisted_are_suppressed_and_unconfirmed_get_reminders(site):
    site.service("news")
    out = site.ok("import-from", "phplist", str(PHPLIST), "--service", "news")
    people = site.subscribers("news")
    assert sorted(people) == ["galina@example.com", "hugo@example.com"]
    assert people["galina@example.com"].state is SubscriberState.ACTIVE
    assert people["galina@example.com"].name == "Galina Sidorova"
    assert people["galina@example.com"].subscribed == datetime(2019, 4, 5, 8, 30, tzinfo=UTC)
    hugo = people["hugo@example.com"]
    assert hugo.state is SubscriberState.NEW and hugo.last_reminder is not None
    assert suppressed(site)["ivan@example.com"].why == "unsubscribed"
    assert "refused: 2." in out


def test_listmonk_statuses_and_names_from_attributes(site):
    site.service("news")
    site.ok("import-from", "listmonk", str(SAMPLES / "listmonk" / "subscribers.csv"),
            "--service", "news")
    people = site.subscribers("news")
    assert sorted(people) == ["lena@example.com", "max@example.com"]
    assert people["max@example.com"].name == "Max Mustermann"
    assert people["max@example.com"].subscribed == datetime(2023, 5, 5, 10, 0, tzinfo=UTC)
    assert suppressed(site)["nina@example.com"].why == "blocklisted"
    assert "oleg@example.com" not in suppressed(site)  # disabled: refused, not suppressed


def test_a_plain_csv_with_a_status_column(site):
    site.service("news")
    out = site.ok("import-from", "csv", str(SAMPLES / "csv" / "people.csv"), "--service", "news")
    people = site.subscribers("news")
    assert people["pavel@example.com"].state is SubscriberState.ACTIVE
    assert people["rita@example.com"].state is SubscriberState.NEW
    listed = suppressed(site)
    assert listed["sergei@example.com"].why == "address gone"
    assert listed["tanya@example.com"].why == "unsubscribed"
    assert "uma@example.com" not in people and "refused: 1." in out


def test_who_left_is_never_subscribed_even_when_listed_twice(site, tmp_path):
    site.service("news")
    both = tmp_path / "both.csv"
    both.write_text("email,status\nwho@example.com,subscribed\nWho@example.com,unsubscribed\n")
    out = site.ok("import-from", "csv", str(both), "--service", "news")
    assert site.subscribers("news") == {}
    assert "who@example.com" in suppressed(site)
    assert "1 record repeats an address" in out


def test_an_address_suppressed_here_is_not_brought_back(site):
    site.service("news")
    site.ok("suppress", "add", "galina@example.com")
    out = site.ok("import-from", "phplist", str(PHPLIST), "--service", "news")
    assert "galina@example.com" not in site.subscribers("news")
    assert "1 skipped (on the suppression list)" in out


@pytest.mark.parametrize("tool", ["mailchimp", "phplist", "listmonk", "csv"])
def test_a_file_from_a_tool_we_do_not_know_names_the_columns_expected(site, tool):
    from support.clikit import refused

    site.service("news")
    err = refused(site, "import-from", tool, str(SAMPLES / "sendinblue-contacts.csv"),
                  "--service", "news", says=("expected the columns", "EMAIL_ADDR"))
    assert "Nothing was imported" in err


def test_a_file_that_is_the_wrong_tools_is_refused_whole(site):
    from support.clikit import refused

    site.service("news")
    refused(site, "import-from", "listmonk", str(PHPLIST), "--service", "news",
            says=("listmonk", "uuid,email,name"))


def test_bad_bytes_and_broken_zips_are_one_line(site, tmp_path):
    from support.clikit import refused

    site.service("news")
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("email\nj\xf6rg@example.com\n".encode("latin-1"))
    refused(site, "import-from", "csv", str(latin), "--service", "news", says=("UTF-8",))
    broken = tmp_path / "broken.zip"
    broken.write_bytes(mailchimp_zip(tmp_path).read_bytes()[:200])
    refused(site, "import-from", "mailchimp", str(broken), "--service", "news", says=("zip",))
    refused(site, "import-from", "csv", str(tmp_path / "missing.csv"), "--service", "news",
            says=("cannot read",))
    refused(site, "import-from", "csv", str(SAMPLES / "csv" / "people.csv"), "--service", "nope")


def test_a_zip_that_would_unpack_past_the_cap_is_refused_before_it_is(site, tmp_path, monkeypatch):
    from vykhukhol.members.importers import common

    site.service("news")
    monkeypatch.setattr(common, "MAX_BYTES", 10_000)  # what the zip reader checks
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("subscribed_members_export_1.csv", "x" * 200_000)
    assert bomb.stat().st_size < 10_000
    code, out, err = site.call("import-from", "mailchimp", str(bomb), "--service", "news")
    assert code == 1 and "CSV files are larger than" in err, err  # not the csv field limit
    assert site.subscribers("news") == {}


def test_the_real_command_runs_in_a_subprocess(site, tmp_path):
    site.service("news")
    result = site.cli("import-from", "mailchimp", str(mailchimp_zip(tmp_path)), "--service",
                      "news", "--dry-run")
    assert "Traceback" not in result.stderr and "confirmed: 3" in result.stdout
    assert io.StringIO(result.stdout).readline().startswith("In the file:")


def test_the_counts_read_in_russian_with_russian_plurals():
    from vykhukhol.members.importers.common import Standing
    from vykhukhol.members.importers.outcome import Outcome, summary

    said = summary(Outcome("csv", False, {Standing.CONFIRMED: 21, Standing.UNCONFIRMED: 2,
                                          Standing.SUPPRESSED: 5}, {"unsubscribed": 5}, [],
                           0, 21, 2, 5, 5), "ru")
    assert said[0] == ("В файле: подтверждены: 21, не подтверждены: 2, в стоп-лист: 5; "
                       "отклонено: 0.")
    assert "добавлен 21 подписчик" in said[2] and "2 уже были подписаны" in said[2]
    assert "5 новых адресов в стоп-листе" in said[2]
