"""The webhook endpoints an owner named, in ``data/webhooks/endpoints.ini``:
a section per endpoint with its URL, the events it wants, its secret and
whether it may be posted to a private address. A person may read and fix the
file by FTP; a line that makes no sense is a clear error naming it."""

from __future__ import annotations

import configparser
from dataclasses import dataclass, field
from pathlib import Path

import vykhukhol.webhooks.guards as guards
import vykhukhol.webhooks.signing as signing
from vykhukhol import files
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files import events

ALL = "*"
MAX_ENDPOINTS = 20


@dataclass
class Endpoint:
    name: str
    url: str
    events: frozenset[str] = field(default_factory=lambda: frozenset({ALL}))
    secret: str = ""
    allow_private: bool = False
    enabled: bool = True

    def wants(self, kind: str) -> bool:
        return ALL in self.events or kind in self.events

    def events_text(self) -> str:
        return ",".join(sorted(self.events))


def path_of(data: DataDir) -> Path:
    return data.webhooks / events.ENDPOINTS


def parse_events(text: str) -> frozenset[str]:
    """``*`` or a comma-separated list of event types, each one we know."""
    words = {w.strip() for w in text.split(",") if w.strip()}
    if not words:
        raise BadInput(f"name the events: {ALL} or some of {', '.join(events.TYPES)}")
    unknown = sorted(words - set(events.TYPES) - {ALL})
    if unknown:
        raise BadInput(f"no event {unknown[0]!r}; the events are {', '.join(events.TYPES)}")
    return frozenset({ALL}) if ALL in words else frozenset(words)


def load(data: DataDir) -> list[Endpoint]:
    """Every endpoint, in the file's order; BadInput naming a damaged one."""
    path = path_of(data)
    if not path.exists():
        return []
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(files.read_text(path, "") or "")
    except configparser.Error as exc:
        raise BadInput(f"{events.ENDPOINTS} cannot be read: {exc}") from exc
    found = []
    for name in parser.sections():
        section = parser[name]
        check_name(name, "webhook name")
        where = f"{events.ENDPOINTS} [{name}]"
        url = section.get("url", "").strip()
        try:
            guards.check_url(url)
            kinds = parse_events(section.get("events", ALL))
            secret = section.get("secret", "").strip()
            signing.key_of(secret)
            if not secret.startswith(signing.PREFIX):
                raise ValueError
        except BadInput as exc:
            raise BadInput(f"{where}: {exc.message}") from exc
        except ValueError as exc:
            raise BadInput(f"{where}: the secret must be whsec_ and base64") from exc
        found.append(Endpoint(name, url, kinds, secret, _yes(section, "allow_private", False, where),
                              _yes(section, "enabled", True, where)))
    return found


def _yes(section: configparser.SectionProxy, key: str, default: bool, where: str) -> bool:
    try:
        return section.getboolean(key, default)
    except ValueError as exc:
        raise BadInput(f"{where}: {key} must be yes or no") from exc


def save(data: DataDir, endpoints: list[Endpoint]) -> None:
    lines = ["# Webhook endpoints: see the manual, docs/using/webhooks.md\n"]
    for e in endpoints:
        lines += [f"\n[{e.name}]\n", f"url = {e.url}\n", f"events = {e.events_text()}\n",
                  f"secret = {e.secret}\n", f"allow_private = {'yes' if e.allow_private else 'no'}\n",
                  f"enabled = {'yes' if e.enabled else 'no'}\n"]
    files.make_folder(data.webhooks)
    files.atomic_write(path_of(data), lines)


def add(data: DataDir, name: str, url: str, kinds: str = ALL, allow_private: bool = False) -> Endpoint:
    """A new endpoint with a new secret (returned: it is shown once)."""
    check_name(name, "webhook name")
    guards.check_url(url)
    endpoint = Endpoint(name, url, parse_events(kinds), signing.new_secret(), allow_private)
    files.make_folder(data.webhooks)
    with files.record_lock(path_of(data)):
        present = load(data)
        if any(e.name == name for e in present):
            raise BadInput(f"there is a webhook named {name!r} already")
        if len(present) >= MAX_ENDPOINTS:
            raise BadInput(f"at most {MAX_ENDPOINTS} webhooks")
        save(data, [*present, endpoint])
    return endpoint


def change(data: DataDir, name: str, **values: object) -> Endpoint:
    """One endpoint's fields changed (``enabled``, ``events``...)."""
    with files.record_lock(path_of(data)):
        present = load(data)
        for e in present:
            if e.name == name:
                for key, value in values.items():
                    setattr(e, key, value)
                save(data, present)
                return e
    raise NotFound(f"no webhook named {name!r}")


def remove(data: DataDir, name: str) -> None:
    """The endpoint and its progress, retries and deliveries."""
    with files.record_lock(path_of(data)):
        present = load(data)
        if not any(e.name == name for e in present):
            raise NotFound(f"no webhook named {name!r}")
        rest = [e for e in present if e.name != name]
        if rest:
            save(data, rest)
        else:
            files.remove(path_of(data))
    for suffix in ("state", "retry", "log"):
        files.remove(data.webhooks / f"{name}.{suffix}")
