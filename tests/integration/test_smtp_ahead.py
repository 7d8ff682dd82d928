"""The next letter's MAIL FROM, sent the moment a letter is answered
(``SmtpTransport.send_ahead``), against a real aiosmtpd server: it saves the
sender's bookkeeping a place on the wire, and it must never deliver, lose
or mix up a letter, whatever comes next."""

from __future__ import annotations

import time
from typing import Any

import pytest

from vykhukhol.mail import TemporaryFailure, build_message, open_transport

FIRST, SECOND, OTHER = "list+a@example.org", "list+b@example.org", "alerts@example.org"


def letter(to: str, envelope: str) -> Any:
    from vykhukhol.mail.message import Outgoing

    msg = build_message(from_name="News", from_email="list@example.org", to_email=to,
                        to_name="", subject=f"to {to}", text="Hello.\n", run_id="lease-1",
                        list_id="news.example.org",
                        unsubscribe_url="https://example.org/u?t=1")
    return Outgoing(msg.as_bytes(), "list@example.org", envelope)


def seen(handler: Any, command: str, seconds: float = 5.0) -> bool:
    """Whether the server got ``command`` within ``seconds`` (it comes over a socket)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if command in handler.commands:
            return True
        time.sleep(0.01)
    return False


def test_the_next_letters_mail_from_leaves_as_soon_as_a_letter_is_answered(smtp_server):
    second = letter("b@example.org", SECOND)
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org", FIRST), "a@example.org", meanwhile=lambda: second)
        assert seen(smtp_server.handler, f"MAIL {SECOND}")  # before the second send is asked
        transport.send(second, "b@example.org")

    got = smtp_server.handler.received
    assert [(r.mail_from, r.rcpt_tos) for r in got] == [(FIRST, ["a@example.org"]),
                                                        (SECOND, ["b@example.org"])]
    assert smtp_server.handler.commands == [f"MAIL {FIRST}", f"MAIL {SECOND}", "QUIT"]
    assert transport.connections == 1


def test_a_mail_sent_ahead_for_a_letter_that_never_comes_delivers_nothing(smtp_server):
    """The run stopped (time, quota) after the letter whose answer sent the next MAIL."""
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org", FIRST), "a@example.org",
                       meanwhile=lambda: letter("b@example.org", SECOND))
    assert seen(smtp_server.handler, "QUIT")
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["a@example.org"]]
    assert smtp_server.handler.commands == [f"MAIL {FIRST}", f"MAIL {SECOND}", "QUIT"]


def test_another_letter_first_calls_the_mail_sent_ahead_off(smtp_server):
    """An alert, or a next letter the gates passed over: RSET, then its own MAIL."""
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org", FIRST), "a@example.org",
                       meanwhile=lambda: letter("b@example.org", SECOND))
        transport.send(letter("admin@example.org", OTHER), "admin@example.org")

    got = smtp_server.handler.received
    assert [(r.mail_from, r.rcpt_tos) for r in got] == [(FIRST, ["a@example.org"]),
                                                        (OTHER, ["admin@example.org"])]
    assert smtp_server.handler.commands == [f"MAIL {FIRST}", f"MAIL {SECOND}", "RSET",
                                            f"MAIL {OTHER}", "QUIT"]


def test_a_refusal_of_the_mail_sent_ahead_is_the_next_letters_refusal(smtp_server):
    smtp_server.handler.mail_responses[SECOND] = "421 4.7.0 Too many messages, slow down"
    with open_transport(smtp_server.config()) as transport:
        second = letter("b@example.org", SECOND)
        transport.send(letter("a@example.org", FIRST), "a@example.org", meanwhile=lambda: second)
        with pytest.raises(TemporaryFailure) as caught:
            transport.send(second, "b@example.org")
    assert (caught.value.code, caught.value.stage) == (421, "mail")
    assert "Too many messages" in caught.value.detail
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["a@example.org"]]


def test_the_journal_is_waited_for_before_a_letter_whose_mail_went_ahead(smtp_server):
    """``ready`` (the intent's fsync) failing stops the letter unsent, as without."""
    second = letter("b@example.org", SECOND)
    called = []

    def disk_full() -> None:
        called.append(True)
        raise OSError(28, "No space left on device")

    with open_transport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org", FIRST), "a@example.org", meanwhile=lambda: second)
        with pytest.raises(TemporaryFailure) as caught:
            transport.send(second, "b@example.org", ready=disk_full)
    assert called == [True]
    assert caught.value.stage == "send"  # not "data-unanswered": the letter never left
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["a@example.org"]]


@pytest.mark.parametrize("dropped", [False, True])
def test_a_connection_idle_with_a_mail_sent_ahead_is_probed_with_rset(smtp_server, dropped):
    """Long bookkeeping (a fold) between two letters: the MAIL sent ahead is
    answered and called off, RSET is the probe, and a dropped line reconnects."""
    second = letter("b@example.org", SECOND)
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org", FIRST), "a@example.org", meanwhile=lambda: second)
        assert seen(smtp_server.handler, f"MAIL {SECOND}")
        if dropped:
            smtp_server.drop_connections()
            time.sleep(0.2)
        transport.idle_check_after = 0.0
        transport.send(second, "b@example.org")

    assert [(r.mail_from, r.rcpt_tos) for r in smtp_server.handler.received] == [
        (FIRST, ["a@example.org"]), (SECOND, ["b@example.org"])]
    assert transport.connections == (2 if dropped else 1)
    if not dropped:
        assert smtp_server.handler.commands == [f"MAIL {FIRST}", f"MAIL {SECOND}", "RSET",
                                                f"MAIL {SECOND}", "QUIT"]


def test_with_pipelining_nothing_is_sent_ahead(smtp_server):
    """The envelope goes in one write anyway (RFC 2920)."""
    smtp_server.handler.pipelining = True
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter("a@example.org", FIRST), "a@example.org",
                       meanwhile=lambda: letter("b@example.org", SECOND))
    assert seen(smtp_server.handler, "QUIT")
    assert smtp_server.handler.commands == [f"MAIL {FIRST}", "QUIT"]
