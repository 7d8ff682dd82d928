"""Bad input on the command line: one clear line, an exit code, nothing changed
(docs/using/command-line.md#command-line).

Every refusal here is checked the same way: exit code 1 (2 for a usage error),
nothing on stdout, exactly one line on stderr that says what is wrong, and
every file and folder under the data directory byte for byte as it was. Most
cases run the CLI in-process (``site.call``); a few run the real command in a
subprocess to check the real exit code and that no traceback leaks out.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from support.clikit import refused, snapshot
from vykhukhol import cli

LIB = Path(__file__).resolve().parents[2] / "lib"
NAME_40 = "a" * 40
NAME_41 = "a" * 41
BAD_NAMES = ["../x", "A", "a/b", NAME_41, "", ".hidden", "a b", "x\ny"]


def run(*args: str, data: Path, **env_extra: str) -> subprocess.CompletedProcess:
    """The real ``python -m vykhukhol --data DATA ARGS`` in a subprocess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(LIB) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("VYKHUKHOL_DATA", None)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data), *args],
                          capture_output=True, text=True, errors="surrogateescape",
                          timeout=120, env=env)


def assert_one_clean_line(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("vykhukhol"), result.stderr
    assert result.stdout == "", result.stdout


@pytest.fixture
def site(site):
    """The shared site with something in it: two DBs, a series, subscribers, a newsletter.

    Every lock file a normal day creates exists already, so a refusal that
    leaves the folder as it was really changed nothing.
    """
    site.service("news", letters=[("Lesson 1", "1d", "Hello {{ name }}"),
                                  ("Lesson 2", "2d", "Again, {{ name }}")])
    site.subscriber("news", "bob@example.org", name="Bob")
    site.subscriber("news", "Carol@example.org", name="Carol", state="new", ago=60)
    site.service("extra", db="other")
    site.ok("newsletter", "create", "--services", "news", "--subject", "Hi", "--body", "Hello all")
    return site


def body_args(**overrides: str) -> list[str]:
    values = {"--subject": "Lesson 3", "--delay": "1d", "--body": "Text"}
    values.update(overrides)
    return [f"{option}={value}" for option, value in values.items()]  # "=": values may start with "-"


# --- names -------------------------------------------------------------------

@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_an_invalid_db_name_is_refused_by_every_command(site, name):
    """A DB name outside [a-z0-9][a-z0-9_-]{0,39} is refused before any file is touched."""
    for args in (["db", "add", name], ["db", "remove", name],
                 ["service", "add", "fresh", "--db", name, "--title", "Fresh"]):
        message = refused(site, *args, says=("invalid DB name",))
        assert "a-z" in message


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_an_invalid_service_name_is_refused_by_every_command(site, name):
    """Every command that names a service refuses an invalid name with the rule for names."""
    commands = [
        ["service", "add", name, "--db", "main", "--title", "T"],
        ["service", "edit", name, "--title", "T"],
        ["service", "enable", name],
        ["service", "disable", name],
        ["service", "remove", name],
        ["letter", "add", name, *body_args()],
        ["letter", "list", name],
        ["letter", "remove", name, "1"],
        ["subscriber", "add", name, "dan@example.org"],
        ["subscriber", "remove", name, "bob@example.org"],
        ["subscriber", "list", name],
        ["subscriber", "export", name],
        ["newsletter", "create", "--services", f"news,{name}" if name else ",",
         "--subject", "S", "--body", "B"],
    ]
    for args in commands:
        refused(site, *args, says=("service name",) if name else ())


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_an_invalid_newsletter_name_is_refused(site, name):
    """`newsletter cancel` with a name that could point elsewhere is refused, never followed."""
    refused(site, "newsletter", "cancel", name, says=("newsletter name",))


def test_a_name_of_exactly_40_characters_is_accepted_and_41_is_not(site):
    """The longest name is 40 characters."""
    refused(site, "db", "add", NAME_41, says=("invalid DB name",))
    assert site.call("db", "add", NAME_40)[0] == 0
    assert (site.root / "services" / NAME_40).is_dir()


def test_a_name_starting_with_a_dash_is_a_usage_error_or_an_invalid_name(site):
    """`db add -x` reads as an unknown option (exit 2); after `--` it is an invalid name (exit 1)."""
    refused(site, "db", "add", "-x", code=2)
    refused(site, "db", "add", "--", "-x", says=("invalid DB name",))
    refused(site, "service", "add", "--db", "main", "--title", "T", "--", "-x",
            says=("invalid service name",))


# --- things that do not exist, or exist already ------------------------------

@pytest.mark.parametrize("args, says", [
    (["service", "add", "fresh", "--db", "nodb", "--title", "T"], "no DB 'nodb'"),
    (["db", "remove", "nodb"], "no DB 'nodb'"),
    (["service", "edit", "nosuch", "--title", "T"], "no service 'nosuch'"),
    (["service", "enable", "nosuch"], "no service 'nosuch'"),
    (["service", "remove", "nosuch"], "no service 'nosuch'"),
    (["letter", "list", "nosuch"], "no service 'nosuch'"),
    (["letter", "add", "nosuch", *body_args()], "no service 'nosuch'"),
    (["letter", "remove", "news", "3"], "no letter 3"),
    (["letter", "remove", "news", "0"], "no letter 0"),
    (["letter", "remove", "news", "-1"], "no letter -1"),
    (["subscriber", "add", "nosuch", "dan@example.org"], "no service 'nosuch'"),
    (["subscriber", "remove", "news", "nobody@example.org"], "nobody@example.org"),
    (["subscriber", "remove", "extra", "bob@example.org"], "bob@example.org"),
    (["subscriber", "list", "nosuch"], "no service 'nosuch'"),
    (["subscriber", "import", "nosuch", __file__], "no service 'nosuch'"),
    (["subscriber", "export", "nosuch"], "no service 'nosuch'"),
    (["newsletter", "cancel", "20260101-000000-abcdef"], "no newsletter"),
    (["newsletter", "create", "--services", "nosuch", "--subject", "S", "--body", "B"],
     "no service 'nosuch'"),
    (["newsletter", "create", "--services", "news,nosuch", "--subject", "S", "--body", "B"],
     "no service 'nosuch'"),
], ids=lambda value: " ".join(value) if isinstance(value, list) else "")
def test_an_unknown_service_db_job_letter_or_subscriber_is_reported(site, args, says):
    """Naming something that is not there is an error naming it, and changes nothing."""
    refused(site, *args, says=(says,))


def test_a_service_name_is_unique_across_dbs(site):
    """`news` lives in DB main, so DB other cannot have a service called news."""
    refused(site, "service", "add", "news", "--db", "other", "--title", "Other news",
            says=("'news' exists already",))


def test_a_db_or_service_is_not_added_twice(site):
    """Adding what exists is a conflict, not an overwrite."""
    refused(site, "db", "add", "main", says=("exists already",))
    refused(site, "service", "add", "news", "--db", "main", "--title", "Again",
            says=("exists already",))


def test_a_db_that_still_has_services_is_not_removed(site):
    """`db remove` refuses while the DB holds services."""
    refused(site, "db", "remove", "other", says=("still has services",))


def test_init_on_an_initialised_directory_is_refused(site):
    """A second `init` must not replace the settings (and with them the secret)."""
    refused(site, "init", "--admin-email", "x@example.org", says=("initialised already",))


# --- settings ----------------------------------------------------------------

@pytest.mark.parametrize("key, value, says", [
    ("news_per_run", "0", "news_per_run: must be from 1"),
    ("news_per_run", "abc", "news_per_run: must be a whole number"),
    ("serial_per_run", "-5", "serial_per_run"),
    ("time_limit", "30", "time_limit: not a duration"),
    ("time_limit", "5x", "time_limit: not a duration"),
    ("time_limit", "1s", "time_limit: must be from 5s"),
    ("reminder_period", "", "reminder_period"),
    ("timezone", "Mars/Base", "timezone: not a known IANA time zone"),
    ("timezone", "../../etc/passwd", "timezone: not a known IANA time zone"),
    ("timezone", "", "timezone"),
    ("language", "de", "language: must be one of: ru, en"),
    ("site_url", "ftp://x", "site_url: must be an http"),
    ("site_url", "https://a b", "site_url"),
    ("site_url", "https://", "site_url"),
    ("cron_allow", "999.1.1.1", "cron_allow: '999.1.1.1' is not an IP"),
    ("cron_allow", "127.0.0.1, nonsense", "'nonsense'"),
    ("mail.smtp_port", "70000", "mail.smtp_port: must be from 1 to 65535"),
    ("mail.smtp_port", "0", "mail.smtp_port"),
    ("mail.transport", "pigeon", "mail.transport: must be one of"),
    ("mail.smtp_security", "tls", "mail.smtp_security"),
    ("mail.smtp_host", "mail.example.org/x", "mail.smtp_host"),
    ("mail.from_email", "list@", "mail.from_email"),
    ("admin_email", "not-an-address", "admin_email: this e-mail address is not valid"),
    ("nosuch", "1", "unknown setting 'nosuch'"),
    ("mail.nosuch", "1", "unknown setting 'mail.nosuch'"),
    ("main.news_per_run", "5", "unknown setting"),
], ids=lambda value: repr(value) if isinstance(value, str) else "")
def test_an_invalid_setting_is_refused_with_the_key_and_the_reason(site, key, value, says):
    """`settings set` checks the value first and leaves settings.ini as it was."""
    refused(site, "settings", "set", key, value, says=(says,))


@pytest.mark.parametrize("key, value", [
    ("mail.smtp_user", "x\n[security]\nsecret = stolen"),
    ("mail.smtp_password", "pw\rnext"),
    ("admin_email", "a@example.org\nsite_url = https://evil.example"),
    ("site_url", "https://a.example\n[mail]"),
    ("mail.sendmail_path", "/usr/sbin/sendmail\0-t"),
], ids=["smtp_user", "smtp_password", "admin_email", "site_url", "sendmail_path"])
def test_a_setting_with_a_line_break_cannot_add_lines_to_settings_ini(site, key, value):
    """A value is one line: a line break is refused, never written into the file."""
    refused(site, "settings", "set", key, value, says=(key,))


def test_mode_and_password_are_not_set_through_settings_set(site):
    """`settings set mode` and the password hash have their own commands."""
    refused(site, "settings", "set", "mode", "debug", says=("vykhukhol mode",))
    refused(site, "settings", "set", "security.admin_password", "x", says=("vykhukhol password",))


@pytest.mark.parametrize("value", ["", "x"], ids=repr)
def test_an_empty_or_guessable_link_secret_is_refused(site, value):
    """security.secret signs every confirm/unsubscribe link: an empty or tiny one would let
    anyone forge them, so `settings set` refuses it."""
    refused(site, "settings", "set", "security.secret", value, says=("security.secret",))


def test_reading_an_unknown_setting_is_refused(site):
    """`settings get` names the unknown key."""
    refused(site, "settings", "get", "nosuch", says=("unknown setting 'nosuch'",))


def test_a_too_short_password_is_refused(site):
    """`password` checks the new password before the hash is replaced."""
    refused(site, "password", "--password", "short", says=("password",))


# --- services: fields and send windows ---------------------------------------

@pytest.mark.parametrize("expr, says", [
    ("61 * * * *", "minute: 61 is out of range 0-59"),
    ("* * *", "five fields"),
    ("* * * * * *", "five fields"),
    ("* 24 * * *", "hour"),
    ("* * 0 * *", "day of month"),
    ("* * * 13 *", "month"),
    ("* * * * 8", "day of week"),
    ("*/0 * * * *", "step of 0"),
    ("* * * * MON", "names"),
    ("1,,2 * * * *", "minute"),
    ("x * * * *", "minute"),
])
def test_an_invalid_send_window_is_refused_naming_the_field(site, expr, says):
    """`--send-window` is checked at once (docs/using/services.md#schedules), on add and on edit."""
    refused(site, "service", "add", "fresh", "--db", "main", "--title", "Fresh",
            "--send-window", expr, says=(says,))
    refused(site, "service", "edit", "news", "--send-window", expr, says=(says,))


@pytest.mark.parametrize("option, value, says", [
    ("--from-email", "not-an-address", "e-mail address is not valid"),
    ("--title", "", "title: must not be empty"),
    ("--title", "\r\n\t", "title: must not be empty"),
])
def test_an_invalid_service_field_is_refused(site, option, value, says):
    """Service fields are checked before service.ini is written."""
    refused(site, "service", "add", "fresh", "--db", "main", "--title", "Fresh", option, value,
            says=(says,))
    refused(site, "service", "edit", "news", option, value, says=(says,))


def test_editing_a_service_without_any_option_is_refused(site):
    """`service edit NAME` alone has nothing to change."""
    refused(site, "service", "edit", "news", says=("nothing to change",))


# --- letters: delays and templates -------------------------------------------

@pytest.mark.parametrize("delay", ["2", "2w", "-1d", "", "1.5h", "d", "2 days", "1d2h"])
def test_an_invalid_delay_is_refused(site, delay):
    """A delay is a whole number and a unit (45s, 10m, 2h, 3d)."""
    refused(site, "letter", "add", "news", *body_args(**{"--delay": delay}),
            says=("not a duration",))


def test_a_delay_longer_than_the_calendar_is_refused(site):
    """9999999d (27 000 years) reaches past year 9999: it is refused when the letter is saved."""
    refused(site, "letter", "add", "news", *body_args(**{"--delay": "9999999d"}))


@pytest.mark.parametrize("override, says", [
    ({"--subject": "{{ name"}, "subject: line 1:"),
    ({"--subject": "Hi {% if %}"}, "subject: line 1:"),
    ({"--body": "{% if %}"}, "text: line 1:"),
    ({"--body": "Hello {{ name }}\n\n{% for x in %}\n"}, "text: line 3:"),
    ({"--body": "One\nTwo\n{{ name }\nFour"}, "text: line 3:"),
    ({"--body": "{% endif %}"}, "text: line 1:"),
    ({"--subject": ""}, "subject: must not be empty"),
    ({"--subject": "One\nTwo"}, "subject: must be one line"),
])
def test_a_letter_whose_template_does_not_compile_is_refused_naming_the_line(site, override, says):
    """`letter add` compiles subject and body first; the error names the part and the line."""
    refused(site, "letter", "add", "news", *body_args(**override), says=(says,))


def test_an_html_letter_that_does_not_compile_is_refused_naming_the_line(site, tmp_path):
    """The HTML alternative is compiled too."""
    html = tmp_path / "letter.html"
    html.write_text("<p>Hello</p>\n<p>{% for %}</p>\n", encoding="utf-8")
    refused(site, "letter", "add", "news", *body_args(), "--html-file", str(html),
            says=("HTML: line 2:",))


def test_a_letter_body_file_that_cannot_be_read_is_refused(site, tmp_path):
    """A missing, a folder or a non-UTF-8 body file is an error naming the option."""
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Privet, J\xf6rg".encode("latin-1"))
    for source in (tmp_path / "missing.txt", tmp_path, latin):
        refused(site, "letter", "add", "news", "--subject", "S", "--delay", "1d",
                "--body-file", str(source), says=("--body-file",))
    refused(site, "letter", "add", "news", *body_args(), "--html-file",
            str(tmp_path / "missing.html"), says=("--html-file",))


# --- subscribers -------------------------------------------------------------

@pytest.mark.parametrize("address", [
    "not-an-address", "dan@", "@example.org", "dan smith@example.org", "dan@example..org",
    "", "   ", "x" * 250 + "@example.org", "dan\n@example.org",
    "dan@example.org\r\nBcc: eve@example.org", "dan@example.org,eve@example.org",
    "<dan@example.org>",
], ids=repr)
def test_an_invalid_address_is_refused_by_subscriber_add(site, address):
    """`subscriber add` checks the address first; nothing is written, nobody is mailed."""
    refused(site, "subscriber", "add", "news", address, says=("e-mail address",))
    refused(site, "subscriber", "add", "news", address, "--confirmed", says=("e-mail address",))


def test_a_line_break_or_tab_in_a_name_is_cleaned_not_refused(site):
    """`--name` with CR/LF/tab is kept as one clean line: one subscriber line, no line break."""
    path = site.root / "services" / "main" / "news" / "subscribers.txt"
    lines_before = path.read_text(encoding="utf-8").count("\n")
    code, out, err = site.call("subscriber", "add", "news", "dan@example.org",
                               "--name", "Dan\r\nBcc: eve@example.org\tX", "--confirmed")
    assert code == 0, err
    stored = site.subscribers("news")["dan@example.org"]
    assert "\n" not in stored.name and "\r" not in stored.name and "\t" not in stored.name
    assert stored.name == "Dan Bcc: eve@example.org X"
    assert path.read_text(encoding="utf-8").count("\n") == lines_before + 1
    assert "eve@example.org" not in site.subscribers("news")


def test_an_address_already_there_in_another_case_changes_nothing(site):
    """BOB@example.org is bob@example.org: `subscriber add` says so and writes nothing."""
    before = snapshot(site.root)
    code, out, err = site.call("subscriber", "add", "news", "BOB@example.org", "--confirmed")
    assert (code, err) == (0, "")
    assert "subscribed already" in out
    assert snapshot(site.root) == before


def test_import_counts_valid_invalid_and_duplicate_lines(site, tmp_path):
    """A mixed address list: valid ones are added once, the summary counts each kind right."""
    source = tmp_path / "people.txt"
    source.write_text(
        "dan@example.org\n"
        "not-an-address\n"
        "BOB@example.org\n"          # already subscribed, in another case
        "erin@EXAMPLE.org\n"         # valid; the domain is lower-cased
        "\n"                         # blank: ignored
        "# a comment\n"              # comment: ignored
        "dan@example.org\n"          # twice in the file
        "frank@\n"
        "gina@example.org\n",
        encoding="utf-8")
    code, out, err = site.call("subscriber", "import", "news", str(source), "--confirmed")
    assert code == 0, err
    assert out.strip() == "3 added, 2 already there, 2 invalid"
    assert "line 2: 'not-an-address'" in err and "line 8: 'frank@'" in err
    subscribers = site.subscribers("news")
    assert set(subscribers) == {"bob@example.org", "Carol@example.org", "dan@example.org",
                                "erin@example.org", "gina@example.org"}
    assert subscribers["bob@example.org"].name == "Bob"
    assert all(subscribers[e].state.value == "active"
               for e in ("dan@example.org", "erin@example.org", "gina@example.org"))


def test_import_of_a_csv_with_email_and_name_columns(site, tmp_path):
    """A CSV with a header takes `email` and `name` from their columns, in any order."""
    source = tmp_path / "people.csv"
    source.write_text('name,email\n"Smith, Dan",dan@example.org\nErin,bad@\n,erin@example.org\n',
                      encoding="utf-8")
    code, out, err = site.call("subscriber", "import", "news", str(source))
    assert code == 0, err
    assert out.strip() == "2 added, 0 already there, 1 invalid"
    subscribers = site.subscribers("news")
    assert subscribers["dan@example.org"].name == "Smith, Dan"
    assert subscribers["dan@example.org"].state.value == "new"
    assert subscribers["erin@example.org"].name == ""


def test_import_of_a_file_that_cannot_be_read_is_refused(site, tmp_path):
    """A missing or non-UTF-8 import file is one error line, and nothing is added."""
    latin = tmp_path / "latin.txt"
    latin.write_bytes("j\xf6rg@example.org\n".encode("latin-1"))
    refused(site, "subscriber", "import", "news", str(tmp_path / "missing.txt"),
            says=("import file",))
    refused(site, "subscriber", "import", "news", str(latin), says=("not UTF-8",))


def test_export_then_import_gives_the_same_subscribers(site, tmp_path):
    """`subscriber export` writes a CSV that `subscriber import` reads back unchanged."""
    site.subscriber("news", "dan@example.org", name='Smith, "Dan" Жуков')
    site.subscriber("news", "erin@example.org", name="Erin; O'Hara")
    target = tmp_path / "news.csv"
    assert site.call("subscriber", "export", "news", str(target))[0] == 0
    code, out, err = site.call("subscriber", "export", "news")
    assert code == 0, err
    assert out == target.read_bytes().decode("utf-8")

    rows = list(csv.DictReader(io.StringIO(out.removeprefix("\ufeff"))))  # the BOM
    original = site.subscribers("news")
    assert {row["email"]: row["name"] for row in rows} == {e: s.name for e, s in original.items()}
    assert {row["email"]: row["state"] for row in rows} == {  # the admin's word
        e: s.state.label("en") for e, s in original.items()}

    code, out, err = site.call("subscriber", "import", "extra", str(target), "--confirmed")
    assert code == 0, err
    assert out.strip() == f"{len(original)} added, 0 already there, 0 invalid"
    copied = site.subscribers("extra")
    assert {e: s.name for e, s in copied.items()} == {e: s.name for e, s in original.items()}


def test_export_to_a_folder_that_does_not_exist_is_one_error_line(site, tmp_path):
    """An export file that cannot be created is a clear error, not a traceback."""
    refused(site, "subscriber", "export", "news", str(tmp_path / "no" / "such" / "news.csv"),
            says=("news.csv",))


# --- newsletters -------------------------------------------------------------

@pytest.mark.parametrize("extra, says", [
    (["--body", ""], "text: must not be empty"),
    (["--body", "  \n "], "text: must not be empty"),
    (["--body", "B", "--at", "tomorrow"], "'tomorrow'"),
    (["--body", "B", "--at", "2026-02-30 10:00"], "'2026-02-30 10:00'"),
    (["--body", "B", "--at", "2026-12-01"], "'2026-12-01'"),
    (["--body", "B", "--at", "2026-12-01 25:00"], "'2026-12-01 25:00'"),
    (["--body", "{% if %}"], "text: line 1:"),
    (["--body-file", "/nonexistent/letter.txt"], "--body-file"),
], ids=lambda value: " ".join(value) if isinstance(value, list) else "")
def test_newsletter_create_refuses_bad_input_and_leaves_no_job(site, extra, says):
    """A newsletter is checked first; a refusal leaves no .job, .letter or .list behind."""
    refused(site, "newsletter", "create", "--services", "news", "--subject", "Hi", *extra,
            says=(says,))


@pytest.mark.parametrize("subject, says", [
    ("", "subject"), ("One\nTwo", "subject"), ("{{ name", "subject: line 1:")])
def test_newsletter_create_refuses_a_bad_subject(site, subject, says):
    """The subject is one non-empty line that compiles."""
    refused(site, "newsletter", "create", "--services", "news", "--subject", subject,
            "--body", "B", says=(says,))


def test_newsletter_create_refuses_an_empty_service_list(site):
    """`--services ""` or only commas names no service."""
    for services in ("", ",", " , "):
        refused(site, "newsletter", "create", "--services", services, "--subject", "S",
                "--body", "B", says=("at least one service",))


def test_newsletter_create_refuses_a_start_time_outside_the_calendar(site):
    """A start at the edge of the calendar, shifted by the time zone, is an error line."""
    site.set(timezone="Asia/Tokyo")
    refused(site, "newsletter", "create", "--services", "news", "--subject", "S", "--body", "B",
            "--at", "0001-01-01 00:00", says=("0001-01-01 00:00",))


# --- usage errors ------------------------------------------------------------

@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["mode", "maybe"],
    ["db"],
    ["service", "add", "fresh", "--db", "main"],
    ["letter", "add", "news", "--subject", "S", "--body", "B"],
    ["letter", "add", "news", "--subject", "S", "--delay", "1d"],
    ["letter", "add", "news", "--subject", "S", "--delay", "1d", "--body", "B",
     "--body-file", "f"],
    ["letter", "remove", "news", "abc"],
    ["subscriber", "add", "news"],
    ["newsletter", "create", "--subject", "S", "--body", "B"],
    ["service", "add", "fresh", "--db", "main", "--title", "T", "--delete-finished", "maybe"],
    ["serve", "--port", "http"],
    ["status", "--verbose"],
], ids=lambda args: " ".join(args) or "(nothing)")
def test_a_usage_error_exits_2_with_one_line(site, args):
    """Unknown commands and options, missing required ones: exit 2, one line, nothing changed."""
    refused(site, *args, code=2)


# --- no data directory -------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["status"], ["cron"], ["mode", "working"], ["settings", "get", "mode"],
    ["settings", "set", "news_per_run", "5"], ["db", "add", "main"], ["service", "list"],
    ["letter", "list", "news"], ["subscriber", "add", "news", "dan@example.org"],
    ["newsletter", "list"], ["password", "--password", "correct-horse-2"],
], ids=" ".join)
def test_a_command_without_an_initialised_data_directory_says_to_run_init(tmp_path, args):
    """Before `init`, every command but init says to run it and creates nothing."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["--data", str(empty), *args])
    assert code == 1, err.getvalue()
    assert len(err.getvalue().splitlines()) == 1
    assert "vykhukhol init" in err.getvalue()
    assert list(empty.iterdir()) == []


def test_init_with_bad_values_creates_nothing(tmp_path):
    """`init` checks its options before it makes the data directory."""
    cgi = tmp_path / "cgi"
    cgi.mkdir()
    (cgi / "cron.py").write_text("# cron\n")
    for options in (["--admin-email", "not-an-address"], ["--site-url", "ftp://x"],
                    ["--password", "short"]):
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            code = cli.main(["--data", str(tmp_path / "data"), "init", "--cgi-dir", str(cgi),
                             *options])
        assert code == 1, (options, err.getvalue())
        assert len(err.getvalue().splitlines()) == 1, err.getvalue()
        assert not (tmp_path / "data").exists(), options
        assert sorted(p.name for p in cgi.iterdir()) == ["cron.py"], options


# --- the real command in a subprocess ----------------------------------------

def test_the_real_command_exits_2_on_an_unknown_command(site):
    """The installed entry point exits 2 with one line and no traceback."""
    result = run("frobnicate", data=site.root)
    assert result.returncode == 2
    assert_one_clean_line(result)
    assert "frobnicate" in result.stderr


def test_the_real_command_exits_1_on_a_bad_setting(site):
    """`settings set news_per_run 0` exits 1 with one line; settings.ini is unchanged."""
    before = snapshot(site.root)
    result = run("settings", "set", "news_per_run", "0", data=site.root)
    assert result.returncode == 1
    assert_one_clean_line(result)
    assert "news_per_run" in result.stderr
    assert snapshot(site.root) == before


def test_the_real_command_exits_1_on_a_bad_template(site):
    """A template error in a subprocess names the line, on one line of stderr."""
    before = snapshot(site.root)
    result = run("letter", "add", "news", "--subject", "S", "--delay", "1d",
                 "--body", "a\nb\n{% if %}", data=site.root)
    assert result.returncode == 1
    assert_one_clean_line(result)
    assert "text: line 3:" in result.stderr
    assert snapshot(site.root) == before


def test_the_real_command_exits_1_without_a_data_directory(tmp_path):
    """With `--data` pointing at an empty folder the command says to run init, and exits 1."""
    result = run("status", data=tmp_path)
    assert result.returncode == 1
    assert_one_clean_line(result)
    assert "vykhukhol init" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_real_command_exits_1_when_the_export_file_cannot_be_created(site, tmp_path):
    """An unwritable export target is one line and exit 1, not a traceback."""
    result = run("subscriber", "export", "news", str(tmp_path / "no" / "such.csv"), data=site.root)
    assert result.returncode == 1
    assert_one_clean_line(result)


def test_subscriber_list_survives_a_line_that_is_not_utf8(site):
    """A line saved in cp1251 by FTP is listed byte for byte, on a strict UTF-8 terminal too."""
    path = site.root / "services" / "main" / "news" / "subscribers.txt"
    vasya = "vasya@example.org\tВася\tactive\t2026-11-01T10:00:00Z\t-\t0\t-\t0\t-\t0\t-\n"
    with open(path, "ab") as handle:
        handle.write(vasya.encode("cp1251"))
    result = run("subscriber", "list", "news", data=site.root, PYTHONIOENCODING="utf-8:strict")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "bob@example.org" in result.stdout and "Carol@example.org" in result.stdout
    printed = result.stdout.encode("utf-8", "surrogateescape")
    assert vasya.encode("cp1251") in printed


CP1251_SUBJECT = "Урок 3".encode("cp1251")  # typed on a terminal left in cp1251


@pytest.mark.parametrize("args", [
    [b"letter", b"add", b"news", b"--subject", CP1251_SUBJECT, b"--delay", b"1d", b"--body", b"Text"],
    [b"letter", b"add", b"news", b"--subject", b"S", b"--delay", b"1d", b"--body", CP1251_SUBJECT],
    [b"newsletter", b"create", b"--services", b"news", b"--subject", CP1251_SUBJECT,
     b"--body", b"Text"],
    [b"settings", b"set", b"mail.smtp_user", CP1251_SUBJECT],
], ids=["letter subject", "letter body", "newsletter subject", "setting"])
def test_an_argument_that_is_not_utf8_is_refused_not_written(site, args):
    """Every data file is UTF-8: bytes from a cp1251 terminal are refused, never stored raw."""
    before = snapshot(site.root)
    env = dict(os.environ, PYTHONPATH=str(LIB))
    env.pop("VYKHUKHOL_DATA", None)
    result = subprocess.run([sys.executable.encode(), b"-m", b"vykhukhol", b"--data",
                             bytes(site.root), *args],
                            capture_output=True, text=True, errors="surrogateescape",
                            timeout=120, env=env)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert_one_clean_line(result)
    assert snapshot(site.root) == before


def test_a_hand_edited_letter_with_a_bad_delay_is_reported_by_its_number(site):
    """A Delay header broken by FTP makes `letter list` name the letter, not just the value."""
    letter = site.root / "services" / "main" / "news" / "letters" / "002.txt"
    letter.write_text("Subject: Lesson 2\nDelay: 2 weeks\n\nAgain\n", encoding="utf-8")
    message = refused(site, "letter", "list", "news", says=("2 weeks",))
    assert "letter 2" in message or "002.txt" in message, message
