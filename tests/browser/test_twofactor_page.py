"""Two factors in a real browser (docs/using/admin.md#admin-two-factor):
headless Chromium against ``vykhukhol serve``. The owner turns them on from
the Password page by the QR code's key and a code, reads the recovery codes
once, logs out, and logs in again with the password and then a code; a
recovery code does once what the phone does."""

from __future__ import annotations

import re
import time

import pyotp

from support import totpkit
from support.servetools import PASSWORD

COOKIE = "vykhukhol_session"


def session_cookie(browser) -> list[dict]:
    return [c for c in browser.driver.get_cookies() if c["name"] == COOKIE]


def test_the_owner_turns_two_factors_on_and_logs_in_with_password_then_code(site, server, browser):
    """On: Password → Two factors, the QR code's key into the app, its code,
    ten recovery codes shown once. Then the login takes the password, asks
    the code (no session yet), and opens the status page with it; a wrong
    password with a right code is refused, and a recovery code logs in once."""
    b = browser
    b.log_in()
    b.open("/admin/password")
    b.press("#twofactor-link")
    assert b.path == "/admin/twofactor"
    assert b.find("#twofactor-qr svg").is_displayed()
    b.screenshot("twofactor-setup-en")
    totp = pyotp.TOTP(b.text("#twofactor-secret"))
    b.fill("#code", totp.now())
    b.fill("#password", PASSWORD)
    b.press("#twofactor-confirm")
    codes = re.findall(r"[a-z0-9]{5}-[a-z0-9]{5}", b.text("#recovery-codes"))
    assert len(set(codes)) == 10
    assert site.settings()["security.admin_totp"]
    b.screenshot("twofactor-codes-en")
    b.press(b.link("Done"))
    assert "10 recovery codes are left." in b.text("#twofactor-state")

    b.press("form[action$='/logout'] button")
    b.log_in()
    assert b.find("#code-form").is_displayed() and not session_cookie(b)
    b.screenshot("twofactor-login-en")
    b.fill("#code", totp.at(time.time() + 30))  # the next step: the last one is spent
    b.press("#code-form button[type=submit]")
    assert b.path == "/admin/" and session_cookie(b)

    b.driver.delete_all_cookies()
    b.log_in("not-the-password")
    b.fill("#code", totp.at(time.time() + 30))
    b.press("#code-form button[type=submit]")
    assert b.path == "/admin/login/code" and not session_cookie(b)
    assert "Wrong password or code." in b.text("[role=alert]")

    b.log_in(PASSWORD)
    b.fill("#code", codes[0])
    b.press("#code-form button[type=submit]")
    assert b.path == "/admin/" and session_cookie(b)
    b.driver.delete_all_cookies()
    b.log_in(PASSWORD)
    b.fill("#code", codes[0])
    b.press("#code-form button[type=submit]")
    assert "Wrong password or code." in b.text("[role=alert]") and not session_cookie(b)


def test_the_code_step_and_its_refusal_speak_russian_on_a_russian_site(site, server, browser):
    """Two factors turned on at the host; the site speaks Russian: the code
    step asks for the code in Russian, and a wrong code is refused in Russian."""
    _, enrolled = totpkit.turn_on(site)
    assert enrolled
    site.set(language="ru")
    b = browser
    b.log_in()
    assert "Код из приложения-аутентификатора" in b.text("#code-form")
    b.screenshot("twofactor-login-ru")
    b.fill("#code", "000000")
    b.press("#code-form button[type=submit]")
    assert "Неверный пароль или код." in b.text("[role=alert]") and not session_cookie(b)
    b.log_in()
    b.fill("#code", enrolled.code(1))
    b.press("#code-form button[type=submit]")
    assert b.path == "/admin/" and session_cookie(b)
    b.open("/admin/twofactor")
    assert "Осталось 10 резервных кодов." in b.text("#twofactor-state")
