"""A DNS server of the test's own on loopback (UDP, a free port), answering
from a dict of records with dnspython's ``dns.message.make_response``; and a
resolver that never answers (a bound UDP socket that reads and says nothing).

Records: ``{("example.org", "TXT"): ['"v=spf1 -all"'], ...}`` in zone-file
text. A name with no record of any kind is NXDOMAIN; a name with others is
NOERROR with no answer. No test resolves a public name: the doctor is
pointed here by ``dns.resolver``.
"""

from __future__ import annotations

import socket
import threading

import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset


class DnsServer:
    def __init__(self, records: dict[tuple[str, str], list[str]]) -> None:
        self.records = {(name.lower().rstrip("."), kind.upper()): values
                        for (name, kind), values in records.items()}
        self.questions: list[tuple[str, str]] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._stop = False

    def __enter__(self) -> DnsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self.sock.close()
        self._thread.join(timeout=2)

    def _serve(self) -> None:
        while not self._stop:
            try:
                wire, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                query = dns.message.from_wire(wire)
            except Exception:  # noqa: BLE001 - a broken packet is not answered
                continue
            response = dns.message.make_response(query)
            question = query.question[0]
            name = question.name.to_text(omit_final_dot=True).lower()
            kind = dns.rdatatype.to_text(question.rdtype)
            self.questions.append((name, kind))
            values = self.records.get((name, kind))
            if values:
                response.answer.append(dns.rrset.from_text_list(question.name, 300, "IN", kind, values))
            elif not any(n == name for n, _ in self.records):
                response.set_rcode(dns.rcode.NXDOMAIN)
            try:
                self.sock.sendto(response.to_wire(), peer)
            except OSError:
                return


class SilentResolver:
    """A UDP socket bound on loopback that reads every question and answers none."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.heard = 0
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        while True:
            try:
                self.sock.recvfrom(4096)
            except OSError:
                return
            self.heard += 1

    def __enter__(self) -> SilentResolver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
