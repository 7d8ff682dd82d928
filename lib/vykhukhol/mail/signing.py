"""DKIM signatures made by a helper process, on the machine's other core,
while the run's threads wait for their servers.

dkimpy's signing is Python (the letter's canonical form, its hashes, the
header) and the RSA step is OpenSSL's through the ``cryptography`` package,
which keeps the GIL while it works (measured: two threads sign no faster
than one). In a run with several SMTP connections the letter-making thread
is the bottleneck, and every millisecond a lane thread spends signing is a
millisecond taken from it. A :class:`SigningProcess` takes that work to a
process of its own: a lane hands the letter's bytes over a pipe and waits
(without the GIL) for the DKIM-Signature header, which the helper makes with
the same :class:`~.dkim.Signer` (the same bytes; tests/unit/test_dkim.py
compares them).

The helper is ``python -S`` on this very interpreter, with the parent's
``sys.path`` (a host's vendored lib/ included), started when a run with
several connections first needs it; it reads its key once, and it ends when
its pipe closes, so a parent killed with ``kill -9`` leaves nothing behind.
A helper that cannot start or dies is a :class:`~.dkim.DkimKeyError` for the
letters waiting on it: the run stops as on any DKIM failure, and no letter
leaves unsigned.

Deliberately not here: the key checks (:mod:`.dkim`), when to use a helper
(:class:`.lanes.Lanes`: several connections, signing on).

The frames on the pipes: a 4-byte big-endian length, then that many bytes.
To the helper: a letter. From it: first ``!`` once it has started and read
its key (until then the parent signs its letters itself), then for each
letter ``+`` and the header, or ``-`` and why not.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO

from vykhukhol.errors import VykhukholError
from vykhukhol.mail.dkim import DkimKeyError, Signer

_LENGTH = struct.Struct(">I")
_START = ("import sys; sys.path[:0] = sys.argv[1].split('\\n'); "
          "from vykhukhol.mail.signing import serve; serve()")


class _Waiting:
    """One letter's place in the queue: its header, or why there is none."""

    __slots__ = ("done", "header", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.header = b""
        self.error = ""


class SigningProcess:
    """The helper process of one key, and the queue of letters it signs in order.

    :meth:`sign` may be called from any thread; each caller waits for its own
    letter's header while the helper works on the ones before it."""

    def __init__(self, domain: str, selector: str, key_file: Path,
                 meanwhile: Signer | None = None) -> None:
        path = "\n".join(p for p in sys.path if p and "\n" not in p)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-S", "-c", _START, path, domain, selector, str(key_file)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                close_fds=True)
        except OSError as exc:
            raise DkimKeyError(f"the DKIM signing process cannot start: "
                               f"{exc.strerror or exc}") from None
        self._queue: deque[_Waiting] = deque()
        self._lock = threading.Lock()    # the queue (the reader takes only this one)
        self._writing = threading.Lock()  # one writer at a time: the queue's order is the pipe's
        self._broken = ""
        # Until the helper has started and read its key (it says "!"), the
        # letters are signed by ``meanwhile`` in the caller's thread: its
        # start-up (an interpreter, dkimpy, the key) delays no letter.
        self._meanwhile = meanwhile
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, name="dkim-signing", daemon=True)
        self._reader.start()

    def sign(self, data: bytes) -> bytes:
        """``data`` with its DKIM-Signature on top, as :meth:`.dkim.Signer.sign`
        makes it. Raises :class:`~.dkim.DkimKeyError` when the helper cannot sign."""
        return self.submit(data)()

    def submit(self, data: bytes) -> Callable[[], bytes]:
        """Hand ``data`` to the helper now; the function returned waits for
        it and gives what :meth:`sign` gives (so a caller can do something
        else, e.g. exchange the SMTP envelope, while the helper signs)."""
        if self._meanwhile is not None and not self._ready.is_set():
            signed = self._meanwhile.sign(data)
            return lambda: signed
        waiting = _Waiting()
        # The reader never waits for a writer (a long letter blocked on a
        # full pipe), so the helper can always hand its answers over.
        with self._writing:
            with self._lock:
                if self._broken:
                    raise DkimKeyError(self._broken)
                self._queue.append(waiting)
            try:
                stdin = self._process.stdin
                assert stdin is not None
                stdin.write(_LENGTH.pack(len(data)) + data)
                stdin.flush()
            except OSError:
                with self._lock:
                    self._fail("the DKIM signing process has ended")
                raise DkimKeyError(self._broken) from None

        def collect() -> bytes:
            waiting.done.wait()
            if waiting.error:
                raise DkimKeyError(waiting.error)
            return waiting.header + data
        return collect

    def _read(self) -> None:
        """The helper's answers, in the order the letters went in."""
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            frame = _read_frame(stdout)
            if frame is None:
                try:
                    code = self._process.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    code = None
                with self._lock:
                    self._fail(f"the DKIM signing process has ended (exit code {code})")
                return
            if frame == b"!":  # the helper has its key: it signs from now on
                self._ready.set()
                continue
            with self._lock:
                waiting = self._queue.popleft() if self._queue else None
            if waiting is None:
                continue  # cannot happen: one answer a letter
            if frame[:1] == b"+":
                waiting.header = frame[1:]
            else:
                waiting.error = frame[1:].decode("utf-8", "replace") or "DKIM signing failed"
            waiting.done.set()

    def _fail(self, why: str) -> None:
        """Every letter still waiting, and every later one, gets ``why``
        (called with the lock held)."""
        self._broken = self._broken or why
        while self._queue:
            waiting = self._queue.popleft()
            waiting.error = self._broken
            waiting.done.set()

    def close(self) -> None:
        """End the helper (it exits when its input closes)."""
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(timeout=5)


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame, or None at the end of the stream."""
    head = _read_exactly(stream, _LENGTH.size)
    if head is None:
        return None
    return _read_exactly(stream, _LENGTH.unpack(head)[0])


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    parts, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def serve(argv: list[str] | None = None, stdin: BinaryIO | None = None,
          stdout: BinaryIO | None = None) -> None:
    """The helper's loop: letters in, DKIM-Signature headers out, until the
    input ends. ``argv`` is (path, domain, selector, key file)."""
    _, domain, selector, key_file = (sys.argv if argv is None else argv)[1:5]
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    try:
        signer: Signer | None = Signer(domain, selector, Path(key_file))
        refusal = ""
    except VykhukholError as exc:
        signer, refusal = None, exc.message
    sink.write(_LENGTH.pack(1) + b"!")  # ready: the parent may stop signing itself
    sink.flush()
    while True:
        data = _read_frame(source)
        if data is None:
            return
        if signer is None:
            answer = b"-" + refusal.encode("utf-8")
        else:
            try:
                answer = b"+" + signer.header(data)
            except VykhukholError as exc:
                answer = b"-" + exc.message.encode("utf-8")
        sink.write(_LENGTH.pack(len(answer)) + answer)
        sink.flush()
