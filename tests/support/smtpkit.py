"""A real SMTP server (aiosmtpd) on 127.0.0.1 whose answers a test can choose.

``smtp_server`` yields a :class:`SmtpServer`: ``.port``, ``.handler`` (a
:class:`ProgrammableHandler`) and ``.config(**overrides)`` for a
:class:`~vykhukhol.mail.MailConfig` pointing at it.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from vykhukhol.mail import MailConfig

DROP = "drop"  # a DATA "response" that closes the connection without a reply


@dataclass
class Received:
    """One letter the server accepted."""

    mail_from: str
    rcpt_tos: list[str]
    data: bytes  # exactly the bytes after DATA

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.data, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class ProgrammableHandler:
    """Accepts everything unless told otherwise.

    * ``mail_responses`` — envelope sender → reply to MAIL FROM.
    * ``rcpt_responses`` — recipient → reply to RCPT (``"550 no such user"``).
    * ``data_responses`` — recipient → reply to DATA (``"451 try later"``), or
      :data:`DROP` to hang up instead of replying.
    * ``data_delay`` — seconds to wait before answering DATA.
    * ``sessions`` — one entry per connection that said EHLO/HELO.
    * ``pipelining`` — offer PIPELINING (RFC 2920) after EHLO; aiosmtpd reads
      commands line by line from its buffer, so pipelined ones are answered
      in order.
    * ``commands`` — ``MAIL <sender>``, ``RSET`` and ``QUIT`` as they came.
    """

    received: list[Received] = field(default_factory=list)
    mail_responses: dict[str, str] = field(default_factory=dict)
    rcpt_responses: dict[str, str] = field(default_factory=dict)
    data_responses: dict[str, str] = field(default_factory=dict)
    data_delay: float = 0.0
    sessions: list[Any] = field(default_factory=list)
    servers: list[Any] = field(default_factory=list)
    pipelining: bool = False
    commands: list[str] = field(default_factory=list)

    def _greeted(self, server: Any, session: Any, hostname: str) -> None:
        session.host_name = hostname
        if not any(seen is session for seen in self.sessions):
            self.sessions.append(session)
            self.servers.append(server)

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self._greeted(server, session, hostname)
        return offering_pipelining(responses) if self.pipelining else responses

    async def handle_HELO(self, server, session, envelope, hostname):
        self._greeted(server, session, hostname)
        return f"250 {server.hostname}"

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        self.commands.append(f"MAIL {address}")
        reply = self.mail_responses.get(address)
        if reply:
            return reply
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RSET(self, server, session, envelope):
        self.commands.append("RSET")
        return "250 OK"

    async def handle_QUIT(self, server, session, envelope):
        self.commands.append("QUIT")
        return "221 Bye"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reply = self.rcpt_responses.get(address)
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_delay:
            await asyncio.sleep(self.data_delay)
        for rcpt in envelope.rcpt_tos:
            reply = self.data_responses.get(rcpt)
            if reply == DROP:
                server.transport.close()
                return "421 closing"  # never reaches the client
            if reply:
                return reply
        self.received.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content))
        )
        return "250 Message accepted"

    @property
    def connections(self) -> int:
        return len(self.sessions)


def offering_pipelining(responses: list[str]) -> list[str]:
    """aiosmtpd's EHLO reply with PIPELINING added before its last line."""
    return [*responses[:-1], "250-PIPELINING", responses[-1]]


@dataclass
class SmtpServer:
    controller: Controller
    handler: ProgrammableHandler
    port: int

    def config(self, **overrides: Any) -> MailConfig:
        values: dict[str, Any] = {
            "transport": "smtp",
            "from_email": "news@example.org",
            "smtp_host": "127.0.0.1",
            "smtp_port": self.port,
            "timeout": 5.0,
        }
        values.update(overrides)
        return MailConfig(**values)

    def drop_connections(self) -> None:
        """Hang up on every client, as a server does with idle sessions."""
        for server in self.handler.servers:
            if server.transport is not None:
                self.controller.loop.call_soon_threadsafe(server.transport.close)


def free_port() -> int:
    """A port nobody listens on right now (Controller cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A local port with no server behind it."""
    return free_port()


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    handler = ProgrammableHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield SmtpServer(controller, handler, port)
    finally:
        controller.stop()
