"""The settings (docs/reference/settings.md) as one site has them: :class:`Settings`, read from
and written to its file; the schema (every key, its default, how it is
checked) is :mod:`.keys`.

``data/settings.ini`` holds sections ``[main]``, ``[mail]``, ``[dns]``, ``[security]`` and ``[hooks]``.
Keys are addressed as ``news_per_run`` (``[main]``) or ``mail.smtp_port``.
Each value is validated on every way in (admin page, CLI); an unreadable value
already in the file falls back to its default and is reported, so a typo made
by FTP never stops the sender.
"""

from __future__ import annotations

from vykhukhol import files
from vykhukhol.errors import BadInput
from vykhukhol.files.ini import read_sections
from vykhukhol.settings.keys import (  # noqa: F401 - the schema's names, as callers know them
    KEYS,
    MIN_HOOK_KEY,
    MIN_SECRET,
    MODES,
    NO_SECRET,
    Key,
    check,
    check_on_host,
    check_secret,
    key,
    new_secret,
)
from vykhukhol.settings.values import Settings

# Every CGI page loads this module: typing, dataclasses (with inspect), pathlib,
# secrets (with hashlib and random) and ipaddress are not imported for it
# (docs/design/startup.md#startup-boundary).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def load(path: Path) -> Settings:
    problems: list[BadInput] = []
    # configparser's reading, without importing it for a file of the plain part (files.ini)
    sections, problem = read_sections(files.read_text(path, "") or "")
    if problem is not None:
        problems.append(BadInput("settings.ini cannot be read ({reason}); defaults are used",
                                 reason=problem))
        sections = {}
    raw = {}
    for name, spec in KEYS.items():
        if spec.name in sections.get(spec.section, {}):
            raw[name] = sections[spec.section][spec.name]
    return Settings(raw, problems)


def _write(path: Path, raw: dict[str, str]) -> None:
    lines = ["# Vykhukhol settings. Edit with the admin page or `vykhukhol settings set`.\n"]
    for section in ("main", "mail", "dns", "security", "hooks"):
        lines.append(f"\n[{section}]\n")
        for name, spec in KEYS.items():
            if spec.section == section and name in raw:
                lines.append(f"{spec.name} = {raw[name]}\n")
    # settings.ini holds the secret and passwords: only its owner reads it.
    files.atomic_write(path, lines, new_mode=0o600)


def update(path: Path, changes: dict[str, str],
           verify: Callable[[Path, Settings, Settings], None] | None = None) -> Settings:
    """Validate every change first, then write them all at once (or nothing).

    ``verify(data_root, before, after)``, when given, may refuse the whole
    result (raise :class:`BadInput`) under the lock, before anything is
    written: :func:`vykhukhol.mail.dkim.verify_settings` refuses a DKIM key
    that does not work. It is passed in rather than imported, so the settings
    know nothing of mail."""
    checked = {}
    for name, value in changes.items():
        check(name, value)
        checked[key(name).full] = value.strip()
    with files.record_lock(path):
        before = load(path)
        current = dict(before.raw)
        current.update(checked)
        if verify is not None:
            from pathlib import Path  # only a writer pays for it

            verify(Path(path).parent, before, Settings(current))
        _write(path, current)
    return load(path)


def initial(admin_email: str = "", site_url: str = "") -> dict[str, str]:
    """The values ``vykhukhol init`` writes: every default, plus a fresh secret."""
    raw = {name: spec.default for name, spec in KEYS.items()}
    raw["security.secret"] = new_secret()
    raw["hooks.key"] = new_secret()
    if admin_email:
        raw["admin_email"] = admin_email
    if site_url:
        raw["site_url"] = site_url
    for name, value in raw.items():
        if value:
            check(name, value)
    return raw


def write_initial(path: Path, raw: dict[str, str]) -> None:
    _write(path, raw)
