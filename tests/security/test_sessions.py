"""A password change kept the old sessions.

Run as the owner would: sessions from a real ``vykhukhol serve``, the new
password set with the real ``vykhukhol password`` command or the admin's new
"change password" page.
"""

from __future__ import annotations

from support import webkit
from support.servetools import PASSWORD
from support.webkit import Browser

served = webkit.served  # the fixture: a real `vykhukhol serve`

NEW = "a-new-password-9"


def logged_in(port: int) -> Browser:
    browser = Browser(port)
    assert browser.log_in().status == 303
    assert browser.get("/admin/").status == 200
    return browser


def test_the_password_command_ends_every_session(site, served):
    """Someone who had the password (and a session) is out once the owner runs
    ``vykhukhol password``; the new password logs in, the old one does not."""
    intruder = logged_in(served.port)
    done = site.cli("password", input=NEW + "\n")
    assert "admin password set" in done.stdout
    assert intruder.get("/admin/").status == 303
    assert intruder.post("/admin/mode", {"mode": "debug", "csrf": "x"}).status == 403
    assert Browser(served.port).log_in(PASSWORD).status == 403
    assert Browser(served.port).log_in(NEW).status == 303


def test_the_change_password_page_ends_every_other_session(site, served):
    """The page asks the current password; a wrong one or two different new
    ones change nothing; the change keeps this session and ends the others."""
    owner, other = logged_in(served.port), logged_in(served.port)
    stored = site.settings()["security.admin_password"]
    form = owner.get("/admin/password")
    assert form.status == 200 and 'name="current"' in form.body, form
    csrf = form.field("csrf")

    refused = owner.post("/admin/password", {"csrf": csrf, "current": "not-it-at-all",
                                             "new": NEW, "again": NEW})
    assert refused.status == 403 and "The current password is wrong" in refused.body, refused
    differ = owner.post("/admin/password", {"csrf": csrf, "current": PASSWORD,
                                            "new": NEW, "again": NEW + "x"})
    assert differ.status == 400 and "differ" in differ.body, differ
    short = owner.post("/admin/password", {"csrf": csrf, "current": PASSWORD,
                                           "new": "short", "again": "short"})
    assert short.status == 400, short
    assert site.settings()["security.admin_password"] == stored
    assert other.get("/admin/").status == 200

    changed = owner.post("/admin/password", {"csrf": csrf, "current": PASSWORD,
                                             "new": NEW, "again": NEW})
    assert changed.status == 303, changed
    assert "Password changed" in owner.get(changed.headers["location"]).body
    assert owner.get("/admin/").status == 200
    assert other.get("/admin/").status == 303
    assert Browser(served.port).log_in(PASSWORD).status == 403
    assert Browser(served.port).log_in(NEW).status == 303


def test_the_change_password_page_needs_the_forms_csrf_token(site, served):
    """A cross-site post (no CSRF token) cannot change the password."""
    owner = logged_in(served.port)
    stored = site.settings()["security.admin_password"]
    answer = owner.post("/admin/password", {"current": PASSWORD, "new": NEW, "again": NEW})
    assert answer.status == 403, answer
    assert site.settings()["security.admin_password"] == stored


def test_the_change_password_page_speaks_russian(site, served):
    """The page and its messages exist in Russian."""
    site.set(language="ru")
    owner = logged_in(served.port)
    page = owner.get("/admin/password")
    assert "Сменить пароль" in page.body and "Текущий пароль" in page.body, page
    refused = owner.post("/admin/password", {"csrf": page.field("csrf"), "current": "nope-nope",
                                             "new": NEW, "again": NEW})
    assert "Текущий пароль неверен; ничего не изменено." in refused.body, refused
