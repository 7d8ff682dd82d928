"""The admin's second factor (docs/using/admin.md#admin-two-factor): which codes
a login accepts, that none counts twice, that a recovery code is spent, and
the code step's tickets. Real files of an initialised installation; the clock
is passed in, so a test moves time instead of waiting for it."""

from __future__ import annotations

import time

import pyotp
import pytest

from vykhukhol import settings as settings_mod
from vykhukhol.errors import BadInput
from vykhukhol.files import kv
from vykhukhol.settings import twofactor
from vykhukhol.web import session
from vykhukhol.web.admin import SETTINGS_SHOWN

T0 = 1_790_000_010.0  # 10 s into a step of 30


def clock(at: float = T0):
    return lambda: at


def code(secret: str, at: float) -> str:
    return pyotp.TOTP(secret).at(at)


@pytest.fixture
def enrolled(site):
    """Two factors on, turned on with the code of T0; (site, secret, recovery codes)."""
    secret = twofactor.new_secret()
    codes = twofactor.turn_on(site.data, secret, code(secret, T0), clock(T0))
    return site, secret, codes


def test_turning_on_keeps_the_secret_and_only_hashes_of_ten_recovery_codes(enrolled):
    site, secret, codes = enrolled
    values = site.settings()
    assert twofactor.is_on(values)
    assert values[twofactor.SECRET_KEY] == secret
    assert len(codes) == len(set(codes)) == 10
    text = site.data.settings.read_text()
    assert not any(c in text or c.replace("-", "") in text for c in codes)
    assert twofactor.recovery_left(values) == 10


def test_a_wrong_code_turns_nothing_on_and_a_made_up_secret_is_refused(site):
    secret = twofactor.new_secret()
    wrong = f"{(int(code(secret, T0)) + 1) % 1_000_000:06d}"
    with pytest.raises(BadInput):
        twofactor.turn_on(site.data, secret, wrong, clock(T0))
    with pytest.raises(BadInput):
        twofactor.turn_on(site.data, "not-base32!", "123456", clock(T0))
    assert not twofactor.is_on(site.settings())
    assert site.settings()[twofactor.RECOVERY_KEY] == ""


def test_the_code_of_the_step_before_now_and_after_it_are_accepted_not_two_steps_off(site):
    secret = twofactor.new_secret()
    assert twofactor.code_matches(secret, code(secret, T0 - 30), clock()) is not None
    assert twofactor.code_matches(secret, code(secret, T0 + 30), clock()) is not None
    assert twofactor.code_matches(secret, " " + code(secret, T0)[:3] + " " + code(secret, T0)[3:], clock())
    for far in (T0 - 90, T0 + 90):
        assert twofactor.code_matches(secret, code(secret, far), clock()) is None
    for junk in ("", "12345", "1234567", "abcdef", "١٢٣٤٥٦"):
        assert twofactor.code_matches(secret, junk, clock()) is None


def test_a_code_counts_once_even_within_its_window_and_an_older_one_after_a_newer(enrolled):
    site, secret, _ = enrolled
    # The code that turned two factors on is spent already.
    assert twofactor.accept(site.data, site.settings(), code(secret, T0), clock(T0 + 5)) \
        is twofactor.Accepted.NO
    later = T0 + 30
    assert twofactor.accept(site.data, site.settings(), code(secret, later), clock(later)) \
        is twofactor.Accepted.CODE
    assert twofactor.accept(site.data, site.settings(), code(secret, later), clock(later + 10)) \
        is twofactor.Accepted.NO
    # The step before now would do for a slow phone, but not after a newer code.
    assert twofactor.accept(site.data, site.settings(), code(secret, later - 30), clock(later)) \
        is twofactor.Accepted.NO
    assert kv.read_kv(site.data.state / "twofactor")["last step"] == str(int(later) // 30)


def test_a_recovery_code_logs_in_once_then_is_spent(enrolled):
    site, _, codes = enrolled
    first = codes[3]
    assert twofactor.accept(site.data, site.settings(), first.upper(), clock()) is twofactor.Accepted.RECOVERY
    assert twofactor.recovery_left(site.settings()) == 9
    assert twofactor.accept(site.data, site.settings(), first, clock()) is twofactor.Accepted.NO
    assert twofactor.accept(site.data, site.settings(), "aaaaa-aaaaa", clock()) is twofactor.Accepted.NO
    assert twofactor.accept(site.data, site.settings(), codes[4].replace("-", ""), clock()) \
        is twofactor.Accepted.RECOVERY
    assert twofactor.recovery_left(site.settings()) == 8


def test_turning_off_forgets_the_secret_the_codes_and_the_last_step(enrolled):
    site, _, codes = enrolled
    twofactor.turn_off(site.data)
    values = site.settings()
    assert not twofactor.is_on(values)
    assert values[twofactor.RECOVERY_KEY] == ""
    assert not (site.data.state / "twofactor").exists()
    assert twofactor.accept(site.data, values, codes[0], clock()) is twofactor.Accepted.NO


def test_the_settings_refuse_a_two_factor_value_set_by_hand(site):
    code_, out, err = site.call("settings", "set", "security.admin_totp", "JBSWY3DPEHPK3PXP")
    assert code_ == 1 and "--totp" in err
    assert "security.admin_totp" not in SETTINGS_SHOWN
    assert settings_mod.load(site.data.settings)[twofactor.SECRET_KEY] == ""


def test_a_ticket_to_the_code_step_serves_once_and_says_what_the_password_was(site):
    right = session.begin_second_step(site.data, True)
    wrong = session.begin_second_step(site.data, False)
    assert right != wrong
    assert session.end_second_step(site.data, wrong) is session.Ticket.PASSWORD_WRONG
    assert session.end_second_step(site.data, right) is session.Ticket.PASSWORD_RIGHT
    assert session.end_second_step(site.data, right) is session.Ticket.GONE
    assert session.end_second_step(site.data, "made-up") is session.Ticket.GONE
    assert session.end_second_step(site.data, "") is session.Ticket.GONE


def test_an_old_ticket_is_gone_and_the_tickets_file_stays_bounded(site, monkeypatch):
    old = session.begin_second_step(site.data, True)
    later = time.time() + session.SECOND_STEP_SECONDS + 1
    monkeypatch.setattr(session.time, "time", lambda: later)
    assert session.end_second_step(site.data, old) is session.Ticket.GONE
    kv.write_kv(site.data.state / "second-steps",
                {f"t{n}": f"{int(later) + 100} right" for n in range(session.MAX_SECOND_STEPS + 50)})
    session.begin_second_step(site.data, False)
    assert len(kv.read_kv(site.data.state / "second-steps")) == session.MAX_SECOND_STEPS


def test_the_qr_code_is_an_svg_for_the_page_and_text_for_any_terminal():
    uri = twofactor.uri(twofactor.new_secret(), "admin@example.org")
    assert uri.startswith("otpauth://totp/Vykhukhol:admin%40example.org?secret=")
    svg = twofactor.qr_svg(uri)
    assert svg.startswith("<svg") and "<script" not in svg
    rows = twofactor.qr_text(uri, blocks=False).splitlines()
    assert len({len(row) for row in rows}) == 1 and len(rows[0]) == 2 * len(rows)
    assert set("".join(rows)) == {"#", " "}
    assert set(twofactor.qr_text(uri)) <= set("█▀▄ \n")
