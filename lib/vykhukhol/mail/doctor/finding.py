"""What a doctor's check answers: a :class:`Verdict` (its label in both
languages) and a :class:`Finding`. Apart from the checks so that they and
the package's face both import it without a circle."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from vykhukhol.i18n import tr


class Verdict(str, Enum):
    OK = "ok"
    WARNING = "warning"
    WRONG = "wrong"
    UNKNOWN = "unknown"

    def label(self, lang: str = "en") -> str:
        return {Verdict.OK: tr(lang, "ok"), Verdict.WARNING: tr(lang, "warning"),
                Verdict.WRONG: tr(lang, "wrong"), Verdict.UNKNOWN: tr(lang, "unknown")}[self]


class Finding(NamedTuple):
    """One check's answer: which check, of what (a domain, a setting), the
    verdict, what was found and, unless all is well, the fix."""

    check: str
    subject: str
    verdict: Verdict
    found: str
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return {"check": self.check, "subject": self.subject, "verdict": self.verdict.value,
                "found": self.found, "fix": self.fix}
