"""Where a webhook may be posted: an https address of a public host, unless
the owner allowed private addresses for that endpoint; plain http only to
this machine and only in debug mode (to try a receiver locally). The host is
resolved once per delivery and the connection goes to the address that was
checked, so a name cannot point elsewhere between the check and the post."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from vykhukhol.errors import BadInput

MAX_URL = 2000


class Target:
    """Where one delivery goes: scheme, host (for the Host header and TLS),
    port, path with query, and the checked address to connect to."""

    def __init__(self, scheme: str, host: str, port: int, path: str, address: str = "") -> None:
        self.scheme, self.host, self.port, self.path, self.address = scheme, host, port, path, address


def parse(url: str) -> Target:
    """A webhook URL's parts, or BadInput saying what is wrong with it."""
    if not url or len(url) > MAX_URL or any(c.isspace() or ord(c) < 32 for c in url):
        raise BadInput("the webhook URL must be one absolute https:// address without spaces")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadInput(f"the webhook URL is not valid: {exc}") from exc
    if parts.scheme not in ("https", "http"):
        raise BadInput("the webhook URL must start with https:// (http:// only to this machine, in debug mode)")
    if not parts.hostname:
        raise BadInput("the webhook URL names no host")
    if parts.username or parts.password:
        raise BadInput("the webhook URL must not carry a user name or password: the signature proves the sender")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path)


def check_url(url: str) -> Target:
    """What :func:`parse` checks, and that plain http names this machine."""
    target = parse(url)
    if target.scheme == "http" and not _loopback_name(target.host):
        raise BadInput("a webhook URL must be https://; http:// is allowed only to this machine "
                       "(127.0.0.1, ::1 or localhost), in debug mode")
    return target


def _loopback_name(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _private(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (address.is_private or address.is_loopback or address.is_link_local
            or address.is_multicast or address.is_reserved or address.is_unspecified)


def resolve(url: str, allow_private: bool, debug: bool) -> Target:
    """The target of a delivery, its host resolved and checked; BadInput
    with the reason when the delivery must not be made."""
    target = check_url(url)
    if target.scheme == "http" and not debug:
        raise BadInput("http:// webhooks are delivered only in debug mode; use https://")
    try:
        found = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise BadInput(f"the host {target.host} cannot be found: {exc}") from exc
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    if not addresses:
        raise BadInput(f"the host {target.host} has no address")
    if target.scheme == "http":
        if not all(a.is_loopback for a in addresses):
            raise BadInput(f"http:// webhooks go only to this machine; {target.host} is elsewhere")
    elif not allow_private and any(_private(a) for a in addresses):
        raise BadInput(f"{target.host} is a private, loopback or link-local address; "
                       "allow private addresses for this webhook if that is meant")
    target.address = str(addresses[0])
    return target
