"""Nothing mailed to the bounce address can stop or slow the sending
(docs/deliverability/bounces.md#bounces): messages are sized and shaped before they
are parsed, a message that stopped the reader twice is set aside, and
bounces.log has one line in plain words for every result.

Real parts throughout: ``vykhukhol bounce`` as a subprocess fed on standard
input, ``vykhukhol cron`` reading a real Dovecot over imaps and pop3s and
sending to aiosmtpd, ``kill -9`` of a real reader.

Before this change, each bomb here kept ``vykhukhol bounce`` busy for tens of
seconds (2 MB of empty lines: 28-53 s; nesting 400 deep: 81 s), a cron run
spent its whole bounce slice on one and sent nothing, a repeat wrote no line,
an empty message was a "problem", and data/bounces/ was made 0755.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.dovecotkit import dovecot_fixture, dovecot_server_fixture  # noqa: F401 - fixtures
from support.servetools import subprocess_env
from vykhukhol import returntag as tags
from vykhukhol.bounces import apply, tries
from vykhukhol.bounces.reading import limits

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"
DEAD, ALIVE = "dead@example.com", "alive@example.com"
LESSON = [("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")]
HOUR = 3600
HEAD = b"From: MAILER-DAEMON@example.org\r\nSubject: Undelivered Mail\r\n"


def sender_of(site, address: str) -> str:
    settings = site.settings()
    return tags.bounce_address("list@example.org", "+",
                               tags.make(settings.secret, "s", "course", address))


def dsn(site, address: str) -> bytes:
    raw = (DATA / "flufl-dsn_01.txt").read_bytes().replace(b"userx@example.com", address.encode())
    return f"Delivered-To: {sender_of(site, address)}\n".encode() + raw


def nested(depth: int) -> bytes:
    out = HEAD + b"MIME-Version: 1.0\r\n"
    for level in range(depth):
        out += b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (level, level)
    out += b"Content-Type: text/plain\r\n\r\nhi\r\n"
    for level in reversed(range(depth)):
        out += b"--b%d--\r\n" % level
    return out


def parts(count: int) -> bytes:
    out = HEAD + b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
    return out + b"--b\r\nContent-Type: text/plain\r\n\r\npart\r\n" * count + b"--b--\r\n"


# Each bomb and the reason it is refused with (a refusal names its limit).
BOMBS = {
    "2 MB of empty lines": (HEAD + b"\r\n" * 1_000_000, "too big: "),
    "nested 400 deep": (nested(400), "MIME parts nested too deep: up to 400 levels"),
    "5,000 parts": (parts(5000), "too many lines:"),
    "1,000 bare boundaries": (HEAD + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
                              + b"--b\r\n" * 1000, "too many MIME parts: up to 1001"),
    "one 100 kB header": (HEAD + b"X-Long: " + b"=?utf-8?q?a?= " * 7000 + b"\r\n\r\nhi\r\n",
                          "a line (or header field) too long"),
}


def slow(site) -> bytes:
    """A message inside every limit that still takes a while (the most lines
    of the most bytes): the reader can be killed while it is on it."""
    line = b"y" * (limits.MAX_BYTES // limits.MAX_LINES - 3) + b"\r\n"
    return f"To: {sender_of(site, DEAD)}\r\n".encode() + HEAD + b"\r\n" + line * (
        limits.MAX_LINES - 10)


def pipe_site(site) -> None:
    site.set(mail__from_email="list@example.org")
    site.service("course", letters=LESSON)
    site.subscriber("course", DEAD)


def pipe(site, raw: bytes, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root), "bounce"],
                            input=raw, capture_output=True, timeout=60, env=subprocess_env(), **kw)
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stdout + result.stderr
    return result


def bounce_log(site) -> list[list[str]]:
    path = site.data.log / "bounces.log"
    return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []


def kept(site) -> list[Path]:
    return sorted((site.data.root / "bounces" / "kept").glob("*.eml"))


# --- the pipe ---------------------------------------------------------------------

def test_piped_bombs_are_refused_unread_kept_and_logged_in_plain_words(site):
    pipe_site(site)
    before = site.subscribers("course")
    for raw, _ in BOMBS.values():
        pipe(site, raw)
    lines = bounce_log(site)
    assert [line[2] for line in lines] == ["refused"] * len(BOMBS)
    for line, (name, (_, reason)) in zip(lines, BOMBS.items(), strict=True):
        assert line[6].startswith(reason), (name, line[6])
        assert "b'" not in line[6]
    assert len(kept(site)) == len(BOMBS)  # for the admin to look at
    assert site.subscribers("course") == before


def test_every_piped_result_is_one_line_repeats_and_empty_messages_included(site):
    pipe_site(site)
    raw = dsn(site, DEAD)
    pipe(site, raw)
    pipe(site, raw)  # the mail server delivers it again
    pipe(site, b"")
    assert [line[2] for line in bounce_log(site)] == ["permanent", "repeated", "refused"]
    assert bounce_log(site)[1][1] == bounce_log(site)[0][1]  # the same message id
    assert bounce_log(site)[2][6] == "empty message"
    assert site.subscribers("course")[DEAD].failures == 1


def test_the_bounce_folders_are_made_0700_whatever_the_umask(site):
    pipe_site(site)
    pipe(site, b"Subject: hello\n\nthanks for the lesson\n", preexec_fn=lambda: os.umask(0))
    for folder in (site.data.root / "bounces", site.data.root / "bounces" / "kept"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert kept(site)


def kill_while_on(command: list[str], site, raw: bytes | None, begun: int) -> None:
    """Start the reader, wait until it has begun the ``begun``-th try of a
    message (data/bounces/tries.txt), and kill -9 it there."""
    path = tries.tries_path(site.data)
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, env=subprocess_env(),
                          start_new_session=True) as process:
        if raw is not None:
            process.stdin.write(raw)
        process.stdin.close()
        deadline = time.monotonic() + 60
        while not (path.exists() and len([m for m in path.read_text().split() if m != "-"]) >= begun):
            assert process.poll() is None, "the reader finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        os.killpg(process.pid, signal.SIGKILL)


def test_a_piped_message_that_stopped_the_reader_twice_is_set_aside(site):
    pipe_site(site)
    raw = slow(site)
    command = [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "bounce"]
    kill_while_on(command, site, raw, 1)
    kill_while_on(command, site, raw, 2)
    assert bounce_log(site) == []  # killed both times before a result
    pipe(site, raw)
    [line] = bounce_log(site)
    assert line[1] == apply.message_id(raw)
    assert line[2] == "refused"
    assert line[6] == "set aside unread: the reader was stopped twice while on it"
    assert len(kept(site)) == 1


# --- the mailbox ------------------------------------------------------------------

def mailbox_site(site, smtp_server, dovecot, scheme: str) -> None:
    site.use_smtp(smtp_server.port)
    site.set(mail__bounce_mailbox=dovecot.url(scheme), mail__bounce_cafile=str(dovecot.cafile),
             time_limit="12s")
    site.service("course", letters=LESSON)
    for address in (DEAD, ALIVE):
        site.subscriber("course", address, ago=2 * HOUR)


def sent_to(smtp_server) -> set[str]:
    return {r for m in smtp_server.handler.received for r in m.rcpt_tos}


@pytest.mark.parametrize("scheme", ["imaps", "pop3s"])
def test_bombs_in_the_mailbox_cannot_stop_the_sending(site, smtp_server, dovecot, scheme):
    mailbox_site(site, smtp_server, dovecot, scheme)
    for raw, _ in BOMBS.values():
        dovecot.deliver(raw)
    dovecot.deliver(dsn(site, DEAD))
    started = time.monotonic()
    result = site.cli("cron")
    assert time.monotonic() - started < 12  # time_limit
    assert "Traceback" not in result.stdout + result.stderr
    assert {DEAD, ALIVE} <= sent_to(smtp_server)  # the letters went out
    lines = bounce_log(site)
    assert sorted(line[2] for line in lines) == ["permanent"] + ["refused"] * len(BOMBS)
    for line in lines:
        # a bomb's line names no address; the report's may quote its own words
        # ("Recipient address: userx@sims-ms-daemon … recipient reached disk quota")
        assert "b'" not in line[6] and line[6].count("@") <= (1 if line[2] == "refused" else 2)
    assert [line[4] for line in lines if line[2] == "permanent"] == [DEAD]
    assert dovecot.messages() == []  # nothing left to hold up the next run
    if scheme == "imaps":
        assert len(dovecot.messages("Rejected")) == len(BOMBS)
        assert len(dovecot.messages("Processed")) == 1
    assert len(kept(site)) == len(BOMBS)  # POP3 deletes them only once they are kept


def test_a_message_that_stopped_the_mailbox_reader_twice_is_moved_aside(site, smtp_server, dovecot):
    mailbox_site(site, smtp_server, dovecot, "imaps")
    raw = slow(site)
    dovecot.deliver(raw)
    dovecot.deliver(dsn(site, DEAD))
    command = [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "cron"]
    kill_while_on(command, site, None, 1)
    kill_while_on(command, site, None, 2)  # tried alone the second time: the other waits
    assert len(dovecot.messages()) == 2 and bounce_log(site) == []
    site.cli("cron")
    assert dovecot.messages() == []
    [aside] = dovecot.messages("Rejected")
    assert b"Undelivered Mail" in aside and aside.count(b"y" * 90) == limits.MAX_LINES - 10
    assert len(dovecot.messages("Processed")) == 1
    assert sorted(line[2] for line in bounce_log(site)) == ["permanent", "refused"]
    assert {DEAD, ALIVE} <= sent_to(smtp_server)


# --- the mailbox as a probe ---------------------------------------------------------

def admin_page(site, path: str, language: str) -> str:
    from support.servetools import call, environ, log_in
    from vykhukhol.web.admin import app

    site.set(language=language)
    wsgi = app(site.data, site.cgi_dir)
    cookie, _ = log_in(wsgi)
    status, _, page, _ = call(wsgi, environ("GET", path, "", b"", "", "missing", script="/admin",
                                            HTTP_COOKIE=cookie))
    assert status == 200
    return page


def test_the_bounce_mailbox_tells_why_it_failed_never_what_the_server_said(site, smtp_server, dovecot):
    """An admin may point mail.bounce_mailbox at any host and port: the log and
    the pages name a reason of ours, never the answering server's words."""
    import socket

    site.use_smtp(smtp_server.port)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
    smtp = smtp_server.port  # answers "220 … ESMTP" to whoever connects
    cases = [
        (f"imap://u:p@127.0.0.1:{closed_port}/INBOX", "connection refused", "в соединении отказано"),
        (f"imap://u:p@127.0.0.1:{smtp}/INBOX", "the server does not speak IMAP", "это не IMAP-сервер"),
        (f"pop3://u:p@127.0.0.1:{smtp}", "the server does not speak POP3", "это не POP3-сервер"),
        (f"imaps://u:p@127.0.0.1:{smtp}/INBOX", "TLS failed", "не удалось установить TLS-соединение"),
        (dovecot.url("imaps").replace("mailbox-secret-1", "wrong"), "the login was refused",
         "вход не принят"),
    ]
    site.set(mail__bounce_cafile=str(dovecot.cafile))
    for url, reason, _ in cases:
        site.set(mail__bounce_mailbox=url)
        result = site.cli("cron")
        assert "Traceback" not in result.stdout + result.stderr
        line = bounce_log(site)[-1]
        where = url.split("@", 1)[1].split("/", 1)[0]
        assert line[2] == "problem" and line[6].endswith(f"://{where}: {reason}"), line
    log = (site.data.log / "bounces.log").read_text()
    for server_words in ("220 ", "ESMTP", "b'", "mailbox-secret-1", "wrong", "u@"):  # not a port with 220 in it
        assert server_words not in log
    english, russian = admin_page(site, "/bounces", "en"), admin_page(site, "/bounces", "ru")
    for _, reason, translated in cases:
        assert reason in english and translated in russian
    assert "mailbox problem" in english and "ящик" in russian


def test_the_mailbox_reader_looks_at_the_clock_before_every_message(site, dovecot):
    """Twenty messages fit one group; a clock that moves on each time it is read
    runs the budget out inside that group: the reader stops there, the messages
    it handled are moved, the rest wait, and the next read takes them, each once."""
    from vykhukhol.bounces import sources

    site.set(mail__from_email="list@example.org", mail__bounce_mailbox=dovecot.url("imaps"),
             mail__bounce_cafile=str(dovecot.cafile))
    site.service("course", letters=LESSON)
    for n in range(20):
        dovecot.deliver(f"Subject: thanks {n}\n\nLovely lesson.\n".encode())
    ticks = iter(range(10**6))
    summary = sources.read_mailbox(site.data, site.settings(), 10, clock=lambda: next(ticks))
    assert 0 < summary.read < 20 and summary.left, summary
    assert len(dovecot.messages()) == 20 - summary.read
    assert len(dovecot.messages("Processed")) == summary.read
    rest = sources.read_mailbox(site.data, site.settings(), 60)
    assert rest.read == 20 - summary.read and not rest.left and rest.repeated == 0
    assert dovecot.messages() == [] and len(dovecot.messages("Processed")) == 20
    assert [line[2] for line in bounce_log(site)] == ["kept"] * 20
