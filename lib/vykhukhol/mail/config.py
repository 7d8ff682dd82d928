"""How a service's letters leave: :class:`MailConfig`, built from the settings.

The ``[mail]`` section of ``settings.ini`` is read and checked by
:mod:`vykhukhol.settings`, which knows nothing of letters; this module turns
it into what the transports want (:func:`config_from_settings`), so the settings
never import the mail package. Tests and tools build a :class:`MailConfig` by
hand.

Deliberately not here: checking the values (:func:`.opener.open_transport`
does, before any transport is made) and the transports themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vykhukhol.settings import Settings

TRANSPORTS = ("outbox", "smtp", "sendmail")
SECURITIES = ("none", "starttls", "ssl")


@dataclass
class MailConfig:
    """How a service's letters leave: the `[mail]` settings (docs/reference/settings.md#setting-mail-transport)."""

    transport: str = "outbox"  # outbox | smtp | sendmail
    from_email: str = ""
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 25
    smtp_security: str = "none"  # none | starttls | ssl
    smtp_user: str = ""
    smtp_password: str = ""
    sendmail_path: str = "/usr/sbin/sendmail"
    dev_redirect: str = ""  # when set, every letter goes to this one address
    outbox_dir: Path | None = None
    timeout: float = 20.0  # seconds for connect and each SMTP command, or for sendmail
    smtp_connections: int = 1  # SMTP connections a run may open at once (see .lanes)
    helo_name: str = ""  # the greeting's name (empty: from_email's domain, else localhost)
    dkim_domain: str = ""  # when set, every letter is signed (docs/reference/transports.md#transports-dkim)
    dkim_selector: str = ""
    dkim_key: Path | None = None  # the PEM private key


def config_from_settings(settings: Settings, outbox_dir: Path) -> MailConfig:
    """The ``[mail]`` section as the transports want it (``outbox_dir`` is
    ``data/outbox``; the DKIM key is found beside it, in ``data/``)."""
    domain = settings["mail.dkim_domain"]
    key = None
    if domain:
        from vykhukhol.mail.dkim import settings_key_path  # off the command line's start

        key = settings_key_path(Path(outbox_dir).parent, settings)
    return MailConfig(
        transport=settings["mail.transport"], from_email=settings["mail.from_email"],
        smtp_host=settings["mail.smtp_host"], smtp_port=settings["mail.smtp_port"],
        smtp_security=settings["mail.smtp_security"], smtp_user=settings["mail.smtp_user"],
        smtp_password=settings["mail.smtp_password"], sendmail_path=settings["mail.sendmail_path"],
        dev_redirect=settings["mail.dev_redirect"], outbox_dir=outbox_dir,
        dkim_domain=domain, dkim_selector=settings["mail.dkim_selector"], dkim_key=key,
        smtp_connections=settings["mail.smtp_connections"],
        helo_name=greeting_name(settings),
    )


def greeting_name(settings: Settings) -> str:
    """The name the SMTP greeting (EHLO) gives (docs/reference/transports.md#transports): ``mail.helo_name``,
    else the host of ``site_url`` when it is a domain name, else the domain
    of ``from_email`` (a receiver scores a bare ``[127.0.0.1]``, which
    smtplib would say on a host without a dotted name, as spam)."""
    if settings["mail.helo_name"]:
        return settings["mail.helo_name"]
    from urllib.parse import urlsplit

    host = (urlsplit(settings["site_url"]).hostname or "").rstrip(".")
    if "." in host and not host.replace(".", "").isdigit() and ":" not in host:
        return host.lower()
    return settings["mail.from_email"].rpartition("@")[2].lower()
