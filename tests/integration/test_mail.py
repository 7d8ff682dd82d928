"""Letters and transports (vykhukhol.mail) against a real aiosmtpd server, a fake
sendmail script and an outbox folder (docs/reference/transports.md#transports)."""

from __future__ import annotations

import email.policy
import os
import stat
import time
import unicodedata
from datetime import datetime, timezone
from email import message_from_bytes
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol import mail
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.mail import (
    MailConfig,
    PermanentFailure,
    TemporaryFailure,
    build_message,
    clean_header_text,
    list_outbox,
    open_transport,
    read_outbox,
)

FROM = "news@example.org"
IVAN = "ivan@example.org"
UNSUBSCRIBE = (
    "https://example.org/cgi/unsubscribe.py?s=news&e=ivan%40example.org&t=0123456789abcdef"
)
LONG_UNSUBSCRIBE = UNSUBSCRIBE + "&pad=" + "x" * 150


def letter(**overrides: Any) -> EmailMessage:
    values: dict[str, Any] = {
        "from_name": "Новости Выхухоли",
        "from_email": FROM,
        "to_email": IVAN,
        "to_name": "Иван Петров",
        "subject": "Выпуск №1: всё о выхухолях",
        "text": "Здравствуйте, Иван!\n\nВыхухоль — это зверёк.\n",
        "run_id": "lease-20261129T170000-ab12",
        "list_id": "news.example.org",
        "unsubscribe_url": UNSUBSCRIBE,
        "date": datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc),
    }
    values.update(overrides)
    return build_message(**values)


def content(part: Any) -> str:
    """A text part's content with the wire's CRLF line ends back to \\n."""
    return part.get_content().replace("\r\n", "\n")


def send_one(
    smtp_server: Any, msg: EmailMessage | None = None, recipient: str = IVAN, **config: Any
) -> None:
    with open_transport(smtp_server.config(**config)) as transport:
        transport.send(msg if msg is not None else letter(), recipient)


# --- the letter as it arrives ----------------------------------------------------


def test_a_list_letter_arrives_with_every_header_the_spec_names(smtp_server: Any) -> None:
    send_one(smtp_server)

    [got] = smtp_server.handler.received
    assert got.mail_from == FROM
    assert got.rcpt_tos == [IVAN]
    msg = got.message
    assert msg["From"].addresses[0].display_name == "Новости Выхухоли"
    assert msg["From"].addresses[0].addr_spec == FROM
    assert msg["To"].addresses[0].display_name == "Иван Петров"
    assert msg["To"].addresses[0].addr_spec == IVAN
    assert msg["Subject"] == "Выпуск №1: всё о выхухолях"
    assert parsedate_to_datetime(msg["Date"]) == datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc)
    assert msg["Message-ID"].startswith("<") and msg["Message-ID"].endswith("@example.org>")
    assert msg["List-Id"] == "<news.example.org>"
    assert msg["List-Unsubscribe"] == f"<{UNSUBSCRIBE}>"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg["X-Vykhukhol-Run"] == "lease-20261129T170000-ab12"
    assert msg.get_content_type() == "text/plain"
    assert msg["Content-Transfer-Encoding"] == "quoted-printable"


def test_each_letter_gets_its_own_message_id() -> None:
    assert letter()["Message-ID"] != letter()["Message-ID"]


def test_a_letter_without_an_unsubscribe_link_has_no_list_unsubscribe_headers(
    smtp_server: Any,
) -> None:
    send_one(smtp_server, letter(list_id=None, unsubscribe_url=None))

    msg = smtp_server.handler.received[0].message
    assert "List-Unsubscribe" not in msg
    assert "List-Unsubscribe-Post" not in msg
    assert "List-Id" not in msg
    assert msg["X-Vykhukhol-Run"] == "lease-20261129T170000-ab12"


def test_a_long_unsubscribe_link_travels_verbatim_on_one_line(smtp_server: Any) -> None:
    send_one(smtp_server, letter(unsubscribe_url=LONG_UNSUBSCRIBE))

    raw = smtp_server.handler.received[0].data
    assert f"List-Unsubscribe: <{LONG_UNSUBSCRIBE}>\r\n".encode() in raw
    assert smtp_server.handler.received[0].message["List-Unsubscribe"] == f"<{LONG_UNSUBSCRIBE}>"


def test_cyrillic_subject_and_body_arrive_intact_as_seven_bit_bytes(smtp_server: Any) -> None:
    body = (
        "Здравствуйте, Иван!\n\nЁжик в тумане. «Кавычки» — и тире.\n"
        + "Длинная строка " * 20
        + "\n"
    )
    send_one(smtp_server, letter(subject="Привет, ёжик! " * 6, text=body))

    got = smtp_server.handler.received[0]
    assert all(byte < 128 for byte in got.data)
    assert all(len(line) <= 998 for line in got.data.split(b"\r\n"))
    msg = got.message
    assert msg["Subject"] == ("Привет, ёжик! " * 6).strip()
    assert content(msg) == body


def test_html_travels_as_an_alternative_to_the_plain_text(smtp_server: Any) -> None:
    send_one(smtp_server, letter(html="<p>Здравствуйте, <b>Иван</b>!</p>\n"))

    got = smtp_server.handler.received[0]
    msg = got.message
    assert all(byte < 128 for byte in got.data)
    assert msg.get_content_type() == "multipart/alternative"
    parts = list(msg.iter_parts())
    assert [p.get_content_type() for p in parts] == ["text/plain", "text/html"]
    assert all(p["Content-Transfer-Encoding"] == "quoted-printable" for p in parts)
    assert content(msg.get_body(("plain",))) == "Здравствуйте, Иван!\n\nВыхухоль — это зверёк.\n"
    assert content(msg.get_body(("html",))) == "<p>Здравствуйте, <b>Иван</b>!</p>\n"


def test_line_breaks_in_the_subject_or_names_cannot_create_a_header(smtp_server: Any) -> None:
    send_one(
        smtp_server,
        letter(
            subject="Hello\r\nBcc: victim@example.net",
            from_name="Evil\nReply-To: evil@example.net",
            to_name="Ivan\r\n\r\nInjected body",
        ),
    )

    got = smtp_server.handler.received[0]
    msg = got.message
    assert got.rcpt_tos == [IVAN]
    assert "Bcc" not in msg and "Reply-To" not in msg
    assert msg["Subject"] == "Hello Bcc: victim@example.net"
    assert msg["From"].addresses[0].display_name == "Evil Reply-To: evil@example.net"
    assert msg["To"].addresses[0].display_name == "Ivan Injected body"
    assert [name.lower() for name in msg.keys()] == [
        "from", "to", "subject", "date", "message-id", "list-id", "list-unsubscribe",
        "list-unsubscribe-post", "x-vykhukhol-run", "content-type", "content-transfer-encoding",
        "mime-version",
    ]  # fmt: skip


def test_a_name_full_of_address_syntax_stays_one_address() -> None:
    msg = letter(to_name='Ivan" <evil@example.net>, "Other')
    [address] = msg["To"].addresses
    assert address.addr_spec == IVAN


@pytest.mark.parametrize(
    "overrides",
    [
        {"to_email": "ivan@example.org\r\nBcc: victim@example.net"},
        {"to_email": "ivan @example.org"},
        {"to_email": "ivan@example.org\n"},
        {"to_email": "<ivan@example.org>"},
        {"to_email": "no-at-sign"},
        {"to_email": "иван@example.org"},
        {"from_email": "news@example.org\rX: y"},
        {"from_email": ""},
        {"list_id": "news example.org"},
        {"list_id": "news.example.org>\r\nBcc: x@y.z"},
        {"unsubscribe_url": "javascript:alert(1)"},
        {"unsubscribe_url": "https://example.org/a b"},
        {"unsubscribe_url": "https://example.org/>\r\nBcc: x@y.z"},
        {"run_id": "\r\n"},
    ],
)
def test_addresses_and_list_values_that_could_break_a_header_are_refused(
    overrides: dict[str, str],
) -> None:
    with pytest.raises(BadInput):
        letter(**overrides)


def test_an_international_domain_travels_in_idna_form() -> None:
    msg = letter(from_email="news@пример.рф", to_email="ivan@почта.рф")
    assert msg["From"].addresses[0].addr_spec == "news@xn--e1afmkfd.xn--p1ai"
    assert msg["To"].addresses[0].addr_spec == "ivan@xn--80a1acny.xn--p1ai"
    assert msg["Message-ID"].endswith("@xn--e1afmkfd.xn--p1ai>")


def test_a_naive_date_is_taken_as_utc() -> None:
    msg = letter(date=datetime(2026, 1, 2, 3, 4, 5))
    assert msg["Date"] == "Fri, 02 Jan 2026 03:04:05 +0000"


@given(st.text())
def test_clean_header_text_never_leaves_a_control_character_or_outer_space(value: str) -> None:
    cleaned = clean_header_text(value)
    assert not any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in cleaned)
    assert cleaned == cleaned.strip()
    assert "  " not in cleaned


# --- one SMTP connection per run -----------------------------------------------------


def test_one_connection_carries_every_letter_of_a_run(smtp_server: Any) -> None:
    recipients = [f"reader{i}@example.org" for i in range(4)]
    with open_transport(smtp_server.config()) as transport:
        for rcpt in recipients:
            transport.send(letter(to_email=rcpt), rcpt)

    assert [got.rcpt_tos for got in smtp_server.handler.received] == [[r] for r in recipients]
    assert smtp_server.handler.connections == 1
    assert transport.connections == 1


def test_no_connection_is_made_until_the_first_letter(smtp_server: Any) -> None:
    transport = open_transport(smtp_server.config())
    transport.close()
    assert smtp_server.handler.connections == 0


def test_the_envelope_recipient_is_exactly_the_one_given(smtp_server: Any) -> None:
    send_one(smtp_server, letter(to_email=IVAN), recipient="other@example.org")

    got = smtp_server.handler.received[0]
    assert got.rcpt_tos == ["other@example.org"]
    assert got.message["To"].addresses[0].addr_spec == IVAN


def test_the_envelope_sender_may_be_given_per_letter(smtp_server: Any) -> None:
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter(), IVAN, envelope_from="bounces@example.org")
    assert smtp_server.handler.received[0].mail_from == "bounces@example.org"


def test_a_connection_the_server_dropped_while_idle_is_opened_again(smtp_server: Any) -> None:
    with open_transport(smtp_server.config()) as transport:
        transport.send(letter(), IVAN)
        smtp_server.drop_connections()
        time.sleep(0.2)
        transport.idle_check_after = 0.0
        transport.send(letter(), IVAN)

    assert len(smtp_server.handler.received) == 2
    assert smtp_server.handler.connections == 2


# --- failures ---------------------------------------------------------------------------


def test_550_for_a_recipient_is_a_permanent_failure(smtp_server: Any) -> None:
    smtp_server.handler.rcpt_responses["gone@example.org"] = "550 5.1.1 no such user"
    with open_transport(smtp_server.config()) as transport:
        with pytest.raises(PermanentFailure) as caught:
            transport.send(letter(to_email="gone@example.org"), "gone@example.org")
        transport.send(letter(), IVAN)  # the run may go on, on a fresh connection

    failure = caught.value
    assert (failure.code, failure.temporary, failure.stage) == (550, False, "rcpt")
    assert "no such user" in failure.detail
    assert [got.rcpt_tos for got in smtp_server.handler.received] == [[IVAN]]
    assert smtp_server.handler.connections == 2  # closed after the error, like Mailman


def test_451_for_a_recipient_is_a_temporary_failure(smtp_server: Any) -> None:
    smtp_server.handler.rcpt_responses[IVAN] = "451 4.7.1 try later"
    with pytest.raises(TemporaryFailure) as caught:
        send_one(smtp_server)
    assert (caught.value.code, caught.value.temporary, caught.value.stage) == (451, True, "rcpt")
    assert "try later" in caught.value.detail


def test_421_at_data_is_a_temporary_failure(smtp_server: Any) -> None:
    smtp_server.handler.data_responses[IVAN] = "421 4.3.2 shutting down"
    with pytest.raises(TemporaryFailure) as caught:
        send_one(smtp_server)
    assert (caught.value.code, caught.value.stage) == (421, "data")
    assert smtp_server.handler.received == []


def test_554_at_data_is_a_permanent_failure(smtp_server: Any) -> None:
    smtp_server.handler.data_responses[IVAN] = "554 5.7.1 message refused"
    with pytest.raises(PermanentFailure) as caught:
        send_one(smtp_server)
    assert (caught.value.code, caught.value.stage) == (554, "data")


def test_a_refused_sender_is_temporary_because_every_letter_would_fail(smtp_server: Any) -> None:
    smtp_server.handler.mail_responses[FROM] = "553 5.7.1 sender not allowed"
    with pytest.raises(TemporaryFailure) as caught:
        send_one(smtp_server)
    assert (caught.value.code, caught.value.stage) == (553, "mail")


def test_a_connection_dropped_during_data_is_temporary_and_marked_unanswered(smtp_server: Any) -> None:
    """The server may have taken the letter: the sender must record it in doubt, not retry."""
    smtp_server.handler.data_responses[IVAN] = "drop"
    with pytest.raises(TemporaryFailure) as caught:
        send_one(smtp_server)
    assert caught.value.code is None
    assert caught.value.stage == "data-unanswered"


def test_a_closed_port_is_a_temporary_failure(closed_port: int) -> None:
    config = MailConfig(transport="smtp", from_email=FROM, smtp_port=closed_port, timeout=2)
    with open_transport(config) as transport, pytest.raises(TemporaryFailure) as caught:
        transport.send(letter(), IVAN)
    assert caught.value.stage == "connect"
    assert f"127.0.0.1:{closed_port}" in caught.value.detail


def test_a_server_slower_than_the_timeout_is_a_temporary_failure(smtp_server: Any) -> None:
    smtp_server.handler.data_delay = 3.0
    started = time.monotonic()
    with pytest.raises(TemporaryFailure) as caught:
        send_one(smtp_server, timeout=1.0)
    assert time.monotonic() - started < 2.5
    assert "timed out" in caught.value.detail


def test_starttls_with_a_server_that_lacks_it_is_a_temporary_failure(smtp_server: Any) -> None:
    with pytest.raises(TemporaryFailure) as caught:
        send_one(smtp_server, smtp_security="starttls")
    assert caught.value.stage == "connect"
    assert "STARTTLS" in caught.value.detail


def test_an_impossible_recipient_is_a_permanent_failure_before_any_connection(
    smtp_server: Any,
) -> None:
    with pytest.raises(PermanentFailure) as caught:
        send_one(smtp_server, recipient="ivan@example.org\r\nRCPT TO:<x@y.z>")
    assert caught.value.stage == "local"
    assert smtp_server.handler.connections == 0


# --- dev_redirect -------------------------------------------------------------------------


def test_dev_redirect_changes_the_envelope_recipient_and_the_to_header(smtp_server: Any) -> None:
    original = letter()
    send_one(smtp_server, original, dev_redirect="dev@example.org")

    got = smtp_server.handler.received[0]
    assert got.rcpt_tos == ["dev@example.org"]
    assert got.message["To"] == "dev@example.org"
    assert got.message["X-Vykhukhol-Original-To"] == "Иван Петров <ivan@example.org>"
    assert original["To"].addresses[0].addr_spec == IVAN  # the caller's letter is untouched
    assert "X-Vykhukhol-Original-To" not in original


def test_dev_redirect_applies_to_sendmail_and_outbox_too(tmp_path: Path) -> None:
    fake = fake_sendmail(tmp_path)
    config = MailConfig(
        transport="sendmail",
        from_email=FROM,
        sendmail_path=str(fake),
        dev_redirect="dev@example.org",
    )
    with open_transport(config) as transport:
        transport.send(letter(), IVAN)
    assert (tmp_path / "argv").read_text().split("\n")[-2] == "dev@example.org"

    outbox = tmp_path / "outbox"
    config = MailConfig(from_email=FROM, outbox_dir=outbox, dev_redirect="dev@example.org")
    with open_transport(config) as transport:
        transport.send(letter(), IVAN)
    [path] = list_outbox(outbox)
    assert path.name.endswith("-dev@example.org.eml")
    assert read_outbox(path)["To"] == "dev@example.org"


# --- outbox ---------------------------------------------------------------------------------


def test_the_outbox_holds_one_readable_eml_file_per_letter_newest_first(tmp_path: Path) -> None:
    outbox = tmp_path / "data" / "outbox"
    recipients = ["a@example.org", "b@example.org", "c@example.org"]
    with open_transport(MailConfig(from_email=FROM, outbox_dir=outbox)) as transport:
        for rcpt in recipients:
            transport.send(letter(to_email=rcpt, subject=f"Письмо для {rcpt}"), rcpt)
            time.sleep(0.002)

    paths = list_outbox(outbox)
    assert [p.name.split("-", 2)[2] for p in paths] == [f"{r}.eml" for r in reversed(recipients)]
    assert [read_outbox(p)["Subject"] for p in paths] == [
        f"Письмо для {r}" for r in reversed(recipients)
    ]
    raw = paths[0].read_bytes()
    assert all(byte < 128 for byte in raw)
    assert b"\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n" in raw
    assert content(read_outbox(paths[0])) == "Здравствуйте, Иван!\n\nВыхухоль — это зверёк.\n"


def test_outbox_names_never_collide_for_letters_to_one_recipient(tmp_path: Path) -> None:
    with open_transport(MailConfig(from_email=FROM, outbox_dir=tmp_path)) as transport:
        for i in range(20):
            transport.send(letter(subject=f"n{i}"), IVAN)
    paths = list_outbox(tmp_path)
    assert len(paths) == 20
    assert [read_outbox(p)["Subject"] for p in paths] == [f"n{i}" for i in reversed(range(20))]


def test_an_outbox_letter_read_back_keeps_its_long_link_verbatim(tmp_path: Path) -> None:
    with open_transport(MailConfig(from_email=FROM, outbox_dir=tmp_path)) as transport:
        transport.send(letter(unsubscribe_url=LONG_UNSUBSCRIBE), IVAN)
    [path] = list_outbox(tmp_path)
    again = read_outbox(path).as_bytes(policy=mail.POLICY)
    assert f"List-Unsubscribe: <{LONG_UNSUBSCRIBE}>\r\n".encode() in again


def test_a_missing_outbox_is_empty_and_a_missing_letter_is_not_found(tmp_path: Path) -> None:
    assert list_outbox(tmp_path / "nowhere") == []
    with pytest.raises(NotFound):
        read_outbox(tmp_path / "nowhere" / "x.eml")


def test_the_outbox_ignores_unfinished_temporary_files(tmp_path: Path) -> None:
    (tmp_path / ".20261129T170000-000000-a@example.org.eml.abc.tmp").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    assert list_outbox(tmp_path) == []


def test_an_outbox_that_cannot_be_written_is_a_temporary_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    config = MailConfig(from_email=FROM, outbox_dir=blocker / "outbox")
    with open_transport(config) as transport, pytest.raises(TemporaryFailure) as caught:
        transport.send(letter(), IVAN)
    assert caught.value.stage == "local"


# --- sendmail -------------------------------------------------------------------------------


def fake_sendmail(folder: Path, exit_code: int = 0, stderr: str = "", hang: bool = False) -> Path:
    """A real executable that saves its argv and stdin next to itself."""
    script = folder / "fake-sendmail"
    script.write_text(
        "#!/bin/sh\n"
        'here=$(dirname "$0")\n'
        'printf \'%s\\n\' "$@" > "$here/argv"\n'
        'cat > "$here/stdin"\n'
        + ("exec sleep 10\n" if hang else "")
        + (f"echo '{stderr}' >&2\n" if stderr else "")
        + f"exit {exit_code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def sendmail_config(path: Path | str, **overrides: Any) -> MailConfig:
    return MailConfig(transport="sendmail", from_email=FROM, sendmail_path=str(path), **overrides)


def test_sendmail_gets_exactly_i_f_sender_and_the_recipient(tmp_path: Path) -> None:
    fake = fake_sendmail(tmp_path)
    with open_transport(sendmail_config(fake)) as transport:
        transport.send(letter(), IVAN)

    assert (tmp_path / "argv").read_text().splitlines() == ["-i", "-f", FROM, "--", IVAN]
    data = (tmp_path / "stdin").read_bytes()
    assert b"\r" not in data  # local line ends for a local program
    assert all(byte < 128 for byte in data)
    msg = message_from_bytes(data, policy=email.policy.default)
    assert msg["Subject"] == "Выпуск №1: всё о выхухолях"
    assert msg["List-Unsubscribe"] == f"<{UNSUBSCRIBE}>"


@pytest.mark.parametrize("exit_code", [75, 71, 74, 78])
def test_sendmail_saying_try_later_or_reporting_a_local_fault_is_temporary(
    tmp_path: Path, exit_code: int
) -> None:
    fake = fake_sendmail(tmp_path, exit_code=exit_code, stderr="queue directory is full")
    with (
        open_transport(sendmail_config(fake)) as transport,
        pytest.raises(TemporaryFailure) as caught,
    ):
        transport.send(letter(), IVAN)
    assert f"exited with {exit_code}" in caught.value.detail
    assert "queue directory is full" in caught.value.detail


@pytest.mark.parametrize("exit_code", [1, 67])
def test_sendmail_refusing_a_letter_is_a_permanent_failure(tmp_path: Path, exit_code: int) -> None:
    fake = fake_sendmail(tmp_path, exit_code=exit_code, stderr="ivan... User unknown")
    with (
        open_transport(sendmail_config(fake)) as transport,
        pytest.raises(PermanentFailure) as caught,
    ):
        transport.send(letter(), IVAN)
    assert caught.value.temporary is False
    assert "User unknown" in caught.value.detail


def test_a_missing_sendmail_is_a_temporary_failure(tmp_path: Path) -> None:
    with open_transport(sendmail_config(tmp_path / "no-such-sendmail")) as transport:
        with pytest.raises(TemporaryFailure, match="cannot run"):
            transport.send(letter(), IVAN)


def test_a_sendmail_that_hangs_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    fake = fake_sendmail(tmp_path, hang=True)
    started = time.monotonic()
    with open_transport(sendmail_config(fake, timeout=1.0)) as transport:
        with pytest.raises(TemporaryFailure, match="did not finish"):
            transport.send(letter(), IVAN)
    assert time.monotonic() - started < 5


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"transport": "pigeon"},
        {"transport": "smtp", "smtp_security": "tls"},
        {"transport": "smtp", "timeout": 0},
        {"transport": "outbox", "outbox_dir": None},
        {"from_email": "news@example.org\r\nBcc: x@y.z"},
        {"dev_redirect": "dev @example.org"},
    ],
)
def test_open_transport_refuses_settings_it_cannot_use(overrides: dict[str, Any]) -> None:
    values: dict[str, Any] = {"from_email": FROM, "outbox_dir": Path(os.devnull).parent}
    values.update(overrides)
    with pytest.raises(BadInput):
        open_transport(MailConfig(**values))
