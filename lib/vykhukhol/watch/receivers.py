"""Letters per day to the big mailbox providers (``data/state/receivers``):
the tally that tells the owner, before it happens, that the site is about
to become a "bulk sender" to Gmail (5,000 letters a day to personal Gmail
addresses, once, and the rules apply for good).

Each letter handed over is counted in the run's report by :func:`group_of`
(a dictionary look-up on the domain: the run's hot path), and the run's
tally is added to the file once, at its end, by :func:`note_run` (one
record-locked rewrite, through :mod:`vykhukhol.files.kv`). :data:`KEEP_DAYS`
days are kept. The same module reads it for the Deliverability page and
the status warning (:func:`recent`, :func:`busiest_gmail_day`).

Deliberately not here: Google Workspace or Microsoft 365 domains of
companies (their MX, not their name, says who receives; the bulk line
counts personal Gmail).
"""

from __future__ import annotations

from vykhukhol.files import kv
from vykhukhol.i18n import tr

GROUPS = ("gmail", "yahoo", "microsoft", "mailru", "yandex")
_TITLES = {"gmail": "Gmail", "yahoo": "Yahoo", "microsoft": "Outlook / Hotmail / Live",
           "mailru": "Mail.ru", "yandex": "Yandex"}
_EXACT = {"gmail.com": "gmail", "googlemail.com": "gmail", "ymail.com": "yahoo",
          "rocketmail.com": "yahoo", "msn.com": "microsoft", "mail.ru": "mailru",
          "inbox.ru": "mailru", "list.ru": "mailru", "bk.ru": "mailru", "internet.ru": "mailru",
          "ya.ru": "yandex"}
# yahoo.co.uk, hotmail.fr, outlook.de, live.com, yandex.kz: the first label says who.
_FIRST_LABEL = {"yahoo": "yahoo", "outlook": "microsoft", "hotmail": "microsoft",
                "live": "microsoft", "yandex": "yandex"}
BULK_LINE = 5000  # letters a day to personal Gmail that make a bulk sender (Google, 2024)
WARN_AT = 4000    # the status warns from here, before the line is crossed
KEEP_DAYS = 14
FILE = "receivers"


def group_of(email: str) -> str | None:
    """Which big provider receives ``email``; None for any other domain."""
    domain = email.rpartition("@")[2].lower()
    found = _EXACT.get(domain)
    if found is None and "." in domain:
        found = _FIRST_LABEL.get(domain.partition(".")[0])
    return found


def title(group: str, lang: str = "en") -> str:
    names = {"gmail": tr(lang, "Gmail"), "yahoo": tr(lang, "Yahoo"),
             "microsoft": tr(lang, "Outlook / Hotmail / Live"), "mailru": tr(lang, "Mail.ru"),
             "yandex": tr(lang, "Yandex")}
    return names.get(group, _TITLES.get(group, group))


def note_run(state_dir, day: str, counts: dict[str, int]) -> None:
    """Add one run's ``counts`` (group -> letters) to ``day`` (YYYY-MM-DD,
    the site's time zone); raises VykhukholError when the file cannot be written."""
    counts = {group: n for group, n in counts.items() if n}
    if not counts:
        return

    def change(values: dict[str, str]) -> None:
        for group, n in counts.items():
            key = f"{day} {group}"
            values[key] = str(_number(values.get(key)) + n)
        keep = sorted({key.partition(" ")[0] for key in values})[-KEEP_DAYS:]
        for key in [key for key in values if key.partition(" ")[0] not in keep]:
            del values[key]
    kv.change_kv(state_dir / FILE, change)


def _number(text: str | None) -> int:
    try:
        return max(0, int(text or 0))
    except ValueError:  # a hand-edited line: counted from nothing
        return 0


def recent(data, days: int = 7) -> list[tuple[str, dict[str, int]]]:
    """(day, {group: letters}) of the last ``days`` days with letters, newest first."""
    by_day: dict[str, dict[str, int]] = {}
    for key, value in kv.read_kv(data.state / FILE).items():
        day, _, group = key.partition(" ")
        if group in GROUPS:
            by_day.setdefault(day, {})[group] = _number(value)
    return sorted(by_day.items(), reverse=True)[:days]


def busiest_gmail_day(data, days: int = 7) -> tuple[str, int] | None:
    """The day of the last ``days`` with the most letters to Gmail, if it reached :data:`WARN_AT`."""
    best = max(((day, counts.get("gmail", 0)) for day, counts in recent(data, days)),
               key=lambda pair: pair[1], default=None)
    return best if best is not None and best[1] >= WARN_AT else None
