"""The rough edges a new site owner hit, each
driven the way the owner met it: the admin app, the real CLI, a real run."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest

from support.servetools import call, environ, log_in
from vykhukhol import newsletters
from vykhukhol.timeutil import now
from vykhukhol.web import admin as admin_app

ADMIN = "admin@example.org"


def _admin(site):
    app = admin_app.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)
    return app, cookie, csrf


def _get(app, cookie, path):
    status, _, page, errors = call(app, environ("GET", path, "", b"", "", "missing",
                                                script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, (status, page[:500], errors)
    return page


def _post(app, cookie, path, fields):
    body = urlencode(fields).encode()
    return call(app, environ("POST", path, "", body, "application/x-www-form-urlencoded",
                             str(len(body)), script="/admin", HTTP_COOKIE=cookie))


def test_the_series_editor_offers_up_for_every_letter_but_the_first_and_down_for_every_but_the_last(site):
    site.service("course", letters=[("One", "0s", "1"), ("Two", "1d", "2"), ("Three", "1d", "3")])
    app, cookie, _ = _admin(site)
    page = _get(app, cookie, "/services/course")
    ups = sorted(int(n) for n in re.findall(r"/letters/(\d+)/up", page))
    downs = sorted(int(n) for n in re.findall(r"/letters/(\d+)/down", page))
    assert ups == [2, 3]
    assert downs == [1, 2]


@pytest.mark.parametrize("args", [["--port", "70000"], ["--port", "-1"], ["--port", "0"],
                                  ["--port", "eighty"], ["--host", "999.0.0.1"],
                                  ["--host", "bad host"], ["--host", "a_b.example"]])
def test_serve_refuses_a_bad_port_or_host_in_one_line_with_exit_2(site, args):
    result = site.cli("serve", "--no-ticker", *args, check=False, timeout=30)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert args[0] in result.stderr


IMPORT = ("email,name\n"
          "ann@example.org,Ann\n"
          ",Empty\n"
          "bob@example.org,Bob\n"
          "ann@example.org,Ann again\n"
          "not-an-address,Nobody\n"
          "\n"
          "# a comment\n"
          "carl@example.org,\n"
          "dora@example.org,Dora\n")


def test_every_imported_row_is_counted_added_known_or_invalid(site):
    site.service("news")
    path = site.root.parent / "import.csv"
    path.write_text(IMPORT)
    result = site.cli("subscriber", "import", "news", str(path), "--confirmed")
    assert "4 added, 1 already there, 2 invalid" in result.stdout, result
    assert "no e-mail address" in result.stderr


def test_header_less_email_comma_name_lines_are_imported_with_their_names(site):
    site.service("news")
    app, cookie, csrf = _admin(site)
    status, _, page, _ = _post(app, cookie, "/services/news/import",
                               {"csrf": csrf, "text": "kate@example.com,Kate\nlev@example.com,Лев\n",
                                "confirmed": "yes"})
    assert status == 200, page[:500]
    assert re.search(r'<div class="flash" id="import-result">', page), page
    subscribers = site.subscribers("news")
    assert subscribers["kate@example.com"].name == "Kate"
    assert subscribers["lev@example.com"].name == "Лев"


def test_an_import_with_refused_rows_is_not_shown_as_a_success(site):
    site.service("news")
    app, cookie, csrf = _admin(site)
    status, _, page, _ = _post(app, cookie, "/services/news/import",
                               {"csrf": csrf, "text": "ok@example.com\nnot an address\n"})
    assert status == 200
    assert '<div class="error" id="import-result">' in page, page  # in red


def test_a_newsletter_start_in_the_past_is_refused_by_the_cli_and_the_admin(site):
    site.service("news")
    site.subscriber("news", "a@example.org")
    result = site.cli("newsletter", "create", "--services", "news", "--subject", "Old",
                      "--body", "Hello", "--at", "2020-01-01 10:00", check=False)
    assert result.returncode == 1
    assert "in the past" in result.stderr and "leave it out to start now" in result.stderr
    app, cookie, csrf = _admin(site)
    status, _, page, _ = _post(app, cookie, "/newsletters/new",
                               {"csrf": csrf, "svc_news": "on", "subject": "Old", "text": "Hi",
                                "at": "2020-01-01T10:00", "action": "create"})
    assert status == 400 and "уже прошло; оставьте поле пустым" in page  # the site speaks ru
    assert newsletters.list_jobs(site.data) == []
    later = (now() + timedelta(days=1)).strftime("%Y-%m-%d %H:%M")
    site.cli("newsletter", "create", "--services", "news", "--subject", "Later", "--body", "Hi",
             "--at", later)
    assert len(newsletters.list_jobs(site.data)) == 1


def test_the_completion_report_shows_the_subject_as_sent_and_local_times(site):
    site.set(timezone="Europe/Moscow")
    site.service("news", title="Новости сайта")
    site.subscriber("news", "a@example.org", name="Anna")
    newsletters.create(site.data, ["news"], "News for {{ name }} from {{ service }}", "Hello")
    site.run_at()
    [report] = [m for m in site.outbox() if str(m["To"]) == ADMIN]
    assert report["Subject"] == "Выпуск завершён: News for from Новости сайта"
    text = report.get_body(("plain",)).get_content()
    assert re.search(r"Начат: 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d \(Europe/Moscow\)", text), text
    assert re.search(r"Завершён: 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d \(Europe/Moscow\)", text), text
    assert "Z" not in re.search(r"Начат: .*", text).group(0)


def test_cli_status_shows_the_warnings_the_admin_status_shows(site):
    site.set(site_url="http://lists.example.org")
    site.service("news")
    subscribers = site.data.root / "services" / "main" / "news" / "subscribers.txt"
    with subscribers.open("a") as handle:
        handle.write("this line is not a subscriber\n")
    out = site.cli("status", "--cgi-dir", str(site.cgi_dir)).stdout
    assert "warning: Mail is not configured" in out
    assert "warning: site_url is not https" in out
    assert "warning: The cron script still has its shipped name" not in out  # init renamed it
    assert "1 malformed subscriber line (line " in out


@pytest.mark.parametrize("body", ["Hello\n", "Hello\r\nBye\r\n\r\n", "No newline", "\nAfter a blank line\n"])
def test_a_letter_body_keeps_its_newlines_through_add_edit_and_the_editor(site, body):
    """A browser drops one line break right after <textarea>: the editor writes
    one of its own there, so a body that starts with a blank line keeps it."""
    site.service("course")
    app, cookie, csrf = _admin(site)
    fields = {"csrf": csrf, "subject": "Hi", "delay": "1d", "body": body, "html": "",
              "position": "", "action": "save"}
    status, _, page, _ = _post(app, cookie, "/services/course/letters", fields)
    assert status == 303, page[:300]
    expected = body.replace("\r\n", "\n")
    letter_file = site.data.root / "services" / "main" / "course" / "letters" / "001.txt"
    assert letter_file.read_text().endswith("\n\n" + expected)
    status, _, page, _ = _post(app, cookie, "/services/course/letters/1", fields)
    assert status == 303, page[:300]
    assert letter_file.read_text().endswith("\n\n" + expected)
    shown = re.search(r'<textarea id="body"[^>]*>(.*?)</textarea>',
                      _get(app, cookie, "/services/course/letters/1"), re.S).group(1)
    assert shown == "\n" + expected  # what a browser reads as exactly ``expected``


def test_serve_on_a_fresh_data_directory_makes_a_demo_list_and_prints_where_to_subscribe(tmp_path):
    import subprocess
    import sys
    import time
    import urllib.request

    from support.servetools import subprocess_env
    from support.webtools import free_port

    port = free_port()
    out = tmp_path / "serve.out"
    with out.open("wb") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "vykhukhol", "--data", str(tmp_path / "data"),
                                 "serve", "--port", str(port), "--no-ticker",
                                 "--cgi-dir", str(tmp_path)],
                                stdout=handle, stderr=subprocess.STDOUT,
                                # a Russian locale: a fresh serve speaks its language
                                env={**subprocess_env(LANG="ru_RU.UTF-8"), "LC_ALL": "", "LC_MESSAGES": ""})
    try:
        deadline = time.monotonic() + 30
        while "subscribe to the demo list:" not in out.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, out.read_text()
            time.sleep(0.1)
        printed = out.read_text()
        url = re.search(r"subscribe to the demo list: (\S+)", printed).group(1)
        assert url == f"http://127.0.0.1:{port}/cgi/subscribe.py?service=demo"
        assert re.search(r"admin password \S+", printed)
        with urllib.request.urlopen(url, timeout=10) as answer:
            page = answer.read().decode()
        assert answer.status == 200 and "Демо-рассылка" in page
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    letters = sorted(p.name for p in (tmp_path / "data/services/main/demo/letters").glob("*.txt"))
    assert letters == ["001.txt", "002.txt"]
    service_ini = (tmp_path / "data/services/main/demo/service.ini").read_text()
    assert "enabled = yes" in service_ini
    settings = (tmp_path / "data/settings.ini").read_text()
    assert f"site_url = http://127.0.0.1:{port}" in settings


def test_the_thirty_day_chart_labels_a_day_a_week_and_shows_both_values_on_hover(site):
    site.service("news")
    site.subscriber("news", "a@example.org", ago=60)
    app, cookie, _ = _admin(site)
    page = _get(app, cookie, "/")
    labels = re.findall(r'<text class="day-label"[^>]*>(\d\d\.\d\d)</text>', page)
    assert len(labels) >= 4, labels
    titles = re.findall(r'<rect class="day"[^>]*><title>([^<]+)</title>', page)
    assert len(titles) == 30
    assert re.search(r": 1 подписка, 0 писем передано, 0 отказов доставки$", titles[-1]), titles[-1]  # plural forms


def test_deleting_a_letter_or_a_subscriber_asks_on_a_page_of_its_own_first(site):
    site.service("course", letters=[("One", "0s", "1"), ("Two", "1d", "2")])
    site.subscriber("course", "a@example.org")
    app, cookie, csrf = _admin(site)
    letters = site.data.root / "services" / "main" / "course" / "letters"

    status, _, page, _ = _post(app, cookie, "/services/course/letters/1/delete", {"csrf": csrf})
    assert status == 200 and 'id="confirm-delete"' in page and "«One»" in page
    assert sorted(p.name for p in letters.glob("*.txt")) == ["001.txt", "002.txt"]
    status, _, _, _ = _post(app, cookie, "/services/course/letters/1/delete",
                            {"csrf": csrf, "confirm": "yes"})
    assert status == 303
    assert sorted(p.name for p in letters.glob("*.txt")) == ["001.txt"]

    status, _, page, _ = _post(app, cookie, "/services/course/subscribers/delete",
                               {"csrf": csrf, "email": "a@example.org"})
    assert status == 200 and 'id="confirm-delete"' in page
    assert "a@example.org" in site.subscribers("course")
    status, _, _, _ = _post(app, cookie, "/services/course/subscribers/delete",
                            {"csrf": csrf, "email": "a@example.org", "confirm": "yes"})
    assert status == 303
    assert "a@example.org" not in site.subscribers("course")


def test_the_settings_page_labels_each_key_in_words_with_the_key_beside_it(site):
    app, cookie, _ = _admin(site)
    page = _get(app, cookie, "/settings")
    assert re.search(r'<label for="news_per_run">Писем выпусков за запуск '
                     r'<code class="muted key">news_per_run</code></label>', page), page[:2000]
    assert "юзер" not in page and "Новостийн" not in page
    services = _get(app, cookie, "/services")
    assert "Новый выпуск" in services


def _options(parser, trail=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _options(child, (*trail, name))
        elif not isinstance(action, argparse._HelpAction):
            yield trail, action


def test_every_cli_option_and_argument_has_a_help_line():
    from vykhukhol import cli

    missing = [" ".join(trail) + " " + (action.option_strings or [action.dest])[0]
               for trail, action in _options(cli.build_parser()) if not action.help]
    assert missing == []


def test_list_commands_print_a_header_row_first(site):
    site.service("news", letters=[("One", "0s", "Hi")])
    site.subscriber("news", "a@example.org")
    assert site.cli("service", "list").stdout.splitlines()[0].startswith("#name\tdb")
    assert site.cli("letter", "list", "news").stdout.splitlines()[0].startswith("#number\tdelay")
    lines = site.cli("subscriber", "list", "news").stdout.splitlines()
    assert lines[0].startswith("#email\tname\tstate") and lines[1].startswith("a@example.org\t")


def test_commands_named_in_admin_sentences_show_as_code_not_backticks(site):
    app, cookie, _ = _admin(site)
    page = _get(app, cookie, "/bounces")
    assert "<code>vykhukhol bounce</code>" in page and "`vykhukhol bounce`" not in page


def test_backticks_in_user_text_make_only_escaped_code_spans():
    from vykhukhol.web.templating import code_spans

    shown = str(code_spans("name `<script>x</script>` and `ok`"))
    assert "<script>" not in shown and "<code>ok</code>" in shown
