"""An address deleted because of its bounces
(docs/deliverability/bounces.md#returned-message): suppressed first, then deleted from every service of the site.

- *address gone*: :func:`forget_gone` — at once; read so with doubt,
  :func:`gone_in_doubt` — at the second different letter (:func:`.counts.note_doubt`);
- *soft*: :func:`soft_in_service` — the letters counted in the service
  (:mod:`.counts`), and at ``bounce_limit`` the address deleted there (its
  line kept for an undo, :mod:`vykhukhol.members.removed`) and then from
  every other service (:attr:`~vykhukhol.members.suppression.Why.BOUNCES`).

Called by the bounce reader's journal (:mod:`.ledger`) and by the sender
for refusals at hand-over; doing it twice changes nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.bounces.counts import DOUBT_LETTERS, settle_soft
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.members import membership, removed, suppression
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import Settings


def forget_gone(data: DataDir, settings: Settings, addresses: Iterable[str], source: str,
                moment: datetime, said: dict[str, str]) -> None:
    """Addresses gone: each suppressed, then off every list, with what its
    refusal said (address key → text) kept for the owner."""
    for address in dict.fromkeys(addresses):
        membership.forget_everywhere(data, settings, address, suppression.Why.GONE, source, moment,
                                     words=said.get(email_key(address), ""))


DOUBT_WHY = "different letters failed with the address read as gone (doubtful)"


def gone_in_doubt(data: DataDir, settings: Settings, addresses: Iterable[str], source: str,
                  moment: datetime, said: dict[str, str]) -> list[str]:
    """Addresses read as gone with doubt for the second different letter:
    each suppressed as gone, then off every list, its line kept for an undo
    with why it left and what the server said. Returns those deleted now
    (doing it twice deletes nothing more)."""
    deleted = []
    for address in dict.fromkeys(addresses):
        words = "; ".join(piece for piece in (
            f"{DOUBT_LETTERS} {DOUBT_WHY}", said.get(email_key(address), "")) if piece)
        if membership.forget_everywhere(data, settings, address, suppression.Why.GONE, source,
                                        moment, words=words):
            deleted.append(address)
    return deleted


def soft_in_service(data: DataDir, settings: Settings, service_name: str,
                    letters: dict[str, list[str]], source: str, moment: datetime,
                    before: dict[str, int] | None = None, note=None,
                    words: dict[str, str] | None = None) -> list[str]:
    """Soft failures counted in one service's subscriber file (address key →
    the letters). ``note(current)`` is called under the file's lock before
    anything changes (the reader's journal line); with ``before`` only the
    addresses whose ``failures`` still read so are counted (a killed batch).
    An address at ``bounce_limit`` is suppressed, deleted here (its line
    kept for an undo with the server's ``words``, address key → text), and
    then from every other service. Returns the addresses deleted."""
    try:
        service = svc.find_service(data, service_name)
    except (NotFound, BadInput):
        return []
    path = service.subscribers_path
    limit = settings["bounce_limit"]
    with files.record_lock(path):
        current = {sub.key: sub.failures for sub in subs.among(path, letters.keys())}
        if before is not None:
            current = {k: v for k, v in current.items() if before.get(k) == v}
        if not current:
            return []
        if note is not None:
            note(current)
        after = settle_soft(data, settings, service_name, letters, current, moment)
        over = {key for key, value in after.items() if value >= limit}
        emails: dict[str, str] = {}

        def change(sub: Subscriber) -> Subscriber | None:
            if sub.key not in after:
                return sub
            if sub.key in over:
                emails[sub.key] = sub.email
                removed.note(data, service_name, sub.to_line(), suppression.Why.BOUNCES.value,
                             source, (words or {}).get(sub.key, ""), moment)
                return None
            return sub.replace(failures=after[sub.key])

        if over:
            suppression.add_many(data, suppression.secret_of(settings), sorted(over),
                                 suppression.Why.BOUNCES, source, moment)
        subs.rewrite(path, change, parse=lambda _, line: email_key(line.split("\t", 1)[0]) in after)
        due_summary.lower_due(data, service_name, None, path)
    for key in sorted(over):
        membership.forget_everywhere(data, settings, emails.get(key, key), suppression.Why.BOUNCES, source,
                          moment, suppressed=True, words=(words or {}).get(key, ""))
    return [emails.get(key, key) for key in sorted(over)]
