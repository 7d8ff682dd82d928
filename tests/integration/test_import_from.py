"""`vykhukhol import-from` (docs/using/import.md#import-from): each tool's
export, as that tool writes it (the samples in tests/data/imports/), read
into a service — the confirmed confirmed, with their original times, the
pending asked by the reminders, and everyone who left or bounced on the
suppression list and never a subscriber."""

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
    from vykhukhol.members.importers import parsing

    site.service("news")
    monkeypatch.setattr(parsing, "MAX_BYTES", 10_000)  # what the zip reader checks
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
    from vykhukhol.members.importers.outcome import Outcome, summary
    from vykhukhol.members.importers.verdicts import Standing

    said = summary(Outcome("csv", False, {Standing.CONFIRMED: 21, Standing.UNCONFIRMED: 2,
                                          Standing.SUPPRESSED: 5}, {"unsubscribed": 5}, [],
                           0, 21, 2, 5, 5), "ru")
    assert said[0] == ("В файле: подтверждены: 21, не подтверждены: 2, в стоп-лист: 5; "
                       "отклонено: 0.")
    assert "добавлен 21 подписчик" in said[2] and "2 уже были подписаны" in said[2]
    assert "5 новых адресов в стоп-листе" in said[2]


# --- where the confirmed join the series --------------------------------------

WELCOME = [("Welcome, {{ name }}!", "0s", "Welcome, thanks for subscribing."),
           ("Letter two for {{ name }}", "0s", "The second letter."),
           ("Letter three for {{ name }}", "0s", "The third letter.")]


def move_in(tmp_path: Path) -> Path:
    """An export of two long-confirmed readers and one who has not confirmed yet."""
    path = tmp_path / "people.csv"
    path.write_text("email,first_name,status,subscribed\n"
                    "carol@example.com,Carol,subscribed,2019-05-01T09:00:00Z\n"
                    "dan@example.com,Dan,subscribed,2020-02-02T09:00:00Z\n"
                    "erin@example.com,Erin,pending,\n")
    return path


def subjects(site, to: str) -> list[str]:
    return [str(m["Subject"]) for m in site.outbox() if m["To"].addresses[0].addr_spec == to]


def test_a_move_in_mails_no_series_letter_yet_a_letter_added_later_reaches_them(site, tmp_path):
    """The default: the imported confirmed start after the series, so the next
    runs send them none of it (no "Welcome, Carol!" years after she came); a
    letter added to the series later is due to them at once."""
    site.service("news", letters=WELCOME)
    out = site.cli("import-from", "csv", str(move_in(tmp_path)), "--service", "news").stdout
    assert "A series of 3 letters, --series end: none of its letters" in out, out
    carol = site.subscribers("news")["carol@example.com"]
    assert (carol.state, carol.sent, carol.last_sent) == (SubscriberState.DONE, 3, None)
    assert site.subscribers("news")["erin@example.com"].state is SubscriberState.NEW
    site.cli("cron")
    site.cli("cron")
    assert subjects(site, "carol@example.com") == [] and subjects(site, "dan@example.com") == []
    site.cli("letter", "add", "news", "--subject", "News for {{ name }}", "--delay", "0s",
             "--body", "Something new.")
    site.cli("cron")
    assert subjects(site, "carol@example.com") == ["News for Carol"]
    assert subjects(site, "dan@example.com") == ["News for Dan"]


def test_with_series_start_they_get_the_welcome_and_then_the_rest(site, tmp_path):
    site.service("news", letters=WELCOME)
    out = site.cli("import-from", "csv", str(move_in(tmp_path)), "--service", "news",
                   "--series", "start").stdout
    assert ("A series of 3 letters, --series start: 2 subscribers will get 3 letters each "
            "(6 letters in all).") in out, out
    site.cli("cron")
    assert subjects(site, "carol@example.com")[0] == "Welcome, Carol!"


def test_with_series_letter_two_the_first_letter_they_get_is_the_second(site, tmp_path):
    site.service("news", letters=WELCOME)
    site.cli("import-from", "csv", str(move_in(tmp_path)), "--service", "news",
             "--series", "letter", "2")
    assert site.subscribers("news")["carol@example.com"].sent == 1
    site.cli("cron")
    assert subjects(site, "carol@example.com")[0] == "Letter two for Carol"


def test_the_dry_run_says_what_each_choice_would_send(site, tmp_path):
    site.service("news", letters=WELCOME)
    out = site.cli("import-from", "csv", str(move_in(tmp_path)), "--service", "news",
                   "--dry-run").stdout
    assert ("A series of 3 letters; for the confirmed new here it would send: "
            "--series start: 2 subscribers would get 3 letters each (6 letters in all); "
            "--series end (chosen): none of its letters (one added to it later reaches them); "
            "--series letter 2: 2 subscribers would get 2 letters each (4 letters in all); "
            "--series letter 3: 2 subscribers would get 1 letter each (2 letters in all).") in out
    assert site.subscribers("news") == {}


def test_a_letter_the_series_does_not_have_imports_nothing(site, tmp_path):
    from test_cli_input import refused

    site.service("news", letters=WELCOME)
    refused(site, "import-from", "csv", str(move_in(tmp_path)), "--service", "news",
            "--series", "letter", "4", says=("has 3 letters",))
    refused(site, "import-from", "csv", str(move_in(tmp_path)), "--service", "news",
            "--series", "middle", says=("start, end or letter N",))
    assert site.subscribers("news") == {}


def test_a_plain_news_list_imports_as_before_and_says_nothing_of_a_series(site, tmp_path):
    site.service("news")
    out = site.ok("import-from", "csv", str(move_in(tmp_path)), "--service", "news")
    carol = site.subscribers("news")["carol@example.com"]
    assert (carol.state, carol.sent) == (SubscriberState.ACTIVE, 0)
    assert "series" not in out


def _post_import(site, fields: dict) -> tuple[int, str]:
    from urllib.parse import urlencode

    from support.servetools import call, environ, log_in
    from vykhukhol.web import admin as admin_app

    app = admin_app.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)
    body = urlencode({"csrf": csrf, **fields}).encode()
    status, _, page, errors = call(app, environ(
        "POST", "/services/news/import-from", "", body, "application/x-www-form-urlencoded",
        str(len(body)), script="/admin", HTTP_COOKIE=cookie))
    assert "Traceback" not in errors, errors
    return status, page


def test_the_admin_page_offers_the_choice_and_its_dry_run_says_what_each_sends(site, tmp_path):
    import html

    site.service("news", letters=WELCOME)
    text = move_in(tmp_path).read_text()
    status, page = _post_import(site, {"tool": "csv", "text": text, "dry_run": "yes"})
    assert status == 200 and 'name="series"' in page and 'value="letter 3"' in page
    said = html.unescape(page)  # the admin speaks the site's language, Russian by default
    assert "после серии (выбрано): ни одного её письма" in said, said
    assert "с начала: 2 подписчика получили бы по 3 письма (всего 6 писем)" in said
    assert site.subscribers("news") == {}
    status, page = _post_import(site, {"tool": "csv", "text": text})  # the default: end
    assert status == 200
    assert site.subscribers("news")["carol@example.com"].state is SubscriberState.DONE
    site.cli("cron")
    assert subjects(site, "carol@example.com") == []


def test_the_admin_form_imports_from_the_start_when_asked(site, tmp_path):
    site.service("news", letters=WELCOME)
    status, page = _post_import(site, {"tool": "csv", "text": move_in(tmp_path).read_text(),
                                       "series": "start"})
    assert status == 200
    assert site.subscribers("news")["carol@example.com"].sent == 0
    site.cli("cron")
    assert subjects(site, "carol@example.com")[0] == "Welcome, Carol!"
    status, page = _post_import(site, {"tool": "csv", "text": "email\nzoe@example.com\n",
                                       "series": "letter 9"})
    assert status == 400 and "в серии news писем: 3" in page, page


def test_the_series_counts_read_in_russian_with_russian_plurals():
    from vykhukhol.members.importers.outcome import Outcome, summary
    from vykhukhol.members.importers.verdicts import Standing
    from vykhukhol.members.importing import END, START

    counts = {Standing.CONFIRMED: 21, Standing.UNCONFIRMED: 0, Standing.SUPPRESSED: 0}
    said = summary(Outcome("csv", True, counts, {}, [], 0, 21, 0, 0, 0, 21, 5, END), "ru")
    assert said[-1].startswith("Серия из 5 писем; новым подтверждённым отправила бы: ")
    assert "с начала: 21 подписчик получил бы по 5 писем (всего 105 писем)" in said[-1]
    assert "после серии (выбрано): ни одного её письма" in said[-1]
    assert "с письма 4: 21 подписчик получил бы по 2 письма (всего 42 письма)" in said[-1]
    done = summary(Outcome("csv", False, counts, {}, [], 0, 1, 0, 0, 0, 1, 1, START), "ru")
    assert done[-1] == ("Серия из 1 письма, с начала: 1 подписчик получит по 1 письму "
                        "(всего 1 письмо).")
