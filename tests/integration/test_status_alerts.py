"""The admin's Status page lists the alerts of the run log, each in the
admin's language (docs/using/admin.md#admin-status): a log that holds an
alert still draws the page."""

from __future__ import annotations

from support.servetools import call, environ, log_in
from vykhukhol.files import runlog
from vykhukhol.watch import alerts
from vykhukhol.web import admin as admin_app


def test_the_status_page_shows_an_alert_of_the_run_log(site) -> None:
    log = runlog.RunLog(site.data, "lease-1")
    log.write(f"{alerts.SCRIPT_OFF}: the sender was stopped by the hoster", level="alert")
    app = admin_app.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    status, _, page, errors = call(app, environ("GET", "/", "", b"", "", "0", script="/admin",
                                                HTTP_COOKIE=cookie))
    assert "Traceback" not in errors, errors
    assert status == 200, page
    assert alerts.SCRIPT_OFF in page


def test_an_empty_postal_address_is_a_status_warning_until_it_is_set(site) -> None:
    """The law wants the sender's postal address in a list letter's footer:
    `vykhukhol status` and the Status page say so while it is empty."""
    import html

    site.set(language="ru", postal_address="")
    app = admin_app.app(site.data, site.cgi_dir)
    cookie, _ = log_in(app)
    status, _, page, _ = call(app, environ("GET", "/", "", b"", "", "0", script="/admin",
                                           HTTP_COOKIE=cookie))
    assert status == 200, page
    assert "postal_address не задан" in html.unescape(page)
    warned = site.cli("status", check=False).stdout
    assert "warning: postal_address is empty: the law of many countries" in warned
    site.set(postal_address="1 Main Street, Springfield")
    assert "postal_address is empty" not in site.cli("status", check=False).stdout
