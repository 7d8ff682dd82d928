"""What the bounce reader leaves for people: ``data/log/bounces.log`` and the
messages kept for the admin (``data/bounces/kept/``).

bounces.log is tab-separated, one line per message (or per problem reading a
mailbox): time (UTC), message id (the first 12 hex digits of the SHA-256 of
its bytes, or ``-``), kind, what it concerns (``service NAME``, ``newsletter
JOB`` or ``-``), the address, the source (``imap``, ``pop3``, ``pipe``) and
the reason: for a refusal, "; "-separated pieces — the reading (``address
gone: userunknown 5.1.1 550``), what decided it (``rule: status 5.1.1
(sure)``), the server's words (``server said: …``) and the detector's
verdict (older lines have only the first and the last).
Rotated like run.log (1 MB, 3 kept). The admin's Bounces page and
``status`` read it back.

A kept message is stored as it came, cut to :data:`KEPT_BYTES`, named by its
time and id; only the newest :data:`KEPT_COUNT` are kept.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.errors import StorageError
from vykhukhol.files import kv
from vykhukhol.files.runlog import KEEP, MAX_BYTES, one_line
from vykhukhol.timeutil import format_time, now, parse_time

KEPT_BYTES = 256_000  # of a kept message, stored for the admin
KEPT_COUNT = 200      # kept messages stored at most (the oldest go first)
PIPE, IMAP, POP3 = "pipe", "imap", "pop3"
REPEATED = "repeated"  # the kind of the line of a message read again
REASON_CHARS = 600     # of a line's reason: the reading, its rule, the server's words, the verdict


@dataclass
class Line:
    time: str
    message: str
    kind: str
    target: str
    address: str
    source: str
    reason: str

    def text(self) -> str:
        return "\t".join(one_line(v) or "-" for v in (
            self.time, self.message, self.kind, self.target, self.address, self.source,
            self.reason[:REASON_CHARS]))


def log_path(data: DataDir) -> Path:
    return data.bounce_log


def kept_folder(data: DataDir) -> Path:
    return data.kept_bounces


def line(message: str, kind: str, target: str, address: str, source: str, reason: str,
         moment: datetime | None = None) -> Line:
    return Line(format_time(moment or now()), message, kind, target, address, source, reason)


def write(data: DataDir, lines: list[Line]) -> None:
    """Append lines to bounces.log (one write each; rotated when full)."""
    path = log_path(data)
    files.make_folder(path.parent)
    files.rotate(path, MAX_BYTES, KEEP)
    file = files.AppendFile(path)
    try:
        for item in lines:
            file.append(item.text(), sync=False)
    finally:
        file.close(sync=True)


def problem(data: DataDir, source: str, reason: str) -> None:
    """A line about the mailbox itself (unreachable, refused the login…); never raises."""
    try:
        write(data, [line("-", "problem", "-", "-", source, reason)])
    except (StorageError, OSError):
        pass


def recent(data: DataDir, count: int = 200) -> list[Line]:
    """The last ``count`` results, newest first, each message once (a kill
    between writing a batch's lines and marking it done can repeat them, and
    a message read again has a ``repeated`` line beside its result)."""
    tail: deque[str] = deque(maxlen=count * 2)
    for text in files.read_lines(log_path(data)):
        tail.append(text)
    items = [Line(*parts) for parts in (text.split("\t") for text in tail) if len(parts) == 7]
    known = {item.message for item in items if item.kind != REPEATED}
    seen: set[tuple[str, str, str]] = set()
    result: list[Line] = []
    for item in reversed(items):
        key = (item.message, item.kind, item.target)
        if item.message != "-" and (key in seen or (item.kind == REPEATED and item.message in known)):
            continue
        seen.add(key)
        result.append(item)
        if len(result) >= count:
            break
    return result


def piped_since(data: DataDir, moment: datetime) -> bool:
    """Did a message come through ``vykhukhol bounce`` after ``moment``?"""
    for path in (log_path(data), Path(f"{log_path(data)}.1")):
        for text in files.read_lines(path):
            parts = text.split("\t")
            if len(parts) == 7 and parts[5] == PIPE:
                try:
                    stamp = parse_time(parts[0])
                except Exception:  # noqa: BLE001 - a torn line
                    continue
                if stamp is not None and stamp >= moment:
                    return True
    return False


def keep(data: DataDir, message_id: str, raw: bytes) -> str:
    """Store a message for the admin; returns its file name. Idempotent per message."""
    folder = kept_folder(data)
    existing = sorted(folder.glob(f"*-{message_id}.eml")) if folder.is_dir() else []
    if existing:
        return existing[0].name
    name = f"{now():%Y%m%d-%H%M%S}-{message_id}.eml"
    text = raw[:KEPT_BYTES].decode("utf-8", "surrogateescape")
    files.atomic_write(folder / name, text, new_mode=0o600)
    stored = sorted(folder.glob("*.eml"))
    for old in stored[:-KEPT_COUNT]:
        files.remove(old)
    return name


def kept_messages(data: DataDir) -> list[str]:
    """Names of the kept messages, newest first."""
    folder = kept_folder(data)
    return sorted((p.name for p in folder.glob("*.eml")), reverse=True) if folder.is_dir() else []


def read_kept(data: DataDir, name: str) -> str | None:
    """A kept message's text (bytes that are not UTF-8 shown as U+FFFD), or None."""
    import re

    if not re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{16}\.eml", name or ""):
        return None
    return files.read_text(kept_folder(data) / name)


PIPE_RECENT_DAYS = 30  # a piped message this recent counts as a configured bounce source


def no_source(data: DataDir, settings) -> bool:
    """True when letters leave (smtp or sendmail) but nothing reads their bounces:
    no ``mail.bounce_mailbox``, and no message piped into ``vykhukhol bounce``
    in the last :data:`PIPE_RECENT_DAYS` days."""
    from datetime import timedelta

    if settings["mail.transport"] not in ("smtp", "sendmail") or settings["mail.bounce_mailbox"]:
        return False
    return not piped_since(data, now() - timedelta(days=PIPE_RECENT_DAYS))



# --- bounces per day, for the status chart -------------------------------------------

BOUNCED_DAYS = 60  # days kept in data/state/bounced, like the letters' data/state/daily


def count_day(data: DataDir, zone: str, n: int, once: str) -> None:
    """``n`` more bounces on today's date in ``zone`` (the status chart's second
    series). ``once``: the bounce batch they come from; the reader applies
    batches one at a time and finishes a killed one before the next, so a batch
    already counted (the last one) counts nothing again."""
    from zoneinfo import ZoneInfo

    if n <= 0:
        return
    day = now().astimezone(ZoneInfo(zone)).date().isoformat()

    def change(values: dict[str, str]) -> None:
        if values.get("once") == once:
            return
        values["once"] = once
        values[day] = str(int(values.get(day, "0") or 0) + n)
        for old in sorted(k for k in values if k != "once")[:-BOUNCED_DAYS]:
            del values[old]
    kv.change_kv(data.state / "bounced", change)


def per_day(data: DataDir) -> dict[str, int]:
    """Bounces by date (``YYYY-MM-DD`` in the site's timezone)."""
    values = kv.read_kv(data.state / "bounced")
    return {day: int(n) for day, n in values.items() if day != "once" and n.isdigit()}
