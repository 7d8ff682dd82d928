"""Where returned messages come from: a mailbox (IMAP or POP3) or standard input.

:func:`read_mailbox` reads ``mail.bounce_mailbox`` within a time budget (the
sender gives it :data:`SHARE` of ``time_limit`` at the start of a run), at
most :data:`MAX_PER_RUN` messages a run, fetched in groups of at most
:data:`BATCH` messages and :data:`GROUP_BYTES` bytes. Each group is handed to
:func:`~vykhukhol.bounces.apply.process`, which looks at the clock before
every message and hands back the results of those it handled; only then
(the results are on disk) are they moved to the ``Processed`` folder (IMAP:
``MOVE``, or ``COPY`` + ``\\Deleted`` + ``EXPUNGE``; the folder is made when
missing) or deleted (POP3: ``DELE``, carried out at ``QUIT``). A message
refused unread (:mod:`.reading.limits`, :mod:`.tries`: too big, too many lines or parts, or it was
begun twice and never finished) is kept on disk for the admin and moved to
``Rejected`` (IMAP) or deleted (POP3): no message can stay first in the
mailbox for every run to come. A kill in between leaves messages in the
mailbox; the next run reads them again and, knowing their ids, only removes
them.

TLS (``imaps``, ``pop3s``) verifies the server's certificate against the
system's CAs, or against ``mail.bounce_cafile`` when set (a host's own CA or
a self-signed certificate). ``imap://`` and ``pop3://`` are plain, for a
server on the same machine.

A server that is down, slow or refuses the login costs a log line, never the
run: every socket waits at most the time left of the budget. The line names
the reason in our own words (:func:`why`) and never repeats what the server
said: the setting may point at any host and port, and its answer is nobody's
business on the admin's pages.

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
from vykhukhol.bounces.reading import limits
from vykhukhol.datadir import DataDir
from vykhukhol.files.runlog import one_line
from vykhukhol.settings import Settings

SHARE = 0.25              # of time_limit a run gives the bounce mailbox, at its start
MAX_PER_RUN = 2000        # messages read in one run at most; the rest wait for the next
BATCH = 100               # messages fetched and applied together at most
GROUP_BYTES = 5_000_000   # bytes fetched together at most (a group of big messages is smaller)
COMMAND_TIMEOUT = 10      # seconds one server command may take at most (less when the budget is shorter)
PROCESSED, REJECTED = "Processed", "Rejected"


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
        """Where the mailbox is, without its user and password, for logs."""
        return f"{self.scheme}://{self.host}:{self.port}"


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
    aside: int = 0           # refused unread and moved aside (IMAP) or deleted (POP3)
    left: bool = False       # messages were left for the next run (time or cap)
    problem: str = ""        # why reading stopped early, if it did
    seconds: float = 0.0     # the reading took
    stage: str = "connect"   # how far the conversation with the server got

    def text(self) -> str:
        out = f"bounces: {self.read} read in {self.seconds:.1f}s"
        if self.repeated:
            out += f" ({self.repeated} read before, now removed)"
        if self.aside:
            out += f"; {self.aside} refused unread and set aside"
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

    def up(self) -> bool:
        return self.left() <= 0

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
    except Exception as exc:  # noqa: BLE001 - imaplib/poplib/ssl raise their own error classes
        summary.problem = f"{box.shown()}: {why(exc, summary.stage, box)}"
    if summary.problem:
        record.problem(data, box.source, summary.problem)
    summary.seconds = clock() - budget.end + seconds
    return summary


class _SaidNo(Exception):
    """The server said no to a command (its words are not kept)."""


# The reasons a mailbox problem is given in; the admin's pages translate each.
REFUSED = "connection refused"
TIMED_OUT = "the server did not answer in time"
NO_HOST = "no such host"
UNREACHABLE = "the server cannot be reached"
NOT_IMAP = "the server does not speak IMAP"
NOT_POP3 = "the server does not speak POP3"
UNTRUSTED = "TLS failed: the server's certificate cannot be trusted (see mail.bounce_cafile)"
TLS_FAILED = "TLS failed"
LOGIN = "the login was refused"
FOLDER = "the folder cannot be opened"
CLOSED = "the server closed the connection"
COMMAND = "the server refused a command"


def why(exc: BaseException, stage: str, box: Mailbox) -> str:
    """What went wrong with the mailbox, in our own words: never the server's
    text (the setting may point at any host and port)."""
    import ssl

    if isinstance(exc, socket.gaierror):
        return NO_HOST
    if isinstance(exc, ssl.SSLCertVerificationError):
        return UNTRUSTED
    if isinstance(exc, ssl.SSLError):
        return TLS_FAILED if stage == "connect" else CLOSED
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return TIMED_OUT
    if isinstance(exc, ConnectionRefusedError):
        return REFUSED
    if isinstance(exc, (EOFError, ConnectionError)):
        return CLOSED if stage != "connect" else (NOT_IMAP if box.source == record.IMAP else NOT_POP3)
    if isinstance(exc, OSError):
        return UNREACHABLE
    if stage == "connect":  # a greeting that is not IMAP's or POP3's
        return NOT_IMAP if box.source == record.IMAP else NOT_POP3
    if stage == "login":
        return LOGIN
    if stage == "folder":
        return FOLDER
    return COMMAND


def _tls_context(settings: Settings):
    import ssl

    cafile = settings["mail.bounce_cafile"] or None
    return ssl.create_default_context(cafile=cafile)


def _apply(data: DataDir, settings: Settings, source: str, raws: list[bytes],
           budget: _Budget, summary: Summary) -> list[apply.Result] | None:
    """The results of the messages handled (those before the time ran out),
    or None when they could not be put on disk."""
    results = apply.process_safely(data, settings, raws, source, stop=budget.up)
    if results is None:
        summary.problem = "the results could not be written; the messages stay in the mailbox"
        return None
    summary.read += sum(not r.repeated and not r.aside for r in results)
    summary.repeated += sum(r.repeated for r in results)
    summary.aside += sum(r.aside for r in results)
    if len(results) < len(raws):
        summary.left = True
    return results


def _too_big(data: DataDir, source: str, size: int, head: bytes) -> None:
    """A message over limits.MAX_BYTES, never fetched whole: its beginning is
    kept for the admin, and the log says so."""
    mid = apply.message_id(head) if head else "-"
    if head:
        record.keep(data, mid, head)
    record.write(data, [record.line(mid, "refused", "-", "-", source,
                                    f"too big: {size} bytes (at most {limits.MAX_BYTES})")])


def _groups(items: list, sizes: list[int]) -> list[list]:
    """``items`` cut into groups of at most BATCH items and GROUP_BYTES bytes."""
    groups: list[list] = []
    total = 0
    for item, size in zip(items, sizes, strict=True):
        if not groups or len(groups[-1]) >= BATCH or total + size > GROUP_BYTES:
            groups.append([])
            total = 0
        groups[-1].append(item)
        total += size
    return groups


# --- IMAP ------------------------------------------------------------------------

def _read_imap(data: DataDir, settings: Settings, box: Mailbox, budget: _Budget,
               summary: Summary) -> None:
    import imaplib

    imap: imaplib.IMAP4
    if box.tls:
        imap = imaplib.IMAP4_SSL(box.host, box.port, ssl_context=_tls_context(settings),
                                 timeout=budget.timeout())
    else:
        imap = imaplib.IMAP4(box.host, box.port, timeout=budget.timeout())
    try:
        summary.stage = "login"
        imap.login(box.user, box.password)
        summary.stage = "folder"
        _ok(imap.select(_quoted(box.folder)))
        summary.stage = "read"
        capabilities = set(_ok(imap.capability())[0].decode("ascii", "replace").upper().split())
        uids = _ok(imap.uid("SEARCH", "ALL"))[0].split()
        summary.left = len(uids) > MAX_PER_RUN
        made: set[str] = set()
        for start in range(0, min(len(uids), MAX_PER_RUN), BATCH):
            if budget.up():
                summary.left = True
                break
            imap.sock.settimeout(budget.timeout())
            sizes = _sizes(imap, b",".join(uids[start:start + BATCH]).decode())
            big = [uid for uid, size in sizes.items() if size > limits.MAX_BYTES]
            for uid in big:
                if budget.up():  # the clock before every message, a refused one too
                    break
                _too_big(data, box.source, sizes[uid], _head(imap, uid))
                summary.aside += 1
                _move(imap, [uid], REJECTED, box, capabilities, made)
            if budget.up():
                summary.left = True
                break
            small = [uid for uid, size in sizes.items() if size <= limits.MAX_BYTES]
            if not _imap_groups(data, settings, imap, box, small, sizes, budget, summary,
                                capabilities, made):
                break
        imap.close()
    finally:
        with contextlib.suppress(Exception):  # a connection already gone
            imap.logout()


def _imap_groups(data: DataDir, settings: Settings, imap, box: Mailbox, uids: list[str],
                 sizes: dict[str, int], budget: _Budget, summary: Summary,
                 capabilities: set[str], made: set[str]) -> bool:
    """Fetch, apply and move ``uids`` group by group; False when reading stops."""
    for group in _groups(uids, [sizes[uid] for uid in uids]):
        if budget.up():
            summary.left = True
            return False
        imap.sock.settimeout(budget.timeout())
        fetched = _fetch(imap, ",".join(group))
        results = _apply(data, settings, box.source, [raw for _, raw in fetched], budget, summary)
        if results is None:
            return False
        done = list(zip((uid for uid, _ in fetched), results, strict=False))
        _move(imap, [uid for uid, r in done if not r.aside], PROCESSED, box, capabilities, made)
        _move(imap, [uid for uid, r in done if r.aside], REJECTED, box, capabilities, made)
        if len(results) < len(fetched):
            return False
    return True


def _ok(answer: tuple) -> list:
    status, payload = answer
    if status != "OK":
        raise _SaidNo
    return payload


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sizes(imap, chunk: str) -> dict[str, int]:
    """{UID: size} of the messages of ``chunk``, in the mailbox's order."""
    import re

    sizes = {}
    for item in _ok(imap.uid("FETCH", chunk, "(RFC822.SIZE)")):
        text = item.decode("ascii", "replace") if isinstance(item, bytes) else ""
        uid = re.search(r"UID (\d+)", text)
        size = re.search(r"RFC822\.SIZE (\d+)", text)
        if uid and size:
            sizes[uid.group(1)] = int(size.group(1))
    return sizes


def _uid_of(item: tuple) -> str:
    import re

    found = re.search(rb"UID (\d+)", item[0])
    return found.group(1).decode() if found else ""


def _fetch(imap, chunk: str) -> list[tuple[str, bytes]]:
    """(UID, bytes) of each message of ``chunk``."""
    payload = _ok(imap.uid("FETCH", chunk, "(BODY.PEEK[])"))
    return [(_uid_of(item), item[1]) for item in payload
            if isinstance(item, tuple) and len(item) == 2 and _uid_of(item)]


def _head(imap, uid: str) -> bytes:
    """The first record.KEPT_BYTES of a message too big to fetch whole."""
    with contextlib.suppress(Exception):  # then only the log line says it
        payload = _ok(imap.uid("FETCH", uid, f"(BODY.PEEK[]<0.{record.KEPT_BYTES}>)"))
        for item in payload:
            if isinstance(item, tuple) and len(item) == 2:
                return item[1]
    return b""


def _move(imap, uids: list[str], folder: str, box: Mailbox, capabilities: set[str],
          made: set[str]) -> None:
    if not uids or box.folder == folder:
        return
    if folder not in made:
        imap.create(folder)  # "already exists" is an answer, not an error
        made.add(folder)
    chunk = ",".join(uids)
    if "MOVE" in capabilities:
        _ok(imap.uid("MOVE", chunk, folder))
        return
    _ok(imap.uid("COPY", chunk, folder))
    _ok(imap.uid("STORE", chunk, "+FLAGS.SILENT", r"(\Deleted)"))
    _ok(imap.expunge())


# --- POP3 ------------------------------------------------------------------------

def _read_pop3(data: DataDir, settings: Settings, box: Mailbox, budget: _Budget,
               summary: Summary) -> None:
    import poplib

    # poplib refuses a line over 2,048 bytes (an HTML part often has one), which
    # would leave that message first in the box, unread, for every run to come.
    poplib._MAXLINE = max(poplib._MAXLINE, limits.MAX_BYTES)  # type: ignore[attr-defined]  # private, not in the stubs
    pop: poplib.POP3
    if box.tls:
        pop = poplib.POP3_SSL(box.host, box.port, context=_tls_context(settings),
                              timeout=budget.timeout())
    else:
        pop = poplib.POP3(box.host, box.port, timeout=budget.timeout())
    try:
        summary.stage = "login"
        pop.user(box.user)
        pop.pass_(box.password)
        summary.stage = "read"
        listing = [line.split() for line in pop.list()[1]]
        numbers = [(int(n), int(size)) for n, size in listing[:MAX_PER_RUN]]
        summary.left = len(listing) > MAX_PER_RUN
        for group in _groups(numbers, [min(size, limits.MAX_BYTES) for _, size in numbers]):
            if budget.up():
                summary.left = True
                break
            pop.sock.settimeout(budget.timeout())
            if not _pop3_group(data, settings, pop, box, group, budget, summary):
                break  # the earlier groups' deletions happen at QUIT
        pop.quit()  # the deletions happen here
    except BaseException:
        with contextlib.suppress(Exception):
            pop.close()  # no QUIT: the server deletes nothing of this session
        raise


def _pop3_group(data: DataDir, settings: Settings, pop, box: Mailbox,
                group: list[tuple[int, int]], budget: _Budget, summary: Summary) -> bool:
    """Retrieve, apply and delete one group; False when reading stops."""
    for n, size in group:
        if size > limits.MAX_BYTES:
            if budget.up():  # the clock before every message, a refused one too
                summary.left = True
                return False
            head = b""
            with contextlib.suppress(Exception):  # TOP is optional in POP3
                head = b"\r\n".join(pop.top(n, 100)[1])[:record.KEPT_BYTES]
            _too_big(data, box.source, size, head)
            summary.aside += 1
            pop.dele(n)
    small = [n for n, size in group if size <= limits.MAX_BYTES]
    raws = [b"\r\n".join(pop.retr(n)[1]) + b"\r\n" for n in small]
    results = _apply(data, settings, box.source, raws, budget, summary)
    if results is None:
        return False  # nothing of this group is deleted
    for n, _ in zip(small, results, strict=False):
        pop.dele(n)  # kept on disk first when it was refused unread
    return len(results) == len(raws)


# --- standard input ---------------------------------------------------------------

def read_stdin(data: DataDir, settings: Settings, stream) -> str:
    """``vykhukhol bounce``: one message from ``stream`` (binary); returns a line
    for the terminal. Never raises for the message's fault."""
    raw = stream.read(limits.MAX_BYTES + 1)
    if len(raw) > limits.MAX_BYTES:
        while stream.read(1 << 20):  # take the rest, so the mail server sees it delivered
            pass
        mid = apply.message_id(raw)
        record.keep(data, mid, raw)
        reason = f"too big: more than {limits.MAX_BYTES} bytes"
        record.write(data, [record.line(mid, "refused", "-", "-", record.PIPE, reason)])
        return f"refused: {reason}"
    if not raw.strip():
        record.write(data, [record.line("-", "refused", "-", "-", record.PIPE, "empty message")])
        return "refused: empty message"
    results = apply.process_safely(data, settings, [raw], record.PIPE)
    if results is None:
        return "not processed: the results could not be written (see bounces.log)"
    result = results[0]
    return one_line(f"{result.kind}: {result.target} {result.address} {result.reason}")
