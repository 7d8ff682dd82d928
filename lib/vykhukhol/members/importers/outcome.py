"""What an import from another tool does with a :class:`~.Reading`, or would
do (``--dry-run``): the counts by standing and reason, the refused lines, and
after a real run what the files say happened.

The order is the safety: the suppressed are appended to the suppression list
first, so a person the file says left can never be subscribed by the same
import (the final write skips every suppressed address); a person who is in
the file twice counts once, and a "left" anywhere wins over a "subscribed".
A kill between the two writes leaves the suppression done and the
subscribers not yet added: running the import again finishes it (both writes
skip what is there already).
"""

from __future__ import annotations

from typing import NamedTuple

from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.i18n import ntr, tr
from vykhukhol.members import importing, suppression
from vykhukhol.members.fieldmap import Columns
from vykhukhol.members.importers.verdicts import Person, Reading, RefusedLine, Standing
from vykhukhol.members.importing import END, SeriesStart
from vykhukhol.members.suppression import Why
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import Settings
from vykhukhol.timeutil import now


class Outcome(NamedTuple):
    tool: str
    dry_run: bool
    standing: dict[Standing, int]      # people of the file by where they end up
    reasons: dict[str, int]            # the suppressed by reason (a suppression.Why value)
    refused: list[RefusedLine]
    twice: int                         # records of an address met earlier in the file
    added: int                         # subscribers new to the service (would be, in a dry run)
    already: int                       # subscribed to it already: left as they are
    skipped: int                       # on the suppression list already: not subscribed
    suppressed: int                    # new entries of the suppression list
    readers: int = 0                   # the confirmed among the added: whom --series concerns
    letters: int = 0                   # the service's series, in letters
    series: SeriesStart = END          # where the readers join it
    left_here: tuple[str, ...] = ()    # subscribed here, left in the other tool: suppressed now
    columns: Columns | None = None     # what filled the site's fields


def _one_each(people: list[Person]) -> tuple[list[Person], int]:
    """One person an address; a SUPPRESSED record wins over any other."""
    found: dict[str, Person] = {}
    for p in people:
        key = p.email.lower()
        if key not in found or (p.standing is Standing.SUPPRESSED
                                and found[key].standing is not Standing.SUPPRESSED):
            found[key] = p
    return list(found.values()), len(people) - len(found)


def apply(data: DataDir, settings: Settings, service_name: str, reading: Reading,
          dry_run: bool = False, series: SeriesStart = END) -> Outcome:
    """Write the reading into ``service_name`` (and the suppression list), or
    with ``dry_run`` only count what that would do; the confirmed join the
    series where ``series`` says (after it, by default: a move-in mails no
    welcome to long-time readers). Nothing is written before the service
    and the choice are known good."""
    service = svc.find_service(data, service_name)
    letters = svc.letter_count(service)
    series.check(service.name, letters)
    people, twice = _one_each(reading.people)
    standing = {s: sum(1 for p in people if p.standing is s) for s in Standing}
    gone = [p for p in people if p.standing is Standing.SUPPRESSED]
    reasons: dict[str, int] = {}
    for why in (p.why for p in gone if p.why is not None):
        reasons[why.value] = reasons.get(why.value, 0) + 1
    joining = [p for p in people if p.standing is not Standing.SUPPRESSED]
    secret = suppression.secret_of(settings)
    known = {item.key for item in subs.read(service.subscribers_path)
             if isinstance(item, Subscriber)}
    # Their line here stays (with its history); the suppression list keeps every
    # letter from them, and the result and the Subscribers page say so.
    left_here = tuple(sorted(p.email for p in gone if p.email.lower() in known))
    if dry_run:
        checker = suppression.Checker(data, secret)
        new_gone = sum(1 for p in gone if p.email not in checker)
        free = [p for p in joining if p.email not in checker]  # no address is in both lists
        blocked = len(joining) - len(free)
        already = sum(1 for p in free if p.email.lower() in known)
        readers = sum(1 for p in free if p.email.lower() not in known
                      and p.standing is Standing.CONFIRMED)
        return Outcome(reading.tool, True, standing, reasons, reading.refused, twice,
                       len(free) - already, already, blocked, new_gone, readers, letters, series,
                       left_here, reading.columns)
    moment, source = now(), f"import {reading.tool}"
    # Dated when the other tool saw them leave, where its file says (never later than now).
    times = {p.email.lower(): min(p.left, moment) for p in gone if p.left is not None}
    new_gone = 0
    for why in sorted({p.why for p in gone if p.why is not None}, key=lambda w: w.value):
        new_gone += suppression.add_many(data, secret, [p.email for p in gone if p.why is why],
                                         why, source, moment, times)
    result = importing.add_people(data, settings, service.name, [
        importing.Newcomer(p.email, p.name, p.standing is Standing.CONFIRMED, p.subscribed,
                           p.confirmed, p.ip, p.fields, p.language) for p in joining], series)
    return Outcome(reading.tool, False, standing, reasons, reading.refused, twice,
                   result["added"], result["duplicates"], result["suppressed"], new_gone,
                   result["readers"], letters, series, left_here, reading.columns)


def by_state(reading: Reading, outcome: Outcome, lang: str = "en") -> list[str]:
    """The file's addresses under their state (``--show``): a line per state that
    has any, then its addresses one a line, indented; those who left in the other
    tool while subscribed here under a state of their own as well."""
    people, _ = _one_each(reading.people)
    lines = []
    for standing in Standing:
        found = sorted(p.email for p in people if p.standing is standing)
        if found:
            lines.append(f"{standing.label(lang)} ({len(found)}):")
            lines.extend(f"  {email}" for email in found)
    if outcome.left_here:
        lines.append(f"{left_here_label(lang)} ({len(outcome.left_here)}):")
        lines.extend(f"  {email}" for email in outcome.left_here)
    return lines


def left_here_label(lang: str) -> str:
    return tr(lang, "subscribed here, left in the other tool")


SHOWN_LETTERS = 4  # "letter N" choices a dry run spells out (and the chosen one)
SHOWN_LEFT = 10    # addresses of those who left elsewhere that the summary names


def _series_word(series: SeriesStart, lang: str, option: bool) -> str:
    """The choice as the CLI's option spells it, or as the page's form says it."""
    from vykhukhol.i18n import tr

    if option:
        return f"--series {series.word}"
    if series.first == 0:
        return tr(lang, "after the series")
    return tr(lang, "from the start") if series.first == 1 else tr(
        lang, "from letter {number}", number=series.first)


def _series_lines(outcome: Outcome, lang: str, option: bool) -> list[str]:
    """What the series sends the confirmed readers an import adds: every
    choice in a dry run, the one taken after the real run."""
    from vykhukhol.i18n import ntr, tr

    readers, count = outcome.readers, outcome.letters
    if not readers or not count:
        return []

    def sends(series: SeriesStart, will: bool) -> str:
        each = series.letters(count)
        if not each:
            return tr(lang, "none of its letters (one added to it later reaches them)")
        who = (ntr(lang, "{n} subscriber will get", "{n} subscribers will get", readers) if will
               else ntr(lang, "{n} subscriber would get", "{n} subscribers would get", readers))
        return tr(lang, "{who} {each} ({total})", who=who,
                  each=ntr(lang, "{n} letter each", "{n} letters each", each),
                  total=ntr(lang, "{n} letter in all", "{n} letters in all", readers * each))

    series = ntr(lang, "A series of {n} letter", "A series of {n} letters", count)
    if not outcome.dry_run:
        return [tr(lang, "{series}, {choice}: {sends}.", series=series,
                   choice=_series_word(outcome.series, lang, option),
                   sends=sends(outcome.series, will=True))]
    choices = [SeriesStart(first) for first in range(1, min(count, SHOWN_LETTERS) + 1)]
    choices.insert(1, END)
    if outcome.series not in choices:
        choices.append(outcome.series)
    said = [tr(lang, "{choice} (chosen)", choice=_series_word(c, lang, option))
            if c == outcome.series else _series_word(c, lang, option) for c in choices]
    return [tr(lang, "{series}; for the confirmed new here it would send: {choices}.",
               series=series, choices="; ".join(
                   f"{word}: {sends(c, will=False)}" for word, c in zip(said, choices, strict=True)))]


def summary(outcome: Outcome, lang: str = "en", option: bool = False) -> list[str]:
    """The lines the CLI prints and the page shows: by standing (the same in a
    dry run and after the real run), then what happened or would happen, then
    what the series sends the confirmed it adds (``option``: its choices
    spelled as the CLI's ``--series``)."""
    def reason(value: str) -> str:
        return Why(value).label(lang)

    parts = [f"{s.label(lang)}: {outcome.standing[s]}" for s in Standing]
    lines = [tr(lang, "In the file: {parts}; refused: {refused}.", parts=", ".join(parts),
                refused=len(outcome.refused))]
    if outcome.reasons:
        lines.append(tr(lang, "To the suppression list: {reasons}.", reasons=", ".join(
            f"{reason(value)}: {n}" for value, n in sorted(outcome.reasons.items()))))
    counts = {"added": ntr(lang, "{n} subscriber added", "{n} subscribers added", outcome.added),
              "already": ntr(lang, "{n} was subscribed already", "{n} were subscribed already",
                             outcome.already),
              "skipped": ntr(lang, "{n} skipped (on the suppression list)",
                             "{n} skipped (on the suppression list)", outcome.skipped),
              "suppressed": ntr(lang, "{n} new on the suppression list",
                                "{n} new on the suppression list", outcome.suppressed)}
    done = ", ".join(counts.values())
    lines.append(tr(lang, "Dry run, nothing changed; it would do: {done}.", done=done)
                 if outcome.dry_run else tr(lang, "Done: {done}.", done=done))
    if outcome.left_here:
        named = ", ".join(outcome.left_here[:SHOWN_LEFT]) + (
            ", …" if len(outcome.left_here) > SHOWN_LEFT else "")
        lines.append(ntr(
            lang, "{n} subscriber here left in the other tool ({named}): on the suppression list, "
            "no letter goes to them; the Subscribers page marks them.",
            "{n} subscribers here left in the other tool ({named}): on the suppression list, "
            "no letter goes to them; the Subscribers page marks them.",
            len(outcome.left_here), named=named))
    lines.extend(_series_lines(outcome, lang, option))
    if outcome.columns is not None and (outcome.columns.defined or outcome.columns.choices):
        lines.extend(outcome.columns.lines(lang))
    if outcome.twice:
        lines.append(ntr(lang, "{n} record repeats an address met earlier in the file.",
                         "{n} records repeat an address met earlier in the file.", outcome.twice))
    return lines
