"""The doctor's DNS questions, through dnspython, with short timeouts.

One :class:`Lookup` serves one examination: it asks the system resolver
(``/etc/resolv.conf``) or the server of the setting ``dns.resolver``
(``host:port``), keeps every answer for the rest of the examination, and
gives up on a resolver that let one question time out: every later question
is :class:`Unanswered` at once, so a dead resolver costs one timeout, not one
per record (the page must not hang).

dnspython is imported here, when a question is first asked: never by a CGI
page, nor by a run (tests/unit/test_import_budget.py).

Deliberately not here: DNSSEC, TCP fallback tuning, caching across
examinations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vykhukhol.errors import MissingModule

if TYPE_CHECKING:
    import dns.resolver

TIMEOUT = 3.0  # seconds one question may take, retries included (dnspython's lifetime)


class Unanswered(Exception):
    """The resolver did not answer (timeout, refused, unreachable): the check is unknown."""

    def __init__(self, kind: str, where: str, detail: str = "") -> None:
        super().__init__(f"{where}: {kind} {detail}".strip())
        #: timeout, refused, error (``detail`` says which) or unconfigured
        self.kind, self.where, self.detail = kind, where, detail


class Lookup:
    """Asks TXT, MX and address records; an empty answer means the name or
    the record does not exist (NXDOMAIN or no data); :meth:`absent` tells
    which."""

    def __init__(self, resolver: str = "", timeout: float = TIMEOUT) -> None:
        self.where = resolver  # "" for the system resolver
        self._setting = resolver
        self._timeout = timeout
        self._resolver: dns.resolver.Resolver | None = None
        self._dead: Unanswered | None = None
        self._answers: dict[tuple[str, str], list] = {}
        self._absent: set[str] = set()  # names the DNS said do not exist (NXDOMAIN)

    def _make(self) -> dns.resolver.Resolver:
        import dns.resolver

        if self._setting:
            host, _, port = self._setting.rpartition(":")
            resolver = dns.resolver.Resolver(configure=False)
            resolver.nameservers = [host]
            resolver.port = int(port)
        else:
            try:
                resolver = dns.resolver.Resolver()
            except dns.resolver.NoResolverConfiguration as exc:
                raise Unanswered("unconfigured", self.where, str(exc)) from None
        resolver.timeout = self._timeout
        resolver.lifetime = self._timeout
        return resolver

    def ask(self, name: str, kind: str) -> list:
        """The records of ``kind`` at ``name`` (dnspython's rdata), [] when
        there are none. Raises :class:`Unanswered`."""
        key = (name.lower().rstrip("."), kind)
        if key in self._answers:
            return self._answers[key]
        if self._dead is not None:
            raise self._dead
        try:
            import dns.exception
            import dns.resolver
        except ImportError as exc:  # a host that vendored too little: one clear line
            raise MissingModule.of(exc) from None

        if self._resolver is None:
            self._resolver = self._make()
        try:
            answer = list(self._resolver.resolve(key[0] + ".", kind, search=False))
        except dns.resolver.NXDOMAIN:
            answer = []
            self._absent.add(key[0])
        except dns.resolver.NoAnswer:
            answer = []
        except dns.resolver.NoNameservers:
            self._dead = Unanswered("refused", self.where)
            raise self._dead from None
        except dns.exception.Timeout:
            self._dead = Unanswered("timeout", self.where, f"{self._timeout:g}")
            raise self._dead from None
        except (dns.exception.DNSException, OSError, ValueError) as exc:
            self._dead = Unanswered("error", self.where, str(exc))
            raise self._dead from None
        self._answers[key] = answer
        return answer

    def absent(self, name: str) -> bool:
        """A question asked of ``name`` was answered: no such name (NXDOMAIN)."""
        return name.lower().rstrip(".") in self._absent

    def txt(self, name: str) -> list[str]:
        """Each TXT record at ``name`` as one string (its pieces joined)."""
        return [b"".join(r.strings).decode("utf-8", "replace") for r in self.ask(name, "TXT")]

    def mx(self, name: str) -> list[tuple[int, str]]:
        """(preference, host) of each MX record at ``name``, lowest first."""
        return sorted((r.preference, r.exchange.to_text(omit_final_dot=True).lower())
                      for r in self.ask(name, "MX"))

    def addresses(self, name: str) -> list[str]:
        """The IPv4 and IPv6 addresses of ``name``."""
        return [r.address for kind in ("A", "AAAA") for r in self.ask(name, kind)]
