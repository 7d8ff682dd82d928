"""Two factors through the real parts: ``vykhukhol password --totp`` and
``--reset-totp`` as subprocesses, and the login with its code step against a
real ``vykhukhol serve`` (docs/using/admin.md#admin-two-factor)."""

from __future__ import annotations

import re

import pyotp

from support import totpkit, webkit
from support.servetools import PASSWORD
from support.webkit import Browser
from vykhukhol.files import kv

served = webkit.served  # the fixture: a real `vykhukhol serve`

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
WRONG = "Wrong password or code."


def password_step(browser: Browser, password: str = PASSWORD) -> webkit.Answer:
    return browser.post("/admin/login", {"password": password}, headers=SAME_SITE)


def code_step(browser: Browser, ticket: str, code: str) -> webkit.Answer:
    answer = browser.post("/admin/login/code", {"ticket": ticket, "code": code}, headers=SAME_SITE)
    if answer.status == 303:
        browser.get(answer.headers["location"])
    return answer


def test_password_totp_prints_the_uri_and_a_qr_code_asks_a_code_and_prints_ten_recovery_codes(site):
    result, enrolled = totpkit.turn_on(site)
    assert result.returncode == 0, result.stderr
    assert enrolled is not None
    assert enrolled.uri.startswith("otpauth://totp/Vykhukhol:admin%40example.org?secret=")
    assert "█" in result.stdout or "▀" in result.stdout  # the QR code, in block characters
    assert len(set(enrolled.recovery)) == 10
    values = site.settings()
    assert values["security.admin_totp"] == enrolled.secret
    assert not any(code in site.data.settings.read_text() for code in enrolled.recovery)
    again = site.cli("password", "--totp", check=False, input="")
    assert again.returncode == 1 and "--reset-totp" in again.stderr


def test_a_terminal_that_cannot_show_block_characters_gets_the_qr_code_in_hashes(site):
    result, enrolled = totpkit.turn_on(site, PYTHONIOENCODING="latin-1")
    assert result.returncode == 0, result.stderr
    assert enrolled and "##########" in result.stdout and "█" not in result.stdout


def test_a_wrong_code_or_none_at_the_prompt_turns_nothing_on(site):
    result, _ = totpkit.turn_on(site, lambda secret: "000000\n000001\n000002")
    assert result.returncode == 1, result.stdout
    assert "does not match" in result.stderr
    quiet = site.cli("password", "--totp", check=False, input="")
    assert quiet.returncode == 1 and "no code on standard input" in quiet.stderr
    assert site.settings()["security.admin_totp"] == ""
    assert site.cli("password", "--totp", "--password", "x" * 12, check=False).returncode == 1


def test_the_login_asks_the_code_after_any_password_and_grants_the_session_only_after_both(site, served):
    _, enrolled = totpkit.turn_on(site)
    assert enrolled
    stranger = Browser(served.port)
    wrong = password_step(stranger, "not-the-password")
    right = password_step(Browser(served.port))
    # The same page after a wrong and a right password: nothing tells them apart.
    assert wrong.status == right.status == 200
    strip = lambda page: re.sub(r'name="ticket" value="[^"]*"', "", page.body)  # noqa: E731
    assert strip(wrong) == strip(right)
    assert "vykhukhol_session" not in stranger.jar and not right.cookies
    # A wrong password with the right code: refused, no session.
    refused = code_step(stranger, wrong.field("ticket"), enrolled.code(1))
    assert refused.status == 403 and WRONG in refused.body
    assert "vykhukhol_session" not in stranger.jar

    owner = Browser(served.port)
    ticket = password_step(owner).field("ticket")
    used = enrolled.code(1)  # the one code replayed below (computed again, a 30 s step may pass)
    assert code_step(owner, ticket, used).status == 303
    assert owner.get("/admin/").status == 200
    # The ticket served once; the code counted once.
    assert code_step(Browser(served.port), ticket, used).status == 403
    replay = Browser(served.port)
    answer = code_step(replay, password_step(replay).field("ticket"), used)
    assert answer.status == 403 and WRONG in answer.body


def test_a_recovery_code_logs_in_once(site, served):
    _, enrolled = totpkit.turn_on(site)
    assert enrolled
    spare = enrolled.recovery[0]
    first = Browser(served.port)
    assert code_step(first, password_step(first).field("ticket"), spare).status == 303
    assert first.get("/admin/twofactor").status == 200
    assert "9 recovery codes are left." in first.get("/admin/twofactor").body
    second = Browser(served.port)
    assert code_step(second, password_step(second).field("ticket"), spare).status == 403


def test_wrong_codes_are_counted_like_wrong_passwords(site, served):
    """Five tries of the right password with a wrong code lock the login: the
    sixth, with the right code, waits too."""
    _, enrolled = totpkit.turn_on(site)
    assert enrolled
    guesser = Browser(served.port)
    for n in range(5):
        ticket = password_step(guesser).field("ticket")
        assert code_step(guesser, ticket, f"{n:06d}").status == 403
    assert password_step(guesser).status == 429
    assert kv.read_kv(site.data.state / "logins")["ip 127.0.0.1"].startswith("5 ")


def test_a_cross_site_code_post_is_refused(site, served):
    _, enrolled = totpkit.turn_on(site)
    assert enrolled
    owner = Browser(served.port)
    ticket = password_step(owner).field("ticket")
    forged = owner.post("/admin/login/code", {"ticket": ticket, "code": enrolled.code(1)},
                        headers={"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})
    assert forged.status == 403 and "vykhukhol_session" not in owner.jar


def test_reset_totp_on_the_host_is_the_way_back_to_the_password_alone(site, served):
    _, enrolled = totpkit.turn_on(site)
    assert enrolled
    assert Browser(served.port).log_in().status == 200  # the code step
    result = site.cli("password", "--reset-totp")
    assert "off" in result.stdout
    assert site.settings()["security.admin_totp"] == ""
    assert Browser(served.port).log_in().status == 303
    assert "were off" in site.cli("password", "--reset-totp").stdout


def test_the_admin_page_turns_two_factors_on_with_a_code_and_off_with_one(site, served):
    owner = Browser(served.port)
    assert owner.log_in().status == 303
    page = owner.get("/admin/twofactor")
    assert page.status == 200 and "<svg" in page.body
    secret = page.field("secret")
    csrf = page.field("csrf")
    code = pyotp.TOTP(secret).now
    form = {"secret": secret, "password": PASSWORD, "csrf": csrf}
    # Without the session's CSRF token, or the current password, nothing changes.
    assert owner.post("/admin/twofactor", {**form, "code": code(), "csrf": ""}).status == 403
    assert owner.post("/admin/twofactor", {**form, "code": code(), "password": "stolen-session"}).status == 403
    assert owner.post("/admin/twofactor", {**form, "code": "000000"}).status == 400
    assert site.settings()["security.admin_totp"] == ""
    shown = owner.post("/admin/twofactor", {**form, "code": code()})
    assert shown.status == 200
    codes = re.findall(r"<li>([a-z0-9]{5}-[a-z0-9]{5})</li>", shown.body)
    assert len(codes) == 10
    assert site.settings()["security.admin_totp"] == secret
    refused = owner.post("/admin/twofactor/off", {"code": "000000", "csrf": csrf})
    assert refused.status == 403 and site.settings()["security.admin_totp"] == secret
    off = owner.post("/admin/twofactor/off", {"code": codes[0], "csrf": csrf})
    assert off.status == 303 and site.settings()["security.admin_totp"] == ""
