"""Debug mode tells the truth (docs/design/run.md#unsent-confirmations,
docs/using/admin.md#admin-outbox): the admin's Outbox page shows what waits
for working mode, and a confirmation the subscribe page held in debug mode
goes with the first working run, logged as held, not as one the page could
not send. Through the real subscribe CGI script, ``vykhukhol cron`` as a
process, and the admin app."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

from support.servetools import call, environ, log_in, subprocess_env
from support.webtools import plain_text
from vykhukhol.web import admin as admin_mod

SAME_SITE = {"HTTP_SEC_FETCH_SITE": "same-origin"}
FORM = "application/x-www-form-urlencoded"
NEW = "new@example.org"


def cli(data_root: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data_root), *args],
                          capture_output=True, text=True, timeout=120, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    return done.stdout


def outbox_page(install) -> str:
    app = admin_mod.app(install.data, install.cgi)
    cookie, _ = log_in(app, "correct-horse-1")
    status, _, page, _ = call(app, environ("GET", "/outbox", "", b"", "", "missing",
                                           script="/admin", HTTP_COOKIE=cookie))
    assert status == 200, page
    return page


def test_a_confirmation_held_in_debug_goes_with_the_first_working_run(install):
    cli(install.data_root, "subscriber", "add", "news", "anna@example.org", "--confirmed")
    cli(install.data_root, "mode", "debug")
    page = install.run("cgi/subscribe.py", "POST",
                       body=urlencode({"service": "news", "email": NEW}).encode(), **SAME_SITE)
    assert page.status == 200 and "on its way" in page.body, page
    assert not install.outbox()
    cli(install.data_root, "newsletter", "create", "--services", "news", "--subject", "Hello all",
        "--body", "News for everyone.")

    shown = outbox_page(install)
    assert "Waiting for working mode" in shown and NEW in shown, shown
    assert 'id="waiting-series"' in shown and "news: 1 letter" in shown  # anna's lesson 1
    news = re.search(r'id="waiting-newsletters">(.*?)</ul>', shown, re.S)
    assert news and ": 1 letter<" in news.group(1), shown
    assert "The outbox is empty." not in shown

    cli(install.data_root, "mode", "working")
    cli(install.data_root, "cron")  # at once, not a minute later
    confirmations = [m for m in install.mails_to(NEW) if "confirm.py" in plain_text(m)]
    assert len(confirmations) == 1, [str(m["Subject"]) for m in install.outbox()]
    log = (install.data_root / "log" / "run.log").read_text(encoding="utf-8")
    assert f"news: sent the confirmation held in debug mode to {NEW}" in log
    assert "could not send" not in log
    assert "Waiting for working mode" not in outbox_page(install)


def test_the_outbox_in_debug_mode_says_when_nothing_waits(install):
    cli(install.data_root, "mode", "debug")
    shown = outbox_page(install)
    assert "Nothing waits." in shown and "The outbox is empty." in shown
    cli(install.data_root, "settings", "set", "language", "ru")
    assert "Ожидает рабочего режима" in outbox_page(install)

