"""The schema of the settings (docs/reference/settings.md): every key, its section, its default
and how its value is checked. :mod:`vykhukhol.settings` reads and writes the
file with it; the admin's Settings page and ``vykhukhol settings`` list it.
"""

from __future__ import annotations

import re

from vykhukhol import files
from vykhukhol.addresses import check_mailbox
from vykhukhol.errors import BadInput
from vykhukhol.i18n import LANGUAGES
from vykhukhol.timeutil import parse_duration

# Every CGI page loads this module: typing, dataclasses (with inspect), pathlib,
# secrets (with hashlib and random) and ipaddress are not imported for it (docs/design/startup.md#startup).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _choice(*options: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in options:
            raise BadInput("must be one of: {options}", options=", ".join(options))
        return value
    check.options = options  # type: ignore[attr-defined]  # forms offer them as a list
    return check


def _percent(low: float, high: float) -> Callable[[str], float]:
    """A share in per cent, ``0.1`` or ``0.1%``, to a hundredth at most."""
    def check(value: str) -> float:
        text = value.strip().removesuffix("%").strip()
        try:
            number = float(text)
        except ValueError:
            raise BadInput("must be a number of per cent, like 0.1 or 5") from None
        if not low <= number <= high or "e" in text.lower() or round(number, 2) != number:
            raise BadInput("must be from {low} to {high} per cent, to a hundredth at most",
                           low=low, high=high)
        return number
    return check


def _count(low: int, high: int) -> Callable[[str], int]:
    def check(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise BadInput("must be a whole number") from None
        if not low <= number <= high:
            raise BadInput("must be from {low} to {high}", low=low, high=high)
        return number
    return check


def _duration(low: int, high: int) -> Callable[[str], int]:
    def check(value: str) -> int:
        seconds = parse_duration(value)
        if not low <= seconds <= high:
            raise BadInput("must be from {low}s to {high}s", low=low, high=high)
        return seconds
    return check


def _optional_mailbox(value: str) -> str:
    return check_mailbox(value) if value else ""


def _program(value: str) -> str:
    """The syntax of a program's path; whether it can be run is asked where it is
    set (:func:`check`) and where it is used (the sendmail transport)."""
    if not value.startswith("/") or any(not c.isprintable() for c in value) or len(value) > 500:
        raise BadInput("must be the absolute path of a program, such as /usr/sbin/sendmail")
    return value


# The characters RFC 3986 allows in a URL: no quote, no angle bracket, no
# backslash, nothing outside ASCII (an IDN host is written in its xn-- form).
# site_url ends up in attributes (the form snippet) and in mail headers.
MAX_URL = 300  # the links made of it must stay far below a header line's 998 octets
URL_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")


def _url(value: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        host = None
    if not value.startswith(("http://", "https://")) or not URL_CHARS.fullmatch(value) \
            or not host or parts.query or parts.fragment or len(value) > MAX_URL:
        raise BadInput("must be an http:// or https:// address with a host name, of the characters "
                       "a URL may hold (no spaces, quotes or angle brackets), at most {count} characters",
                       count=MAX_URL)
    return value.rstrip("/")


MODES = ("working", "debug")  # working: letters may be sent; debug: nothing is sent
MIN_SECRET = 32  # characters of security.secret; init writes 43 (32 random bytes, URL-safe)
NO_SECRET = (f"security.secret is missing or shorter than {MIN_SECRET} characters, so links cannot "
             "be signed: the subscriber pages, the links in letters and the sender refuse to work "
             "until it is set (`vykhukhol settings set security.secret --generate`, or "
             f"`secret = ` and at least {MIN_SECRET} random characters in settings.ini's [security])")


def _secret(value: str) -> str:
    """Empty (not set: everything that signs refuses), or long enough to sign links."""
    if value and (len(value) < MIN_SECRET or any(c.isspace() for c in value)):
        raise BadInput("must be at least {count} characters without spaces", count=MIN_SECRET)
    return value


def new_secret() -> str:
    """A fresh link-signing secret: 32 random bytes, 43 URL-safe characters."""
    import secrets

    return secrets.token_urlsafe(32)


MIN_HOOK_KEY = 32  # characters of hooks.key; init and `vykhukhol hooks --new-key` write 43


def _hook_key(value: str) -> str:
    """Empty (callbacks refused), or a long URL-safe key: it travels in a URL."""
    import re

    if value and not re.fullmatch(rf"[A-Za-z0-9_-]{{{MIN_HOOK_KEY},200}}", value):
        raise BadInput("must be at least {count} letters, digits, - or _", count=MIN_HOOK_KEY)
    return value


def _public_key(value: str) -> str:
    """Empty, or SendGrid's verification key as its console shows it: base64
    DER of an ECDSA P-256 public key (any other key could never verify, and
    every callback would fail on it)."""
    if value and p256_key(value) is None:
        raise BadInput("must be the verification key as the provider shows it (base64 "
                       "of an ECDSA P-256 public key)")
    return value


def p256_key(value: str):
    """The ECDSA P-256 public key in ``value`` (base64 DER, as SendGrid shows
    it), or None for anything else: another curve, another kind of key."""
    import base64
    import binascii

    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_der_public_key

    try:
        key = load_der_public_key(base64.b64decode(value, validate=True))
    except (UnsupportedAlgorithm, binascii.Error, ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        return None
    return key


def _timezone(value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInput("not a known IANA time zone (for example Europe/Moscow or UTC)") from None
    return value


def _networks(value: str) -> str:
    import ipaddress

    items = [item for item in value.replace(",", " ").split() if item]
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise BadInput("{item} is not an IP address or network", item=repr(item)) from None
    return " ".join(items)


def _text(limit: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if any(ch in value for ch in "\r\n\0"):
            raise BadInput("must be one line")
        if len(value) > limit:
            raise BadInput("must be at most {limit} characters", limit=limit)
        return value
    return check


def _mailbox_url(value: str) -> str:
    """Empty, or imaps://user:pass@host[:port]/FOLDER, pop3s://…, imap://…, pop3://… (docs/deliverability/bounces.md#bounces-come-back)."""
    if not value:
        return ""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018  # raises ValueError for a port out of range
    except ValueError:
        raise BadInput("the mailbox address has a bad host or port") from None
    if parts.scheme not in ("imaps", "pop3s", "imap", "pop3") or not host or not parts.username \
            or any(c.isspace() for c in value):
        raise BadInput("must be imaps://user:password@host[:port]/FOLDER or pop3s://user:password@host[:port]")
    return value


def _cafile(value: str) -> str:
    """Empty, or a file of PEM certificates that exists (checked when set, and when read)."""
    if not value:
        return ""
    from pathlib import Path

    if len(value) > 500 or not Path(value).is_absolute() or not Path(value).is_file():
        raise BadInput("must be the absolute path of a file of CA certificates (PEM)")
    return value


def _folder(value: str) -> str:
    """Empty (the default place), or the absolute path of a folder."""
    if not value:
        return ""
    from pathlib import Path

    if len(value) > 500 or not Path(value).is_absolute() or any(not c.isprintable() for c in value):
        raise BadInput("must be the absolute path of a folder, such as /home/you/public_html/lists/archive")
    return value


def _domain(value: str) -> str:
    if not value:
        return ""
    import re

    if not re.fullmatch(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}", value):
        raise BadInput("must be a domain name such as example.org")
    return value.lower()


def _selector(value: str) -> str:
    import re

    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", value):
        raise BadInput("must be letters a-z, digits and '-' (for example mail2026)")
    return value


def _resolver(value: str) -> str:
    """Empty (the system resolver), or host:port of a DNS server (the doctor asks it)."""
    if not value:
        return ""
    import ipaddress

    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        number = 0
    if not sep or not 1 <= number <= 65535:
        raise BadInput("must be the IP address and port of a DNS server, such as 127.0.0.1:53")
    return f"{host}:{number}"


def _ip(value: str) -> str:
    if not value:
        return ""
    import ipaddress

    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise BadInput("must be an IP address, such as 192.0.2.25") from None


def _host(value: str) -> str:
    if not value or any(c.isspace() or c in "/@" for c in value):
        raise BadInput("must be a host name or an IP address")
    return value


class Key:
    """One key of the table: where it lives, its default, its check and its help.

    Immutable, compared and hashed by its fields. A plain class, not a frozen
    dataclass: :mod:`dataclasses` imports :mod:`inspect`, a cost every CGI page
    would pay (docs/design/startup.md#startup)."""

    __slots__ = ("section", "name", "default", "check", "help", "secret", "web")
    section: str
    name: str
    default: str
    check: Callable[[str], Any]
    help: str
    secret: bool
    #: False for keys that name a program or a path on the host: changed only
    #: with the CLI or in settings.ini, never from the admin pages (docs/reference/security.md#security-owner).
    web: bool

    def __init__(self, section: str, name: str, default: str, check: Callable[[str], Any],
                 help: str, secret: bool = False, web: bool = True) -> None:
        for slot, value in zip(self.__slots__, (section, name, default, check, help, secret, web), strict=True):
            object.__setattr__(self, slot, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Key is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Key is immutable: cannot delete {name}")

    def _fields(self) -> tuple:
        return tuple(getattr(self, slot) for slot in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{slot}={getattr(self, slot)!r}" for slot in self.__slots__)
        return f"Key({shown})"

    @property
    def choices(self) -> tuple[str, ...]:
        """The allowed values when the key has a fixed set, else ()."""
        return getattr(self.check, "options", ())

    @property
    def full(self) -> str:
        return self.name if self.section == "main" else f"{self.section}.{self.name}"


KEYS: dict[str, Key] = {
    key.full: key
    for key in (
        Key("main", "mode", "debug", _choice(*MODES), "working (letters may be sent) or debug (no letter goes to subscribers)"),
        Key("main", "admin_email", "", _optional_mailbox, "where alerts and reports go (empty: log only)"),
        Key("main", "site_url", "http://127.0.0.1:8080", _url, "public base URL of the installation, for links in letters"),
        Key("main", "news_per_run", "50", _count(1, 100000), "newsletter letters one run may send"),
        Key("main", "serial_per_run", "50", _count(1, 100000), "series letters and reminders one run may send"),
        Key("main", "time_limit", "30s", _duration(5, 86400), "the hoster's execution time limit for one script"),
        Key("main", "reminder_period", "3d", _duration(60, 365 * 86400), "time between confirmation reminders"),
        Key("main", "reminder_count", "2", _count(0, 100), "reminders before an unconfirmed subscriber is deleted"),
        Key("main", "bounce_limit", "3", _count(1, 100), "soft bounces of different letters before a subscriber is deleted and suppressed"),
        Key("main", "bounce_reset", "30d", _duration(3600, 365 * 86400), "time without a soft bounce that sets the count back to 0"),
        Key("main", "timezone", "UTC", _timezone, "IANA zone for schedules and display"),
        Key("main", "language", "ru", _choice(*LANGUAGES), "ru or en for pages and reports"),
        Key("main", "complaint_brake", "0.1", _percent(0, 100), "per cent of a service's or newsletter's letters in 30 days that, in complaints (3 at least), brake it; 0 = no brake"),
        Key("main", "bounce_brake", "5", _percent(0, 100), "per cent of a service's or newsletter's letters in 30 days that, in addresses gone (10 at least), brake it; 0 = no brake"),
        Key("main", "hourly_limit", "0", _count(0, 10**9), "at most this many letters in any clock hour, 0 = no cap"),
        Key("main", "daily_limit", "0", _count(0, 10**9), "at most this many letters per day, 0 = no cap"),
        Key("main", "cron_allow", "", _networks, "IPs/CIDRs allowed to call the cron script (empty: anyone with the URL)"),
        Key("main", "trusted_proxies", "", _networks, "reverse proxies whose X-Forwarded-For names the client (empty: none)"),
        Key("main", "archive_dir", "", _folder, "where the public archive is written (empty: archive/ beside cgi/ in the checkout)", web=False),
        Key("main", "postal_address", "", _text(300), "the sender's postal address, in the footer of every list letter (empty: none)"),
        Key("main", "subscribe_hourly_limit", "10", _count(1, 10**6), "subscribe requests per client address and hour (each counts, letter or not)"),
        Key("main", "subscribe_address_daily_limit", "3", _count(1, 1000), "confirmation requests one address may be sent a day, whoever asks"),
        Key("main", "subscribe_alarm", "50", _count(0, 10**6), "sign-ups an hour, over all lists, past which confirmation requests are held for the admin and an alert goes (0 = never)"),
        Key("main", "subscribe_challenge", "off", _choice("off", "on"), "on: the public forms ask the browser to solve a proof-of-work puzzle"),
        Key("mail", "transport", "outbox", _choice("outbox", "smtp", "sendmail"), "how letters leave: outbox, smtp or sendmail"),
        Key("mail", "from_email", "", _optional_mailbox, "the default sender address"),
        Key("mail", "smtp_host", "127.0.0.1", _host, "SMTP server"),
        Key("mail", "smtp_port", "25", _count(1, 65535), "SMTP port"),
        Key("mail", "smtp_security", "none", _choice("none", "starttls", "ssl"), "none, starttls or ssl"),
        Key("mail", "smtp_user", "", _text(200), "SMTP login (empty: no login)"),
        Key("mail", "smtp_password", "", _text(200), "SMTP password", secret=True),
        Key("mail", "helo_name", "", _domain, "the name the SMTP greeting gives (empty: the host of site_url)"),
        Key("mail", "smtp_connections", "1", _count(1, 32), "SMTP connections a run may open at once (a relay: more)"),
        Key("mail", "sendmail_path", "/usr/sbin/sendmail", _program, "the sendmail program", web=False),
        Key("mail", "dev_redirect", "", _optional_mailbox, "send every letter to this one address instead (for trials)"),
        Key("mail", "verp_separator", "+", _choice("+", "-", "=", ""), "separator of the tagged bounce address (empty: no tag)"),
        Key("mail", "bounce_address", "", _optional_mailbox, "envelope sender for bounces (empty: the service's from_email)"),
        Key("mail", "bounce_mailbox", "", _mailbox_url, "mailbox the bounces are read from (imaps:// or pop3s://)", secret=True),
        Key("mail", "bounce_cafile", "", _cafile, "CA certificates that the bounce mailbox's TLS certificate is checked against (empty: the system's)", web=False),
        Key("mail", "dkim_domain", "", _domain, "domain that signs the letters (DKIM; empty: unsigned)"),
        Key("mail", "dkim_selector", "vykhukhol", _selector, "DKIM selector (the DNS name <selector>._domainkey.<domain>)"),
        Key("mail", "dkim_key_file", "", _text(500), "DKIM private key (empty: data/dkim/<domain>.<selector>.key)", web=False),
        Key("mail", "relay_ip", "", _ip, "the address your letters leave the relay from, for the SPF check (empty: not checked)"),
        Key("dns", "resolver", "", _resolver, "the DNS server the deliverability check asks, ip:port (empty: the system's)"),
        Key("security", "secret", "", _secret, "signs links; made at init", secret=True),
        Key("security", "admin_password", "", _text(500), "salted scrypt hash of the admin password", secret=True),
        Key("security", "admin_totp", "", _text(100), "the admin's two-factor (TOTP) secret, base32 (empty: one factor; `vykhukhol password --totp`)", secret=True),
        Key("security", "admin_recovery", "", _text(500), "hashes of the admin's unspent two-factor recovery codes", secret=True),
        Key("hooks", "key", "", _hook_key, "the key in the providers' callback URLs; made at init (`vykhukhol hooks --new-key`)", secret=True),
        Key("hooks", "generic_secret", "", _hook_key, "the generic callback's HMAC-SHA256 key (empty: /generic refused)", secret=True),
        Key("hooks", "mailgun_signing_key", "", _text(200), "Mailgun's HTTP webhook signing key (empty: Mailgun's callbacks refused)", secret=True),
        Key("hooks", "sendgrid_public_key", "", _public_key, "SendGrid's Signed Event Webhook verification key (empty: the key in the URL only)"),
        Key("hooks", "postmark_user", "", _text(200), "the basic-auth user set on Postmark's webhook (empty: Postmark's callbacks refused)"),
        Key("hooks", "postmark_password", "", _text(200), "the basic-auth password set on Postmark's webhook (empty: Postmark's callbacks refused)", secret=True),
    )
}


def key(name: str) -> Key:
    try:
        return KEYS[name]
    except KeyError:
        raise BadInput("unknown setting {name}; known: {known}", name=repr(name),
                       known=", ".join(KEYS)) from None


def check(name: str, value: str) -> Any:
    """The typed value of ``name`` = ``value``, or BadInput naming the key."""
    spec = key(name)
    if any(ch in value for ch in "\r\n\0\x0b\x0c\x85\u2028\u2029"):
        raise BadInput("{name}: {reason}", name=name, reason=BadInput("must be one line"))
    if spec.full == "security.secret":  # "" is the unset default, never a value to set
        return check_secret(value)
    try:
        return spec.check(value.strip())
    except BadInput as exc:
        raise BadInput("{name}: {reason}", name=name, reason=exc) from None


def check_on_host(name: str, value: str) -> None:
    """What :func:`check` cannot ask of a default written on another machine:
    a program being set by hand must be there and runnable now, not fail at
    the first letter."""
    spec = key(name)
    if spec.check is _program:
        problem = files.program_problem(value.strip())
        if problem:
            raise BadInput("{name}: {reason}", name=spec.full, reason=problem)


def check_secret(value: str) -> str:
    """A secret set by hand must be there and long enough to sign links (the
    stored one may be empty only by a hand edit, and then everything refuses)."""
    if not value.strip():
        raise BadInput("{name}: {reason}", name="security.secret", reason=BadInput(
            "must be at least {count} characters without spaces", count=MIN_SECRET))
    try:
        return _secret(value.strip())
    except BadInput as exc:
        raise BadInput("{name}: {reason}", name="security.secret", reason=exc) from None
