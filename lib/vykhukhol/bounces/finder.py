"""Whom a bounce means: the (service or newsletter, address) a signed tag
was made for, or the services holding an address a provider names; and
whether a report about that letter may count towards the brakes and the
sender's refusal alert (:meth:`Finder.counts_for`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from vykhukhol import files, newsletters, returntag
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir
from vykhukhol.members import removed, suppression
from vykhukhol.services import subscribers as subs
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import now

HANDED = (LedgerState.SENT, LedgerState.IN_DOUBT, LedgerState.FAILED)  # a ledger row whose letter left


class Finder:
    """Recovers (service or job, address) from a tag. Each candidate's address
    list is read once per batch: a service's subscriber file, a live job's
    ledger, or a finished job's services' files."""

    def __init__(self, data: DataDir, secret: bytes) -> None:
        self.data = data
        self.secret = secret
        self.services = {s.name: s for s in svc.load_services(data)}
        self.jobs = {job.name: job.services for job in newsletters.list_jobs(data)}
        self.finished = {name: services for name, services in newsletters.finished_jobs(data)
                         if name not in self.jobs}
        self._tables: dict[tuple[str, str], dict[bytes, str]] = {}
        self._holders: dict[str, list[str]] | None = None
        self._ledgers: dict[str, dict[str, LedgerState]] = {}
        self._gone: dict[str, list[str]] | None = None

    def job_services(self, job: str) -> list[str]:
        return [s for s in self.jobs.get(job) or self.finished.get(job) or [] if s in self.services]

    def who(self, tag: returntag.Tag, hints: Iterable[str]) -> tuple[str, str] | None:
        """(service or job name, address) the tag was made for, or None (forged,
        or for somebody no longer on any list)."""
        if tag.kind == returntag.SERVICE:
            names = tag.names(sorted(self.services))
        else:
            names = tag.names(sorted(self.jobs) + sorted(self.finished))
        hints = [h for h in hints if h]
        for name in names:  # the address a report names: no file to read
            for hint in hints:
                if tag.is_for(self.secret, name, hint):
                    return name, hint
        for name in names:
            address = self._table(tag.kind, name).get(tag.mac)
            if address is not None and tag.is_for(self.secret, name, address):
                return name, address
        return None

    def counts_for(self, kind: str, name: str, address: str) -> bool:
        """May a report about the letter of ``name`` to ``address`` count for
        the brakes or the refusal alert? Only while the address is a confirmed
        member (for a newsletter: of one of its services, and its ledger row
        says the letter left) and not suppressed. A tag is no secret (the
        confirmation request carries one): this keeps a stranger's reports,
        and repeats after the address left, from counting."""
        if suppression.is_suppressed(self.data, self.secret, address):
            return False
        if kind == returntag.SERVICE:
            return name in self.services and self._confirmed(name, address)
        if name in self.jobs:
            state = self._ledger(name).get(email_key(address))
            if state not in HANDED:
                return False
        return any(self._confirmed(s, address) for s in self.job_services(name))

    def _confirmed(self, service: str, address: str) -> bool:
        found = subs.find(self.services[service].subscribers_path, address)
        return found is not None and found.state.confirmed

    def _ledger(self, job: str) -> dict[str, LedgerState]:
        if job not in self._ledgers:
            self._ledgers[job] = {email_key(row.email): row.state
                                  for row in newsletters.read_rows(self.data.job(job, "list"))}
        return self._ledgers[job]

    def holding(self, address: str) -> list[str]:
        """The services whose subscriber file holds ``address``, by name (for a
        provider's report that carries no tag of ours)."""
        key = email_key(address)
        if self._holders is None:
            self._holders = defaultdict(list)
            for name in sorted(self.services):
                for found in self._addresses(returntag.SERVICE, name):
                    self._holders[email_key(found)].append(name)
        return list(self._holders.get(key, []))

    def _table(self, kind: str, name: str) -> dict[bytes, str]:
        key = (kind, name)
        if key not in self._tables:
            table: dict[bytes, str] = {}
            for address in self._addresses(kind, name):
                table[returntag._mac(self.secret, kind, name, address)] = address
            self._tables[key] = table
        return self._tables[key]

    def _addresses(self, kind: str, name: str) -> Iterable[str]:
        """The addresses a tag of ``name`` may have been made for: its file's,
        and a service's addresses a bounce removed (kept 90 days), so a
        complaint that comes after the bounce is still honoured."""
        if kind == returntag.SERVICE:
            services = [name]
            paths = [self.services[name].subscribers_path]
        elif name in self.jobs:
            services, paths = [], [self.data.job(name, "list")]
        else:
            services = self.job_services(name)
            paths = [self.services[s].subscribers_path for s in services]
        for path in paths:
            for line in files.read_lines(path):
                if line and not line.startswith("#"):
                    yield line.split("\t", 1)[0]
        for service in services:
            yield from self._removed().get(service, [])

    def _removed(self) -> dict[str, list[str]]:
        """Service → the addresses a bounce removed from it (:mod:`removed`)."""
        if self._gone is None:
            self._gone = defaultdict(list)
            for kept in removed.entries(self.data, now()):
                self._gone[kept.service].append(kept.address)
        return self._gone
