"""The admin's «Removed by bounces» page in Chromium
(docs/deliverability/suppression.md#undo-bounce):
reached from Bounces, an address a piped report said was gone listed with
the words that decided, a forged POST refused, the Restore button putting
it back into both services and off the suppression list, and the page in
Russian; screenshots in tests/artifacts/."""

from __future__ import annotations

from datetime import timedelta

from support.bouncekit import dsn, pipe, tagged_sender  # noqa: E402
from vykhukhol.members import (
    removed,  # noqa: E402
    suppression,  # noqa: E402
)
from vykhukhol.timeutil import now  # noqa: E402

LESSONS = [("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")]
WORDS = "smtp; 550 5.1.1 <{failed}>: Recipient address rejected: User unknown"


def gone(site, address: str) -> None:
    """A real RFC 3464 report that ``address`` does not exist, piped in."""
    sender = tagged_sender(site, None, "s", "course", address)
    pipe(site, dsn(address, sender, f"<1.{address}>", status="5.1.1", diagnostic=WORDS))


def test_the_removed_page_lists_and_restores_in_both_languages(site, server, browser):
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=LESSONS)
    site.service("digest", letters=LESSONS)
    site.subscriber("course", "dead@example.com", sent=1, last_sent_ago=600)
    site.subscriber("digest", "dead@example.com", state="new")
    lines = {name: subs.get("dead@example.com") for name in ("course", "digest")
             if (subs := site.subscribers(name))}
    gone(site, "dead@example.com")
    assert "dead@example.com" not in site.subscribers("course")

    b = browser
    b.log_in()
    b.open("/admin/bounces")
    b.press("#removed-link")
    assert b.path == "/admin/removed"
    table = b.text("#removed")
    assert "dead@example.com" in table and "the address does not exist" in table
    assert "userunknown 5.1.1" in table and "pipe" in table
    assert "course (confirmed, 1 letter sent)" in table and "digest (not confirmed, 0 letters sent)" in table
    b.screenshot("removed-en")

    # A POST whose CSRF token is not the session's changes nothing.
    b.driver.execute_script("document.querySelector('#removed input[name=csrf]').value = 'forged'")
    b.press("#removed button.restore")
    assert "dead@example.com" not in site.subscribers("course")
    assert removed.find(site.data, "dead@example.com", now()) is not None

    b.open("/admin/removed")
    b.press("#removed button.restore")
    assert "dead@example.com is back in 2 services and off the suppression list." in b.flash()
    assert b.text("#none").startswith("No address was removed by bounces")
    for name, before in lines.items():
        assert site.subscribers(name)["dead@example.com"] == before  # state, letter, dates
    assert not suppression.is_suppressed(site.data, suppression.secret_of(site.settings()),
                                         "dead@example.com")
    b.screenshot("removed-restored-en")

    site.subscriber("course", "gone@example.com")
    gone(site, "gone@example.com")
    line = "\t".join(["odd@example.com", "", "active", "2026-11-01T00:00:00Z", "-", "0", "-",
                      "0", "-", "0", "-"])
    removed.note(site.data, "course", line, "address gone", "<i>mailgun</i>",
                 '550 <b id="injected">no such user</b>', now() - timedelta(hours=1))
    b.open("/admin/removed")
    assert b.all("#injected") == [] and '<b id="injected">' in b.text("#removed")  # escaped
    assert "<i>mailgun</i>" in b.text("#removed")
    site.set(language="ru")
    b.open("/admin/removed")
    assert b.text("h1") == "Удалённые по отказам"
    assert "адреса не существует" in b.text("#removed") and "gone@example.com" in b.text()
    assert b.text("#removed button.restore") == "Восстановить"
    b.screenshot("removed-ru")
    b.press("#removed button.restore")
    assert "gone@example.com снова в 1 рассылке и убран из стоп-листа." in b.flash()  # newest first
