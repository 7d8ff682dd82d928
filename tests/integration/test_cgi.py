"""The CGI scripts as a web server runs them (docs/deploying/index.md#deploying): a copy of the
checkout's ``lib/``, ``cgi/`` and ``admin/`` in a temporary folder — what an
admin uploads to shared hosting — with ``cgi/vykhukhol.path`` naming the data
directory, each script started as its own process with a CGI environment and
the request body on stdin.

No web server is involved: the test is the server. It reads the script's
answer as mod_cgi would (a ``Status:`` line, headers, a blank line, the body).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from support.cgikit import (
    CHECKOUT,
    SITE_URL,
    Install,
    copy_checkout,
    query_of,
)
from support.webtools import (
    TRACEBACK,
    assert_clean_page,
    assert_security_headers,
    link_in,
    list_unsubscribe,
    plain_text,
)

SCRIPTS = ["cgi/subscribe.py", "cgi/confirm.py", "cgi/unsubscribe.py", "cgi/manage.py", "cgi/go.py",
           "cgi/cron.py", "cgi/hook.py", "admin/index.py"]


@pytest.fixture
def lost_install(tmp_path: Path) -> Install:
    """The checkout copied, with vykhukhol.path naming a folder that does not exist."""
    root = tmp_path / "install"
    copy_checkout(root)
    nowhere = tmp_path / "no" / "such" / "data"
    (root / "cgi" / "vykhukhol.path").write_text(f"{nowhere}\n", encoding="utf-8")
    (root / "admin" / "vykhukhol.path").write_text(f"{nowhere}\n", encoding="utf-8")
    return Install(root, nowhere, "")


# --- the scripts as files ---------------------------------------------------------


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_entry_script_is_an_executable_python3_script(script):
    """Each shipped entry script starts with ``#!/usr/bin/env python3`` and is executable."""
    path = CHECKOUT / script
    assert path.read_text(encoding="utf-8").splitlines()[0] == "#!/usr/bin/env python3"
    assert os.access(path, os.X_OK), f"{script} is not executable"


def test_init_renames_the_cron_script_and_prints_its_url_and_crontab_line(install):
    """``init --cgi-dir`` turns cron.py into cron-<random>.py and prints its URL and crontab line."""
    assert not (install.cgi / "cron.py").exists()
    script = install.cron_script()
    assert len(script.stem) > len("cron-") + 8
    assert os.access(script, os.X_OK)
    assert script.read_text().splitlines()[0] == "#!/usr/bin/env python3"
    url = f"{SITE_URL}/cgi/{script.name}"
    lines = install.init_output.splitlines()
    assert any(url in line and "crontab" not in line for line in lines), install.init_output
    crontab = [line for line in lines if "wget" in line]
    assert len(crontab) == 1, install.init_output
    assert "wget -q -t 1 -O /dev/null" in crontab[0] and crontab[0].endswith(url)
    assert crontab[0].split(":", 1)[-1].strip().startswith("*/5 * * * * wget")


def test_the_installed_copy_runs_its_own_lib_not_the_checkout(install):
    """A script finds ``lib/`` beside itself: a change in the copy shows on its page."""
    template = install.root / "lib" / "vykhukhol" / "templates" / "subscribe.html"
    template.write_text(template.read_text().replace("</form>", "</form><!-- COPY-MARKER -->"))
    page = install.run("cgi/subscribe.py", query="service=news")
    assert page.status == 200, page
    assert "COPY-MARKER" in page.body


# --- the subscriber's pages -------------------------------------------------------


def test_subscribe_confirm_and_unsubscribe_work_through_cgi(install):
    """Form, POST, confirm (GET inert, POST), cron script, unsubscribe (GET inert, one-click)."""
    form_page = install.run("cgi/subscribe.py", query="service=news")
    assert form_page.status == 200, form_page
    assert_clean_page(form_page)
    assert_security_headers(form_page)
    [form] = form_page.forms()
    assert form.method == "post" and form.hidden["service"] == "news"

    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    answer = install.run("cgi/subscribe.py", "POST",
                         body=form.encoded(email="ivan@example.org", name="Ivan"))
    assert answer.status == 200, answer
    assert "Check your mailbox" in answer.body
    assert install.subscribers()["ivan@example.org"].state.value == "new"
    [request] = install.mails_to("ivan@example.org")
    confirm = link_in(plain_text(request), "confirm.py")
    assert confirm.startswith(f"{SITE_URL}/cgi/confirm.py?")

    page = install.run("cgi/confirm.py", query=query_of(confirm))
    assert page.status == 200, page
    [button] = page.forms()
    assert button.buttons == 1 and button.method == "post"
    assert install.subscribers()["ivan@example.org"].state.value == "new"
    head = install.run("cgi/confirm.py", "HEAD", query=query_of(confirm))
    assert head.status == 200 and head.raw == b""
    assert install.subscribers()["ivan@example.org"].state.value == "new"

    done = install.run("cgi/confirm.py", "POST", body=button.encoded())
    assert done.status == 200, done
    assert "Subscription confirmed" in done.body
    assert install.subscribers()["ivan@example.org"].state.value == "active"

    report = install.run(install.cron_script())
    assert report.status == 200 and report.body.startswith("run "), report
    letters = [m for m in install.mails_to("ivan@example.org") if m["Subject"] == "Lesson 1"]
    assert len(letters) == 1
    leave = list_unsubscribe(letters[0])

    before = install.subscribers()
    page = install.run("cgi/unsubscribe.py", query=query_of(leave))
    assert page.status == 200, page
    [button] = page.forms()
    assert button.buttons == 1
    assert install.subscribers() == before

    gone = install.run("cgi/unsubscribe.py", "POST", query=query_of(leave),
                       body=b"List-Unsubscribe=One-Click")
    assert gone.status == 200, gone
    assert "You are unsubscribed" in gone.body
    assert "ivan@example.org" not in install.subscribers()


def test_a_bad_confirm_link_through_cgi_is_a_400_page(install):
    """A forged token posted to confirm.py: Status 400, "not valid", nothing changes."""
    install.run("cgi/subscribe.py", "POST",
                body=urlencode({"service": "news", "email": "anna@example.org"}).encode())
    page = install.run("cgi/confirm.py", "POST",
                       body=urlencode({"s": "news", "e": "anna@example.org", "t": "0" * 32}).encode())
    assert page.status == 400, page
    assert_clean_page(page)
    assert "not valid" in page.body
    assert install.subscribers()["anna@example.org"].state.value == "new"


def test_an_invalid_address_through_cgi_gets_the_form_again(install):
    """An invalid address posted to subscribe.py: a 4xx page with the form, nothing stored."""
    page = install.run("cgi/subscribe.py", "POST",
                       body=urlencode({"service": "news", "email": "a@b.c\r\nBcc: x@y.z"}).encode())
    assert 400 <= page.status < 500, page
    assert_clean_page(page)
    assert page.forms()
    assert install.subscribers() == {}


def test_a_put_through_cgi_is_405(install):
    """A method the pages do not take answers Status 405 and a clean page."""
    page = install.run("cgi/subscribe.py", "PUT", query="service=news", body=b"x")
    assert page.status == 405, page
    assert_clean_page(page)


# --- the cron script and the admin ------------------------------------------------


def test_the_cron_script_refuses_a_caller_outside_cron_allow(install):
    """cron_allow 10.0.0.0/8: 192.0.2.7 gets 403 "Only local allowed", 10.1.2.3 starts a run."""
    from vykhukhol import settings as settings_mod

    settings_mod.update(install.data.settings, {"cron_allow": "10.0.0.0/8"})
    log = install.data.log / "run.log"
    before = log.read_bytes() if log.exists() else b""
    page = install.run(install.cron_script(), remote="192.0.2.7")
    assert page.status == 403, page
    assert page.body.strip() == "Only local allowed"
    assert (log.read_bytes() if log.exists() else b"") == before

    page = install.run(install.cron_script(), remote="10.1.2.3")
    assert page.status == 200, page
    assert page.content_type.startswith("text/plain")
    assert page.body.startswith("run ")


def test_the_admin_script_answers_with_its_login_page(install):
    """``admin/index.py`` sends a stranger to its login page, which answers 200."""
    page = install.run("admin/index.py", PATH_INFO="/")
    assert page.status in (200, 303), page
    if page.status == 303:
        location = urlsplit(page.header("Location")).path
        assert location.startswith("/admin/index.py/"), page.headers
        page = install.run("admin/index.py", PATH_INFO=location[len("/admin/index.py"):])
    assert page.status == 200, page
    assert_clean_page(page)
    assert_security_headers(page)
    assert any(form.method == "post" and "password" in form.fields for form in page.forms()), page


# --- a data directory that is not there -------------------------------------------


@pytest.mark.parametrize("script, method", [
    ("cgi/subscribe.py", "GET"), ("cgi/subscribe.py", "POST"), ("cgi/confirm.py", "GET"),
    ("cgi/confirm.py", "POST"), ("cgi/unsubscribe.py", "POST"), ("cgi/cron.py", "GET"),
    ("admin/index.py", "GET"),
])
def test_a_script_whose_data_directory_is_missing_answers_a_clean_error(lost_install,
                                                                         script, method):
    """vykhukhol.path naming no folder: a clean error answer, no traceback, nothing created."""
    body = urlencode({"service": "news", "s": "news", "email": "a@example.org",
                      "e": "a@example.org", "t": "0" * 32}).encode() if method == "POST" else b""
    page = lost_install.run(script, method, query="service=news&s=news&e=a@example.org&t=x",
                            body=body)
    assert TRACEBACK not in page.raw.decode(errors="replace"), page
    assert TRACEBACK not in page.stderr, page.stderr
    assert page.status >= 400, page
    if script != "cgi/cron.py":  # the cron script answers text/plain, for wget and logs
        assert_clean_page(page)
    missing = lost_install.data_root
    assert not missing.exists() and not missing.parent.exists()
