"""Whom a bounce means: the (service or newsletter, address) a signed tag
was made for, or the services holding an address a provider names."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from vykhukhol import files, newsletters, returntag
from vykhukhol import services as svc
from vykhukhol.addresses import email_key
from vykhukhol.datadir import DataDir


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
        if kind == returntag.SERVICE:
            paths = [self.services[name].subscribers_path]
        elif name in self.jobs:
            paths = [self.data.job(name, "list")]
        else:
            paths = [self.services[s].subscribers_path for s in self.job_services(name)]
        for path in paths:
            for line in files.read_lines(path):
                if line and not line.startswith("#"):
                    yield line.split("\t", 1)[0]
