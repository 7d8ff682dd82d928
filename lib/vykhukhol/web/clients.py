"""Who is asking, and how often: the client's address and per-client counters.

``client_address`` is the one answer to "who sent this request", used by the
login counter, the subscribe cap, ``cron_allow`` and the address stored with
a subscriber. It is the direct peer (``REMOTE_ADDR``), unless that peer is
one of the ``trusted_proxies``: then ``X-Forwarded-For`` is read from the
right, skipping trusted hops, and the first untrusted one is the client. Hops
left of it were written by the client itself and are never believed.

A :class:`Counter` counts tries per client in one small state file
(``data/state/logins``, ``data/state/subscribes``): the check and the count
are one step under the file's record lock, so N parallel tries never get more
than the limit through; entries expire with their window and the file keeps
at most ``MAX_ENTRIES`` of them, so nobody can grow it without bound. IPv6
clients are counted by their /64, which one household or server usually
holds whole.

It does not identify people: a shared address (a NAT, a proxy not listed as
trusted) is one client.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from vykhukhol import files
from vykhukhol.files import kv

MAX_ENTRIES = 2000  # per counter file: a few hundred KB at most, read in a few ms


def client_address(environ: dict, trusted_proxies: str) -> str:
    """The client's address as far as we can trust it (see the module's docstring)."""
    peer = environ.get("REMOTE_ADDR", "") or ""
    if not trusted_proxies.strip():
        return peer
    import ipaddress

    networks = _networks(trusted_proxies)
    if not _trusted(peer, networks):
        return peer
    hops = [hop.strip() for hop in environ.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for hop in reversed(hops):
        try:
            ip = ipaddress.ip_address(hop)
        except ValueError:
            break  # not an address: believe nothing further left; the last proxy is the client
        if not _trusted(hop, networks):
            return str(ip)
        peer = str(ip)
    return peer


def forwarded_https(environ: dict, trusted_proxies: str) -> bool:
    """Whether a trusted proxy says the client reached it over https
    (``X-Forwarded-Proto: https``). From anyone else the header means nothing:
    a client could make a plain-http request look secure. The proxy nearest
    to us writes last, so the right-most value counts."""
    said = environ.get("HTTP_X_FORWARDED_PROTO", "")
    if not said or not trusted_proxies.strip():
        return False
    if not _trusted(environ.get("REMOTE_ADDR", "") or "", _networks(trusted_proxies)):
        return False
    return said.rsplit(",", 1)[-1].strip().lower() == "https"


def _networks(trusted_proxies: str) -> list:
    import ipaddress

    networks = []
    for item in trusted_proxies.replace(",", " ").split():
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            continue  # settings refuse a bad value; a hand edit must not open anything
    return networks


def _trusted(address: str, networks: list) -> bool:
    """Whether ``address`` is one of the trusted proxies."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return any(ip in net for net in networks)


def client_key(address: str) -> str:
    """What a client is counted by: its IPv4 address, or the /64 of an IPv6 one."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return "?" + "".join(ch for ch in address if ch.isprintable() and not ch.isspace())[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class Counter:
    """At most ``limit`` tries per key in ``window`` seconds from the key's first try.

    A plain class, not a dataclass: a subscribe post counts its try before
    its answer, and dataclasses (with inspect, ast and dis) would cost that
    answer a few milliseconds (docs/design/startup.md#startup-rules).

    ``synced=False``: the file is rewritten without fsyncs, for a count whose
    last tries a power cut may take back without harm (a subscribe post's
    caps: at worst a few more posts are let through after the machine comes
    back); the login lockout keeps every try."""

    __slots__ = ("path", "window", "synced")

    def __init__(self, path: Path, window: float, synced: bool = True) -> None:
        self.path = path
        self.window = window  # seconds
        self.synced = synced

    def __repr__(self) -> str:
        return f"Counter(path={self.path!r}, window={self.window!r}, synced={self.synced!r})"

    def take(self, key: str, limit: int, count: bool = True,
             clock: Callable[[], float] = time.time) -> float:
        """Check and count one try of ``key`` as one step. Returns 0 when the try
        may go ahead (and counts it, unless ``count`` is false), else the seconds
        until the key may try again (nothing counted). The file is rewritten
        either way, so a caller's answer time does not tell the two apart."""
        now = clock()
        wait = 0.0

        def change(values: dict[str, str]) -> None:
            nonlocal wait
            tries, start = _entry(values.get(key))
            if tries and now - start >= self.window:
                tries = 0
            if tries >= limit:
                wait = max(1.0, start + self.window - now)
            elif count:
                values.pop(key, None)  # re-inserted last: the newest survive a cap
                values[key] = f"{tries + 1} {start if tries else now:.0f}"
            self._prune(values, now)

        self.path.parent.mkdir(parents=True, exist_ok=True)
        kv.change_kv(self.path, change, self.synced)
        return wait

    def forget(self, key: str) -> None:
        """The key's tries are over (the right password came)."""
        with files.record_lock(self.path):
            if key in kv.read_kv(self.path):
                kv.change_kv(self.path, lambda values: values.pop(key, None))

    def _prune(self, values: dict[str, str], now: float) -> None:
        for key in [k for k, v in values.items() if now - _entry(v)[1] >= self.window]:
            del values[key]
        if len(values) > MAX_ENTRIES:
            # Keep the newest; among them nothing is lost that matters for long.
            for key in list(values)[:len(values) - MAX_ENTRIES]:
                del values[key]


def _entry(value: str | None) -> tuple[int, float]:
    """(tries, start of the window) of a stored ``"<tries> <start>"``."""
    tries, _, start = (value or "").partition(" ")
    try:
        return (int(tries), float(start)) if tries.isdigit() else (0, 0.0)
    except ValueError:
        return 0, 0.0
