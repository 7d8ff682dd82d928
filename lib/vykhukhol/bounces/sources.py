"""Where returned messages come from: a mailbox (IMAP or POP3) or standard input.

:func:`read_mailbox` reads ``mail.bounce_mailbox`` within a time budget (the
sender gives it :data:`SHARE` of ``time_limit`` at the start of a run), in
batches of :data:`BATCH`, at most :data:`MAX_PER_RUN` messages a run. Each
batch is handed to :func:`~vykhukhol.bounces.apply.process`; only after it
returned (the results are on disk) are its messages moved to the
``Processed`` folder (IMAP: ``MOVE``, or ``COPY`` + ``\\Deleted`` +
``EXPUNGE``; the folder is created when missing) or deleted (POP3: ``DELE``,
carried out at ``QUIT``). A kill in between leaves them in the mailbox; the
next run reads them again and, knowing their ids, only removes them.

TLS (``imaps``, ``pop3s``) verifies the server's certificate against the
system's CAs, or against ``mail.bounce_cafile`` when set (a host's own CA or
a self-signed certificate). ``imap://`` and ``pop3://`` are plain, for a
server on the same machine.

A server that is down, slow or refuses the login costs a log line, never the
run: every socket waits at most the time left of the budget.

:func:`read_stdin` is ``vykhukhol bounce``: one message, size-capped.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from vykhukhol.bounces import apply, record
from vykhukhol.bounces.classify import MAX_MESSAGE_BYTES
from vykhukhol.datadir import DataDir
from vykhukhol.settings import Settings

SHARE = 0.25          # of time_limit a run gives the bounce mailbox, at its start
MAX_PER_RUN = 2000    # messages read in one run at most; the rest wait for the next
BATCH = 100           # messages fetched, applied and removed together
COMMAND_TIMEOUT = 10  # seconds one server command may take at most (less when the budget is shorter)
PROCESSED = "Processed"


@dataclass
class Mailbox:
    scheme: str      # imaps, imap, pop3s, pop3
    host: str
    port: int
    user: str
    password: str
    folder: str

    @property
    def tls(self) -> bool:
        return self.scheme.endswith("s")

    @property
    def source(self) -> str:
        return record.IMAP if self.scheme.startswith("imap") else record.POP3

    def shown(self) -> str:
        """The address without its password, for logs."""
        return f"{self.scheme}://{self.user}@{self.host}:{self.port}"


DEFAULT_PORTS = {"imaps": 993, "imap": 143, "pop3s": 995, "pop3": 110}


def parse_url(url: str) -> Mailbox:
    parts = urlsplit(url)
    return Mailbox(parts.scheme, parts.hostname or "", parts.port or DEFAULT_PORTS[parts.scheme],
                   unquote(parts.username or ""), unquote(parts.password or ""),
                   unquote(parts.path.strip("/")) or "INBOX")


@dataclass
class Summary:
    read: int = 0
    repeated: int = 0
    left: bool = False       # messages were left for the next run (time or cap)
    problem: str = ""        # why reading stopped early, if it did
    seconds: float = 0.0     # the reading took

    def text(self) -> str:
        out = f"bounces: {self.read} read in {self.seconds:.1f}s"
        if self.repeated:
            out += f" ({self.repeated} read before, now removed)"
        if self.left:
            out += "; more wait for the next run"
        if self.problem:
            out += f"; {self.problem}"
        return out


class _Budget:
    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.end = clock() + seconds

    def left(self) -> float:
        return self.end - self.clock()

    def timeout(self) -> float:
        return max(0.5, min(COMMAND_TIMEOUT, self.left()))


def read_mailbox(data: DataDir, settings: Settings, seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> Summary:
    """Read and apply the mailbox's messages for at most ``seconds`` (never raises
    for a server's or a message's fault; problems are lines in bounces.log)."""
    box = parse_url(settings["mail.bounce_mailbox"])
    budget = _Budget(seconds, clock)
    summary = Summary()
    reader = _read_imap if box.source == record.IMAP else _read_pop3
    try:
        reader(data, settings, box, budget, summary)
    except (OSError, EOFError, _ServerSaid) as exc:
        summary.problem = f"{box.shown()}: {_why(exc)}"
    except Exception as exc:  # noqa: BLE001 - imaplib/poplib raise their own error classes
        summary.problem = f"{box.shown()}: {type(exc).__name__}: {str(exc)[:200]}"
    if summary.problem:
        record.problem(data, box.source, summary.problem)
    summary.seconds = clock() - budget.end + seconds
    return summary


class _ServerSaid(Exception):
    pass


def _why(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout):
        return "the server did not answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    import ssl

    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"its certificate cannot be trusted ({exc.verify_message}); see mail.bounce_cafile"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _tls_context(settings: Settings):
    import ssl

    cafile = settings["mail.bounce_cafile"] or None
    return ssl.create_default_context(cafile=cafile)


def _apply_batch(data: DataDir, settings: Settings, source: str, raws: list[bytes],
                 summary: Summary) -> bool:
    results = apply.process_safely(data, settings, raws, source)
    if results is None:
        summary.problem = "the results could not be written; the messages stay in the mailbox"
        return False
    summary.read += sum(not r.repeated for r in results)
    summary.repeated += sum(r.repeated for r in results)
    return True


def _too_big(data: DataDir, source: str, size: int) -> None:
    record.write(data, [record.line("-", "refused", "-", "-", source,
                                    f"too big ({size} bytes, at most {MAX_MESSAGE_BYTES} are "
                                    "read); removed unread")])


# --- IMAP ------------------------------------------------------------------------

def _read_imap(data: DataDir, settings: Settings, box: Mailbox, budget: _Budget,
               summary: Summary) -> None:
    import imaplib

    if box.tls:
        imap = imaplib.IMAP4_SSL(box.host, box.port, ssl_context=_tls_context(settings),
                                 timeout=budget.timeout())
    else:
        imap = imaplib.IMAP4(box.host, box.port, timeout=budget.timeout())
    try:
        imap.login(box.user, box.password)
        capabilities = set(_ok(imap.capability(), "capability")[0].decode("ascii", "replace").upper().split())
        _ok(imap.select(_quoted(box.folder)), f"folder {box.folder}")
        uids = _ok(imap.uid("SEARCH", None, "ALL"), "search")[0].split()
        summary.left = len(uids) > MAX_PER_RUN
        uids = uids[:MAX_PER_RUN]
        if uids and box.folder != PROCESSED:
            imap.create(PROCESSED)  # "already exists" is an answer, not an error
        for start in range(0, len(uids), BATCH):
            if budget.left() <= 0:
                summary.left = True
                break
            imap.sock.settimeout(budget.timeout())
            chunk = b",".join(uids[start:start + BATCH]).decode()
            small, big = _sizes(imap, chunk)
            raws = _fetch(imap, ",".join(small)) if small else []
            if raws and not _apply_batch(data, settings, box.source, raws, summary):
                return
            for size in big.values():
                _too_big(data, box.source, size)
            if box.folder != PROCESSED:
                _move(imap, chunk, capabilities)
        imap.close()
    finally:
        with contextlib.suppress(Exception):  # a connection already gone
            imap.logout()


def _ok(answer: tuple, what: str) -> list:
    status, payload = answer
    if status != "OK":
        text = b" ".join(p for p in payload if isinstance(p, bytes)).decode("utf-8", "replace")
        raise _ServerSaid(f"{what}: {text[:200]}")
    return payload


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sizes(imap, chunk: str) -> tuple[list[str], dict[str, int]]:
    """(UIDs of the messages small enough to read, {UID: size} of the others)."""
    import re

    small, big = [], {}
    for item in _ok(imap.uid("FETCH", chunk, "(RFC822.SIZE)"), "fetch sizes"):
        text = item.decode("ascii", "replace") if isinstance(item, bytes) else ""
        uid = re.search(r"UID (\d+)", text)
        size = re.search(r"RFC822\.SIZE (\d+)", text)
        if uid and size:
            if int(size.group(1)) > MAX_MESSAGE_BYTES:
                big[uid.group(1)] = int(size.group(1))
            else:
                small.append(uid.group(1))
    return small, big


def _fetch(imap, chunk: str) -> list[bytes]:
    payload = _ok(imap.uid("FETCH", chunk, "(BODY.PEEK[])"), "fetch")
    return [item[1] for item in payload if isinstance(item, tuple) and len(item) == 2]


def _move(imap, chunk: str, capabilities: set[str]) -> None:
    if "MOVE" in capabilities:
        _ok(imap.uid("MOVE", chunk, PROCESSED), f"move to {PROCESSED}")
        return
    _ok(imap.uid("COPY", chunk, PROCESSED), f"copy to {PROCESSED}")
    _ok(imap.uid("STORE", chunk, "+FLAGS.SILENT", r"(\Deleted)"), "flag as deleted")
    _ok(imap.expunge(), "expunge")


# --- POP3 ------------------------------------------------------------------------

def _read_pop3(data: DataDir, settings: Settings, box: Mailbox, budget: _Budget,
               summary: Summary) -> None:
    import poplib

    # poplib refuses a line over 2,048 bytes (an HTML part often has one), which
    # would leave that message first in the box, unread, for every run to come.
    poplib._MAXLINE = max(poplib._MAXLINE, MAX_MESSAGE_BYTES)
    if box.tls:
        pop = poplib.POP3_SSL(box.host, box.port, context=_tls_context(settings),
                              timeout=budget.timeout())
    else:
        pop = poplib.POP3(box.host, box.port, timeout=budget.timeout())
    try:
        pop.user(box.user)
        pop.pass_(box.password)
        listing = [line.split() for line in pop.list()[1]]
        numbers = [(int(n), int(size)) for n, size in listing[:MAX_PER_RUN]]
        summary.left = len(listing) > MAX_PER_RUN
        for start in range(0, len(numbers), BATCH):
            if budget.left() <= 0:
                summary.left = True
                break
            pop.sock.settimeout(budget.timeout())
            chunk = numbers[start:start + BATCH]
            raws = [b"\r\n".join(pop.retr(n)[1]) + b"\r\n"
                    for n, size in chunk if size <= MAX_MESSAGE_BYTES]
            if raws and not _apply_batch(data, settings, box.source, raws, summary):
                break  # nothing of this batch is deleted; the earlier ones are, at QUIT
            for n, size in chunk:
                if size > MAX_MESSAGE_BYTES:
                    _too_big(data, box.source, size)
                pop.dele(n)
        pop.quit()  # the deletions happen here
    except BaseException:
        with contextlib.suppress(Exception):
            pop.close()  # no QUIT: the server deletes nothing of this session
        raise


# --- standard input ---------------------------------------------------------------

def read_stdin(data: DataDir, settings: Settings, stream) -> str:
    """``vykhukhol bounce``: one message from ``stream`` (binary); returns a line
    for the terminal. Never raises for the message's fault."""
    raw = stream.read(MAX_MESSAGE_BYTES + 1)
    if len(raw) > MAX_MESSAGE_BYTES:
        while stream.read(1 << 20):  # take the rest, so the mail server sees it delivered
            pass
        record.write(data, [record.line("-", "refused", "-", "-", record.PIPE,
                                        f"too big (more than {MAX_MESSAGE_BYTES} bytes)")])
        return "refused: too big"
    if not raw.strip():
        record.problem(data, record.PIPE, "an empty message")
        return "refused: empty"
    results = apply.process_safely(data, settings, [raw], record.PIPE)
    if results is None:
        return "not processed: the results could not be written (see bounces.log)"
    result = results[0]
    return f"{result.kind}: {result.target} {result.address} {result.reason}".strip()
