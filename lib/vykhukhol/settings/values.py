"""The settings as one site has them: :class:`Settings`, typed access by
key to what ``settings.ini`` holds, each value checked the first time it is
asked for. Reading and writing the file is the package's face.
"""

from __future__ import annotations

from vykhukhol import files
from vykhukhol.errors import BadInput, NoSecret
from vykhukhol.settings.keys import KEYS, NO_SECRET, key

# Every CGI page loads this module: typing, dataclasses (with inspect), pathlib,
# secrets (with hashlib and random) and ipaddress are not imported for it
# (docs/design/startup.md#startup-boundary).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Settings:
    """The settings as read from one ``settings.ini``: typed access by key.

    Each value is checked the first time it is asked for (``problems`` checks
    them all), so a CGI process pays only for the keys it uses: checking
    ``admin_email`` imports email-validator, which an idle cron run never needs.
    """

    def __init__(self, raw: dict[str, str], problems: list[BadInput] | None = None) -> None:
        self.raw = raw
        self._read_problems = problems or []
        self._typed: dict[str, Any] = {}
        self._asked: dict[str, Any] = {}
        self._secret: bytes | None = None
        self._bad: dict[str, BadInput] = {}

    def _value(self, name: str) -> Any:
        if name not in self._typed:
            spec = KEYS[name]
            try:
                self._typed[name] = spec.check(self.raw.get(name, spec.default).strip())
            except BadInput as exc:
                self._bad[name] = BadInput("{name}: {reason}; the default {default} is used",
                                           name=name, reason=exc, default=repr(spec.default))
                self._typed[name] = spec.check(spec.default)
        return self._typed[name]

    @property
    def problems(self) -> list[BadInput | str]:
        """What cannot be read (the file, then bad values in key order), each once;
        a missing or short secret is said by :data:`NO_SECRET`, without its value.
        Each is an error (``str()``: English; ``.text(lang)`` for a page) but that one."""
        for name in KEYS:
            self._value(name)
        found = [self._bad[name] for name in KEYS if name in self._bad and name != "security.secret"]
        if self["mail.transport"] == "sendmail":
            problem = files.program_problem(self["mail.sendmail_path"])
            if problem:
                found.append(BadInput("{name}: {reason}; no letter can be sent",
                                      name="mail.sendmail_path", reason=problem))
        return self._read_problems + found + ([NO_SECRET] if self.secret_problem else [])

    def __getitem__(self, name: str) -> Any:
        # By the name as asked (``news_per_run`` or ``main.news_per_run``):
        # a letter asks about twenty of them, a run asks for every letter.
        try:
            return self._asked[name]
        except KeyError:
            value = self._asked[name] = self._value(key(name).full)
            return value

    @property
    def secret_problem(self) -> str | None:
        """Why nothing can be signed (no secret, a short one, an unreadable
        settings.ini), or None."""
        return None if self["security.secret"] else NO_SECRET

    @property
    def secret(self) -> bytes:
        """The link-signing key. Raises :class:`NoSecret` rather than sign with an
        empty or short one (docs/reference/security.md#security-secrets: fail closed)."""
        if self._secret is None:
            if self.secret_problem:
                raise NoSecret(NO_SECRET)
            self._secret = self["security.secret"].encode()
        return self._secret
