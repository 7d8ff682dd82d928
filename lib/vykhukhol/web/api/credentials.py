"""API tokens (docs/using/api.md#api-tokens): each has a name, scopes, an
optional IP allow-list, an optional expiry and a rate; the token itself is
shown once and kept only as its SHA-256.

``data/api/tokens.txt``, tab-separated, a header first::

    id  name  scopes  sha256  created  last_used  ips  expires  rate

A token reads ``vyk_<id>_<secret>``: the id finds the line, the secret's
hash is compared in constant time. Each token's calls in the current minute
are counted in ``data/api/<id>.rate``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import time
from dataclasses import dataclass, replace

from vykhukhol import files
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files import kv


def _(text: str) -> str:
    """Marks a text for the catalog (tools/i18n.py extract); the admin translates it."""
    return text


SCOPES = {
    "read": _("read services, subscribers, newsletters, the suppression list and the figures"),
    "subscribe": _("add subscribers (double opt-in: they get the confirmation request)"),
    "manage": _("change, unsubscribe and erase subscribers; add to the suppression list"),
    "send": _("create, schedule and cancel newsletters"),
}
HEADER = "id\tname\tscopes\tsha256\tcreated\tlast_used\tips\texpires\trate"
RATE = 60          # calls per minute, the default
TOUCH_EVERY = 60   # seconds between two writes of a token's last use
MAX_TOKENS = 50


@dataclass(frozen=True)
class Token:
    id: str
    name: str
    scopes: frozenset[str]
    sha256: str
    created: int
    last_used: int = 0
    ips: tuple[str, ...] = ()
    expires: int = 0
    rate: int = RATE

    def line(self) -> str:
        return "\t".join((self.id, self.name, ",".join(sorted(self.scopes)), self.sha256,
                          str(self.created), str(self.last_used), ",".join(self.ips) or "-",
                          str(self.expires), str(self.rate)))

    def allows(self, address: str) -> bool:
        """Whether a call from ``address`` may use this token."""
        if not self.ips:
            return True
        try:
            peer = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(peer in ipaddress.ip_network(net, strict=False) for net in self.ips)


def _path(data: DataDir):
    return data.api / "tokens.txt"


def load(data: DataDir) -> list[Token]:
    found = []
    for line in files.read_lines(_path(data)):
        fields = line.split("\t")
        if line == HEADER or len(fields) != 9 or not all(f.isdigit() for f in (*fields[4:6], *fields[7:])):
            continue
        found.append(Token(fields[0], fields[1], frozenset(fields[2].split(",")), fields[3],
                           int(fields[4]), int(fields[5]),
                           tuple(ip for ip in fields[6].split(",") if ip and ip != "-"),
                           int(fields[7]), int(fields[8])))
    return found


def _save(data: DataDir, tokens: list[Token]) -> None:
    files.make_folder(data.api)
    files.atomic_write(_path(data), [HEADER + "\n"] + [t.line() + "\n" for t in tokens])


def parse_scopes(text: str) -> frozenset[str]:
    words = {w.strip() for w in text.split(",") if w.strip()}
    unknown = sorted(words - set(SCOPES))
    if not words or unknown:
        raise BadInput(f"name the scopes, some of {', '.join(SCOPES)}")
    return frozenset(words)


def parse_ips(text: str) -> tuple[str, ...]:
    nets = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        try:
            nets.append(str(ipaddress.ip_network(word, strict=False)))
        except ValueError as exc:
            raise BadInput(f"not an address or network: {word[:60]!r}") from exc
    return tuple(nets)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def add(data: DataDir, name: str, scopes: str, ips: str = "", expires_in: float = 0,
        rate: int = RATE, now: float | None = None) -> tuple[Token, str]:
    """A new token: its record and the token itself (shown once)."""
    check_name(name, "token name")
    kinds, nets = parse_scopes(scopes), parse_ips(ips)
    if not 1 <= rate <= 100000:
        raise BadInput("the rate must be 1 to 100000 calls a minute")
    moment = int(time.time() if now is None else now)
    secret = base64.urlsafe_b64encode(os.urandom(30)).decode("ascii")
    token = Token(os.urandom(6).hex(), name, kinds, _hash(secret), moment, 0, nets,
                  moment + int(expires_in) if expires_in else 0, rate)
    files.make_folder(data.api)
    with files.record_lock(_path(data)):
        present = load(data)
        if any(t.name == name for t in present):
            raise BadInput(f"there is a token named {name!r} already")
        if len(present) >= MAX_TOKENS:
            raise BadInput(f"at most {MAX_TOKENS} tokens")
        _save(data, [*present, token])
    return token, f"vyk_{token.id}_{secret}"


def revoke(data: DataDir, name: str) -> None:
    with files.record_lock(_path(data)):
        present = load(data)
        gone = [t for t in present if t.name == name]
        if not gone:
            raise NotFound(f"no token named {name!r}")
        _save(data, [t for t in present if t.name != name])
    files.remove(data.api / f"{gone[0].id}.rate")


_NOBODY = "0" * 64


def find(data: DataDir, given: str, now: float | None = None) -> Token | None:
    """The token ``given`` stands for, when it is one, not revoked nor expired."""
    prefix, _, rest = given.partition("_")
    token_id, _, secret = rest.partition("_")
    match = next((t for t in load(data) if t.id == token_id), None) if prefix == "vyk" else None
    same = hmac.compare_digest(_hash(secret), match.sha256 if match else _NOBODY)
    if match is None or not same:
        return None
    if match.expires and (time.time() if now is None else now) >= match.expires:
        return None
    return match


def touch(data: DataDir, token: Token, now: float) -> None:
    """Note the token's last use (at most once a :data:`TOUCH_EVERY`)."""
    if now - token.last_used < TOUCH_EVERY:
        return
    with files.record_lock(_path(data)):
        present = load(data)
        _save(data, [replace(t, last_used=int(now)) if t.id == token.id else t for t in present])


def over_rate(data: DataDir, token: Token, now: float) -> int:
    """0 when this call may go on, else the seconds until the next minute."""
    minute = int(now // 60)
    counted: list[int] = []

    def count(values: dict[str, str]) -> None:
        calls = int(values.get("calls", "0")) if values.get("minute") == str(minute) else 0
        counted.append(calls + 1)
        values.update(minute=str(minute), calls=str(calls + 1))

    kv.change_kv(data.api / f"{token.id}.rate", count)
    return 0 if counted[0] <= token.rate else 60 - int(now) % 60
