"""Everything stored about one address, across the whole site: what the
subscriber's own page (docs/using/own-page.md#own-page) shows, changes, exports and erases.

The subscriber lines, newsletter ledgers and the suppression list are read
and changed here, through the modules that own them; every other file that
can name an address (logs, state files, the bounce reader's journal, kept
bounces, the outbox) is in :mod:`vykhukhol.members.traces`' one list, which
:func:`export`, :func:`stored` and :func:`erase` share.

Each file is changed by one atomic rewrite under its record lock (by the
module that owns its format where there is one), so a process killed in the
middle of an erase leaves every file either as it was or as it is to be,
never half of one. The suppression list's keyed hash is written first: from
then on nothing is sent to the address however far the erase got, and a
second erase finishes the rest.

A line *names* the address when the address stands in it as a whole (not
inside a longer address: erasing brien@example.org keeps o'brien@example.org's
lines), compared as everywhere (:func:`~vykhukhol.addresses.email_key`). The
export holds what is *about* the address, nobody else's address or link;
the erase drops that, and puts the address's keyed hash where it stands in a
line about somebody else.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.addresses import MAX_NAME, clean_name, email_key
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import FIELDS, Subscriber
from vykhukhol.settings import Settings
from vykhukhol.timeutil import format_time

MAX_PAUSE_DAYS = 366  # a pause is for a time; longer is leaving, which the page offers too


def memberships(data: DataDir, email: str) -> list[tuple[svc.Service, Subscriber | None]]:
    """Every service of the site with the address's line in it (None: not there)."""
    # find() searches the file's bytes for lines that start with the address:
    # a page costs a read of each file, not a parse of each line.
    return [(service, subs.find(service.subscribers_path, email))
            for service in svc.load_services(data)]


def offered(service: svc.Service, sub: Subscriber | None) -> bool:
    """Whether the own page shows ``service`` to an address with line ``sub``:
    every list it is on, and, with a join button, a public one open to
    sign-ups (a private or closed list is shown only to those on it)."""
    return sub is not None or (service.public and not service.closed)


def check_name(name: str) -> str:
    """A name typed on the page: refused (BadInput) with control characters in
    it, rather than quietly changed; then cleaned as the subscribe form cleans
    one (:func:`~vykhukhol.addresses.clean_name`: direction marks such as
    U+202E and zero-width characters go too)."""
    name = (name or "").strip()
    if not name.isprintable() and _has_control(name):
        raise BadInput("the name must not contain control characters (line breaks, tabs)")
    if len(name) > MAX_NAME:
        raise BadInput("the name is too long: at most {count} characters", count=MAX_NAME)
    return clean_name(name)


def _has_control(text: str) -> bool:
    """Whether ``text`` holds a control character (Unicode's Cc): asked only of a
    text that is not all printable, so the own page loads Unicode's tables only then."""
    import unicodedata

    return any(unicodedata.category(ch) == "Cc" for ch in text)


def rename(data: DataDir, email: str, name: str) -> int:
    """The address's name in every service it is in; returns how many lines changed."""
    name = check_name(name)
    changed = 0
    for service, sub in memberships(data, email):
        if sub is not None and subs.update_one(service.subscribers_path, email,
                                               lambda s: s.replace(name=name)):
            changed += 1
    return changed


def set_language(data: DataDir, email: str, language: str | None) -> int:
    """The address's own language (None: the site's) in every service it is
    in (docs/using/languages.md#reader-language); returns how many lines changed."""
    changed = 0
    for service, sub in memberships(data, email):
        if sub is not None and subs.update_one(service.subscribers_path, email,
                                               lambda s: s.with_language(language)):
            changed += 1
    return changed


def set_fields(data: DataDir, email: str, values: dict[str, str | None]) -> int:
    """The address's values of the site's fields (checked already; None
    clears one) on every line it has: a person has one city, whichever list
    asked. Returns how many lines changed."""
    changed = 0
    for service, sub in memberships(data, email):
        if sub is not None and sub.with_fields(values).fields != sub.fields \
                and subs.update_one(service.subscribers_path, email,
                                    lambda s: s.with_fields(values)):
            changed += 1
    return changed


def check_pause(until: datetime, moment: datetime) -> datetime:
    """A pause's end as asked for: in the future, at most :data:`MAX_PAUSE_DAYS` away."""
    if until <= moment:
        raise BadInput("the date must be in the future")
    if (until - moment).days > MAX_PAUSE_DAYS:
        raise BadInput("a pause can last at most {count} days", count=MAX_PAUSE_DAYS)
    return until


def pause(data: DataDir, email: str, until: datetime | None) -> int:
    """No letter of any kind to the address before ``until`` (None: resume now),
    in every service it is in. The sender reads the pause from the lines
    (:attr:`Subscriber.paused_until`): series letters and reminders wait for it
    (:func:`series.next_action`, so the due index too), newsletter rows are
    skipped while it lasts. Returns how many lines changed."""
    changed = 0
    for service, sub in memberships(data, email):
        if sub is None:
            continue
        if subs.update_one(service.subscribers_path, email, lambda s: s.paused(until)):
            changed += 1
            # The line moved: the summary takes the file's new stamp (a pause
            # only puts things later, so the summary's next time stays true).
            due_summary.lower_due(data, service.name, None, service.subscribers_path)
    return changed


def leave_all(data: DataDir, email: str) -> int:
    """Unsubscribe the address from every service; returns from how many."""
    from vykhukhol.members import membership

    return sum(1 for service, sub in memberships(data, email)
               if sub is not None and membership.unsubscribe(data, service.name, email))


# --- export ------------------------------------------------------------------

def _relative(data: DataDir, path: Path) -> str:
    return path.relative_to(data.root).as_posix()


def export(data: DataDir, settings: Settings, email: str, moment: datetime) -> dict:
    """Everything stored that names the address (GDPR art. 15, 152-ФЗ art. 14),
    ready for ``json.dumps``."""
    from vykhukhol import newsletters
    from vykhukhol.members import suppression, traces

    result: dict = {"address": email, "made": format_time(moment), "subscriptions": [],
                    "newsletter_rows": [], "suppression": [], "bounces": [], "log_lines": [],
                    "letters": [], "removed_by_bounces": []}
    for service, sub in memberships(data, email):
        if sub is not None:
            fields = dict(zip(FIELDS, sub.to_line().split("\t"), strict=False))
            fields["paused_until"] = format_time(sub.paused_until)
            result["subscriptions"].append({"service": service.name, "title": service.title,
                                            "fields": fields, "values": sub.fields,
                                            "line": sub.to_line()})
    key = email_key(email)
    for job in newsletters.list_jobs(data):
        readers = newsletters.snapshot.read(data, job.name)
        for row in newsletters.read_rows(data.job(job.name, "list")):
            if email_key(row.email) == key:
                reader = readers.get(row.index, newsletters.snapshot.NOBODY)
                result["newsletter_rows"].append({
                    "newsletter": job.name, "email": row.email, "name": row.name,
                    "state": row.state.value, "time": row.time,
                    **({"language": reader.language} if reader.language else {}),
                    **({"fields": reader.fields} if reader.fields else {})})
    hashed = suppression.hashed(settings.secret, email)
    for entry in suppression.entries(data):
        if entry.address in (key, hashed):
            result["suppression"].append({"address": entry.address, "when": format_time(entry.when),
                                          "why": entry.why, "from": entry.source})
    # Every other file that can name an address: one list, shared with erase.
    for found in traces.lines_naming(data, email):
        if found.about or not found.place.format.droppable:
            result[found.place.part].append({"file": _relative(data, found.path),
                                             "line": traces.masked(found.place.format,
                                                                   found.line, email)})
    for path in traces.letters(data, email):
        text = path.read_text("utf-8", "replace")
        if path.parent != data.outbox:  # a kept bounce may name others: masked
            text = traces.masked_text(text, email)
        result["letters"].append({"file": _relative(data, path), "text": text})
    from vykhukhol.members import removed

    kept = removed.find(data, email, moment)
    result["removed_by_bounces"] = [line.to_line() for line in kept.lines] if kept else []
    return result


# --- erase ---------------------------------------------------------------------

def _hash_ledger_rows(data: DataDir, settings: Settings, email: str) -> int:
    """Newsletter rows of the address keep their place (a job's cursor and the
    sender's journal count rows by position) but name nobody: the address
    becomes its keyed hash, the name goes, a pending row is skipped; the
    language and values the job kept of them go too."""
    from vykhukhol import newsletters
    from vykhukhol.members import suppression
    from vykhukhol.states import LedgerState

    key, hashed = email_key(email), suppression.hashed(settings.secret, email)
    changed = 0
    for job in newsletters.list_jobs(data):
        path = data.job(job.name, "list")
        if not any(email_key(row.email) == key for row in newsletters.read_rows(path)):
            continue

        blanked: set[int] = set()

        def blank(row: newsletters.Row, blanked: set[int] = blanked) -> newsletters.Row:
            nonlocal changed
            if email_key(row.email) != key:
                return row
            changed += 1
            blanked.add(row.index)
            moved = LedgerState.SKIPPED if row.state is LedgerState.PENDING else row.state
            return newsletters.Row(row.index, hashed, "", moved, row.time, "erased")

        newsletters.rewrite_rows(path, blank)
        newsletters.snapshot.forget(data, job.name, blanked)
    return changed


def stored(data: DataDir, settings: Settings, email: str, moment: datetime) -> bool:
    """Whether anything but the suppression list's hash still names the address
    (False after a whole erase: a second one has nothing to do)."""
    from vykhukhol.members import traces

    key = email_key(email)
    found = export(data, settings, email, moment)
    return any(found[part] for part in ("subscriptions", "newsletter_rows", "letters",
                                        "removed_by_bounces")) \
        or any(entry["address"] == key for entry in found["suppression"]) \
        or next(traces.lines_naming(data, email), None) is not None


def _forget_removed(data: DataDir, email: str, moment: datetime) -> bool:
    """The lines kept of a deletion by a bounce (members/removed.py) go too."""
    from vykhukhol.members import removed

    return removed.forget(data, email, moment)


def erase(data: DataDir, settings: Settings, email: str, moment: datetime) -> int:
    """Remove every line that names the address (GDPR art. 17, 152-ФЗ art. 21).
    What must stay to honour the unsubscribe stays as the suppression list's
    keyed hash, written first. Returns how many files changed."""
    from vykhukhol.members import suppression, traces

    suppression.erase(data, settings.secret, email, moment)
    changed = 1
    for service, sub in memberships(data, email):
        if sub is not None and subs.remove(service.subscribers_path, email):
            due_summary.lower_due(data, service.name, None, service.subscribers_path)
            changed += 1
    changed += 1 if _hash_ledger_rows(data, settings, email) else 0
    changed += _forget_removed(data, email, moment)
    # Letters first: a kept bounce is known as the address's by its bounces.log line.
    for path in traces.letters(data, email):
        files.remove(path)
        changed += 1
    return changed + traces.scrub(data, email, suppression.hashed(settings.secret, email))
