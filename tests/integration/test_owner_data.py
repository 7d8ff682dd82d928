"""The owner's data and first start, each driven the way the owner meets it: the real CLI in
a subprocess, a real ``vykhukhol serve``, the admin app."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from urllib.parse import urlencode

from support.servetools import call, environ, log_in
from vykhukhol.timeutil import now
from vykhukhol.web import admin as admin_app

BOM = "\ufeff"


def _admin_post(site, path: str, fields: dict) -> tuple[int, str]:
    app = admin_app.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)
    body = urlencode({"csrf": csrf, **fields}).encode()
    status, _, page, errors = call(app, environ("POST", path, "", body,
                                                "application/x-www-form-urlencoded", str(len(body)),
                                                script="/admin", HTTP_COOKIE=cookie))
    assert "Traceback" not in errors, errors
    return status, page


# --- item 6: imports ---------------------------------------------------------

def test_a_quoted_newline_in_an_imported_csv_stays_in_its_record(site, tmp_path):
    site.service("news")
    source = tmp_path / "people.csv"
    source.write_text('email,name\r\nann@example.org,"Ann\r\nSmith"\r\n'
                      'bob@example.org,"Bob, ""the builder"""\r\n', encoding="utf-8")
    result = site.cli("subscriber", "import", "news", str(source), "--confirmed")
    assert result.stdout.strip() == "2 added, 0 already there, 0 invalid", result
    found = site.subscribers("news")
    assert found["ann@example.org"].name == "Ann Smith"
    assert found["bob@example.org"].name == 'Bob, "the builder"'


def test_an_unconfirmed_import_is_dated_today_and_asked_to_confirm_by_the_next_run(site, tmp_path):
    site.service("news")
    source = tmp_path / "people.txt"
    source.write_text("new@example.org\n")
    before = now()
    site.cli("subscriber", "import", "news", str(source))
    sub = site.subscribers("news")["new@example.org"]
    assert sub.state.value == "new"
    assert before - timedelta(seconds=5) <= sub.subscribed <= now()  # not reminder_period back
    site.run_at()
    asked = [m for m in site.outbox() if str(m["To"]) == "new@example.org"]
    assert len(asked) == 1, [str(m["To"]) for m in site.outbox()]


def test_a_field_over_the_csv_limit_is_one_refused_line_not_an_error_page(site):
    site.service("news")
    status, page = _admin_post(site, "/services/news/import",
                               {"text": "ok@example.org\n" + "x" * 200_000 + "@example.org\n"})
    assert status == 200, page[:300]
    assert '<div class="error" id="import-result">' in page
    assert "ok@example.org" in site.subscribers("news")


# --- item 6: exports ---------------------------------------------------------

def test_the_export_is_excel_csv_with_a_bom_and_says_confirmed(site, tmp_path):
    site.service("news")
    site.subscriber("news", "ann@example.org", name="Анна")
    site.subscriber("news", "bob@example.org", state="new")
    target = tmp_path / "news.csv"
    site.cli("subscriber", "export", "news", str(target))
    raw = target.read_bytes()
    assert raw.startswith(BOM.encode()) and b"\r\n" in raw
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert {row["email"]: row["state"] for row in rows} == {
        "ann@example.org": "confirmed", "bob@example.org": "not confirmed"}
    assert rows[0]["name"] == "Анна"


def test_export_refuses_to_overwrite_a_file_and_leaves_it_as_it_was(site, tmp_path):
    site.service("news")
    site.subscriber("news", "ann@example.org")
    target = tmp_path / "precious.csv"
    target.write_text("the only copy\n")
    result = site.cli("subscriber", "export", "news", str(target), check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"vykhukhol: {target} exists already; nothing written (remove it or name another file)"]
    assert target.read_text() == "the only copy\n"


# --- item 9: formulas behind a separator --------------------------------------

HOSTILE = ["x;=cmd|' /C calc'!A0;", "a,+1+cmd|' /C calc'!A0", "b\t@SUM(1)", "c; -2+3", "d\n=1+1",
           "=plain"]


def test_no_cell_starts_a_formula_whichever_separator_the_spreadsheet_splits_on(site, tmp_path):
    site.service("news")
    for number, name in enumerate(HOSTILE):
        site.cli("subscriber", "add", "news", f"u{number}@example.org", f"--name={name}", "--confirmed")
    target = tmp_path / "news.csv"
    site.cli("subscriber", "export", "news", str(target))
    text = target.read_text(encoding="utf-8-sig")
    for separator in (",", ";", "\t"):
        for line in re.split(r"\r\n|\r|\n", text):
            for cell in line.split(separator):
                cell = cell.strip(' "')
                assert cell == "-" or not cell.startswith(("=", "+", "-", "@")), (separator, line)
    # and the csv reader gives the names back with only the marks added
    names = {row["email"]: row["name"] for row in csv.DictReader(io.StringIO(text))}
    assert names["u0@example.org"] == "x;'=cmd|' /C calc'!A0;"
    assert names["u5@example.org"] == "'=plain"


# --- item 1: HTML that is only white space is no HTML ---------------------------

def _parts(message) -> list[str]:
    return [part.get_content_type() for part in message.walk() if not part.is_multipart()]


def test_one_enter_in_the_html_box_of_a_letter_to_all_users_sends_plain_text(site):
    site.service("news")
    site.subscriber("news", "ann@example.org")
    status, page = _admin_post(site, "/newsletters/new",
                               {"svc_news": "on", "subject": "News", "text": "Hello",
                                "html": "\r\n", "at": "", "action": "create"})
    assert status in (200, 303), page[:500]
    [job] = list(site.data.newsletters.glob("*.letter"))
    assert "=== html ===" not in job.read_text()
    site.run_at()
    [letter] = [m for m in site.outbox() if str(m["To"]) == "ann@example.org"]
    assert _parts(letter) == ["text/plain"]


def test_a_white_space_html_file_is_no_html_from_the_cli_or_ftp(site, tmp_path):
    site.service("course")
    blank = tmp_path / "blank.html"
    blank.write_text("\n \n")
    site.cli("letter", "add", "course", "--subject", "One", "--delay", "0s", "--body", "Hi",
             "--html-file", str(blank))
    letters = site.data.root / "services" / "main" / "course" / "letters"
    assert not (letters / "001.html").exists()
    assert "(html)" not in site.cli("letter", "list", "course").stdout
    (letters / "001.html").write_text("\n")  # uploaded by FTP
    assert "(html)" not in site.cli("letter", "list", "course").stdout
    site.subscriber("course", "ann@example.org")
    site.run_at()
    [letter] = [m for m in site.outbox() if str(m["To"]) == "ann@example.org"]
    assert _parts(letter) == ["text/plain"]


# --- items 2 and 4: the first start of serve -------------------------------------

def _serve(data, port: int, folder, **env: str):
    """Start ``vykhukhol serve`` on a port; (process, its output file). It is
    ready once it printed its ticker line, or it has exited."""
    import os
    import subprocess
    import sys
    import time

    from support.servetools import subprocess_env

    out = folder / f"serve-{port}.out"
    environment = subprocess_env(**env)
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if name not in env:
            environment.pop(name, None)
    with out.open("wb") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "vykhukhol", "--data", str(data), "serve",
                                 "--port", str(port), "--no-ticker", "--cgi-dir", str(folder)],
                                stdout=handle, stderr=subprocess.STDOUT, env=environment,
                                cwd=os.fspath(folder))
    deadline = time.monotonic() + 30
    while "ticker:" not in out.read_text() and proc.poll() is None:
        assert time.monotonic() < deadline, out.read_text()
        time.sleep(0.1)
    return proc, out


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=15)


def test_a_busy_port_makes_nothing_and_the_next_start_prints_the_password_and_its_port(tmp_path):
    import socket
    import urllib.request

    from support.webtools import free_port
    from vykhukhol import settings as settings_mod

    data = tmp_path / "data"
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        proc, out = _serve(data, busy.getsockname()[1], tmp_path, LANG="en_GB.UTF-8")
        assert proc.wait(timeout=15) == 1, out.read_text()
    finally:
        busy.close()
    assert "cannot listen on" in out.read_text() and "nothing was changed" in out.read_text()
    assert "--port" in out.read_text()
    assert not (data / "settings.ini").exists()
    assert not data.exists() or not any(data.rglob("*")), sorted(data.rglob("*"))

    port = free_port()
    proc, out = _serve(data, port, tmp_path, LANG="en_GB.UTF-8")
    try:
        printed = out.read_text()
        assert re.search(r"admin password \S+", printed), printed
        url = re.search(r"subscribe to the demo list: (\S+)", printed).group(1)
        with urllib.request.urlopen(url, timeout=10) as answer:
            page = answer.read().decode()
        assert "Demo list" in page  # item 4: an English locale gets an English site
    finally:
        _stop(proc)
    settings = settings_mod.load(data / "settings.ini")
    assert settings["site_url"] == f"http://127.0.0.1:{port}"
    assert settings["language"] == "en"

    other = free_port()
    proc, out = _serve(data, other, tmp_path)
    _stop(proc)
    assert f"site_url is now http://127.0.0.1:{other}" in out.read_text()
    assert "admin password" not in out.read_text()
    # ...and a port change is never left behind by a serve that exits
    assert settings_mod.load(data / "settings.ini")["site_url"] == f"http://127.0.0.1:{port}"


def test_a_site_url_that_is_not_local_stays_whatever_port_serve_uses(site, tmp_path):
    from support.webtools import free_port

    proc, out = _serve(site.root, free_port(), tmp_path)
    _stop(proc)
    assert "site_url is now" not in out.read_text()
    assert site.settings()["site_url"] == "https://lists.example.org"


def test_the_language_of_a_fresh_serve_is_the_locale_s():
    from vykhukhol.web.fresh_site import locale_language

    assert locale_language({"LANG": "ru_RU.UTF-8"}) == "ru"
    assert locale_language({"LC_ALL": "en_US.UTF-8", "LANG": "ru_RU.UTF-8"}) == "en"
    assert locale_language({"LC_MESSAGES": "ru_UA.UTF-8", "LANG": "C.UTF-8"}) == "ru"
    assert locale_language({"LC_ALL": "", "LANG": "C"}) == "en"
    assert locale_language({}) == "en"


# --- item 5: a local serve is not a host -------------------------------------------

HOSTING = ("shipped name cgi/cron.py", "No renamed cron script", "inside the web folder", "not https",
           "Compiled bytecode", "Nothing reads the bounces")


def test_a_local_data_directory_gets_the_local_note_not_the_hosting_warnings(tmp_path):
    import subprocess
    import sys

    from support.servetools import subprocess_env
    from vykhukhol.datadir import DataDir
    from vykhukhol.web.fresh_site import first_start

    cgi = tmp_path / "cgi"
    cgi.mkdir()
    (cgi / "cron.py").write_text("# shipped\n")
    data = DataDir(tmp_path / "data")
    password = first_start(data, "http://127.0.0.1:8080", "en")  # what a fresh serve does
    status = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data.root), "status",
                             "--cgi-dir", str(cgi)], capture_output=True, text=True,
                            env=subprocess_env(), timeout=60)
    assert status.returncode == 0, status.stderr
    assert "warning: This is a local trial: site_url is http://127.0.0.1:8080" in status.stdout
    assert "warning: Mail is not configured" in status.stdout  # this matters locally too
    for words in HOSTING:
        assert words not in status.stdout, words

    app = admin_app.app(data, cgi)
    cookie, _ = log_in(app, password)
    code, _, page, _ = call(app, environ("GET", "/", "", b"", "", "missing", script="/admin",
                                         HTTP_COOKIE=cookie))
    assert code == 200 and "This is a local trial" in page
    for words in HOSTING:
        assert words not in page, words

    from vykhukhol import settings as settings_mod

    settings_mod.update(data.settings, {"site_url": "http://lists.example.org"})  # now a host
    status = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data.root), "status",
                             "--cgi-dir", str(cgi)], capture_output=True, text=True,
                            env=subprocess_env(), timeout=60)
    assert "shipped name cgi/cron.py" in status.stdout and "not https" in status.stdout
    assert "local trial" not in status.stdout


# --- item 7: a start time is echoed as it was typed ---------------------------------

def test_a_start_in_the_past_is_echoed_as_typed_by_the_cli_and_the_admin(site):
    site.set(timezone="Europe/Moscow")
    site.service("news")
    site.subscriber("news", "a@example.org")
    result = site.cli("newsletter", "create", "--services", "news", "--subject", "Old",
                      "--body", "Hello", "--at", "2020-01-01 10:00", check=False)
    assert result.returncode == 1
    assert "the start time 2020-01-01 10:00 is in the past" in result.stderr, result.stderr
    site.set(language="en")
    status, page = _admin_post(site, "/newsletters/new",
                               {"svc_news": "on", "subject": "Old", "text": "Hi",
                                "at": "2020-01-01T10:00", "action": "create"})
    assert status == 400 and "the start time 2020-01-01 10:00 is in the past" in page, page[:2000]


# --- item 7: the Apache page's step 6 (label apache-step-6) makes the file its letter is read from

def test_the_apache_pages_step_6_runs_as_written_with_the_welcome_letter_it_makes(site, tmp_path):
    """The example block of step 6, run line by line in an empty folder (the
    `settings set` lines need a real mail provider and are left out)."""
    import subprocess
    import sys

    from support import docskit
    from support.servetools import subprocess_env

    step = docskit.section("apache-step-6")  # docs/deploying/apache.md
    block = docskit.fenced_blocks(step.split("Then, for example:\n", 1)[1])[0]
    vykhukhol = f"{sys.executable} -m vykhukhol --data {site.root}"
    ran = []
    for line in block.splitlines():
        command = line.strip()
        if not command or command.startswith("#") or " settings set " in command:
            continue
        command = command.replace("PYTHONPATH=lib python3 -m vykhukhol", vykhukhol)
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                                env={**subprocess_env(), "HOME": str(tmp_path)}, timeout=60)
        assert result.returncode == 0, (line, result.stderr)
        ran.append(command.split()[0])
    assert "printf" in ran
    letters = site.cli("letter", "list", "news").stdout
    assert "Welcome" in letters
    body = (site.root / "services" / "main" / "news" / "letters" / "001.txt").read_text()
    # one unsubscribe link, the footer's (docs/deploying/apache.md#apache-step-6)
    assert "Hello {{ name }}," in body and "{{ unsubscribe_url }}" not in body
