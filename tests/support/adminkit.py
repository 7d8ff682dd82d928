"""What the admin's browser tests check beside the page: letters in the outbox,
the rows of a job table, a moment as the admin's time input shows it, and
that no script ran and no dialog stayed open.
"""

from __future__ import annotations

import email
import email.policy
from datetime import datetime
from email.message import EmailMessage
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from selenium.common.exceptions import NoAlertPresentException


def outbox_letters(site: Any, to: str | None = None) -> list[EmailMessage]:
    """The outbox's letters, oldest first (file names sort by time), optionally only
    those to ``to``; read the way a mail program would (quoted-printable decoded)."""
    folder = site.data.outbox
    found = []
    for path in sorted(folder.glob("*.eml")) if folder.exists() else []:
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if to is None or to in str(message.get("To", "")):
            found.append(message)
    return found


def newest_letter(site: Any, to: str, within: float = 5.0) -> EmailMessage:
    """The newest letter to ``to``; waits up to ``within`` seconds for the first,
    since a confirmation letter is written by serve's background thread after
    the page has answered (tens of milliseconds later)."""
    import time

    deadline = time.monotonic() + within
    while not (letters := outbox_letters(site, to)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert letters, f"no letter to {to} in the outbox"
    return letters[-1]


def text_of(message: EmailMessage) -> str:
    return message.get_body(("plain",)).get_content()


def assert_no_alert(browser: Any) -> None:
    with pytest.raises(NoAlertPresentException):
        browser.driver.switch_to.alert  # noqa: B018 - the property raises when no dialog is open


def assert_no_script(browser: Any) -> None:
    """No <script> element on the page. The CSP would stop an inline script from
    running anyway, so an absent dialog alone proves little: the name must not
    have become markup at all."""
    assert browser.all("script") == [], browser.driver.page_source[:2000]
    assert_no_alert(browser)


def job_rows(browser: Any) -> list[Any]:
    return browser.all("#jobs tr[id^='job-']")


def local_input(site: Any, moment: datetime) -> str:
    """``moment`` as a datetime-local value in the settings' time zone."""
    return moment.astimezone(ZoneInfo(site.settings()["timezone"])).strftime("%Y-%m-%dT%H:%M")
