"""The idle cron tick: nothing due, proved from one small file, at little
more than Python's own start-up.

Cron hits the sender every minute, and most of those runs have nothing to do.
A full run that found nothing to do leaves ``data/state/idle``: the time T
before which nothing can be due (the earliest next-due summary of an enabled
service, the start of a newsletter, the next read of the bounce mailbox, at
most :data:`MAX_IDLE` ahead), and *what that proof rests on* — the stamp
(inode, size, mtime, ctime) of every file whose change could make something
due sooner (settings.ini, each service.ini, subscribers.txt and letter file,
each newsletter job), the listing of every folder a new service, letter or
job would appear in, and the journals and block flag that must stay empty.

A tick (:func:`tick`, called by the CGI cron script and the cron URL before
anything else is imported; they write its answer) re-checks all of it with ``stat`` and ``listdir``;
while the time is before T and nothing differs, it does what an idle full run
does to the state — the round robin's turn passes to the enabled service in
its send window served longest ago (:func:`take_turn`), so the order in which
services with work are served is the same with or without this file — writes
one line to the run log and answers. Anything that does not match — a
subscribe, an admin edit, an FTP upload, a new job, a mode switch, a lock
held, the clock past T, a damaged file — sends the tick the full way, which
writes a new proof if it again finds nothing to do. So a stale file can cost
one slower run, never a letter.

Only the standard library is imported at module level (``os``, ``time``);
the proof itself (:func:`prove`) is written by the full run, which has
everything imported already. This module reads no subscriber file, letter or
settings.ini on the fast path.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing itself is not imported: the tick pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable

VERSION = "1"
MAX_IDLE = 3600        # seconds a proof holds at most: a full run at least hourly
MAILBOX_EVERY = 600    # seconds between reads of mail.bounce_mailbox while idle
RACY_SECONDS = 2.0     # a file changed this recently may change again unseen (coarse clocks)
RACY = RACY_SECONDS
STATE_FILE = ("state", "idle")


# --- what a proof rests on ------------------------------------------------------

def _stamp(path: str) -> str:
    """A file's identity and version; ``-`` when it is not there."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "-"
    except OSError:
        return "?"  # unreadable now: never equal to what a proof recorded
    return f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def _listing(path: str) -> str:
    try:
        return "/".join(sorted(os.listdir(path)))
    except FileNotFoundError:
        return "-"
    except OSError:
        return "?"


def _empty(path: str) -> str:
    """``0`` when a journal or flag is absent or empty, ``1`` otherwise."""
    try:
        return "0" if os.stat(path).st_size == 0 else "1"
    except FileNotFoundError:
        return "0"
    except OSError:
        return "?"


CHECKS = {"file": _stamp, "dir": _listing, "empty": _empty}


def current(root: str, kind: str, rel: str) -> str:
    return CHECKS[kind](os.path.join(root, rel))


# --- the tick -----------------------------------------------------------------------

class Proof:
    """``data/state/idle`` as read back."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.watch: list[tuple[str, str, str]] = []     # (kind, path in data/, value)
        self.services: list[tuple[str, str]] = []       # (name, send window) enabled


def read_proof(root: str) -> Proof | None:
    try:
        with open(os.path.join(root, *STATE_FILE), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    proof = Proof()
    if not text.endswith("\nend\n"):
        return None  # torn or hand-made: the full way
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "watch" and len(parts) == 4 and parts[1] in CHECKS:
            proof.watch.append((parts[1], parts[2], parts[3]))
        elif parts[0] == "service" and len(parts) == 3:
            proof.services.append((parts[1], parts[2]))
        elif len(parts) == 2:
            proof.values[parts[0]] = parts[1]
    return proof if proof.values.get("version") == VERSION else None


def holds(root: str, moment: float | None = None) -> Proof | None:
    """The proof, if it still shows that nothing is due now; else None."""
    proof = read_proof(root)
    if proof is None:
        return None
    moment = time.time() if moment is None else moment
    try:
        if not float(proof.values["built"]) <= moment < float(proof.values["until"]):
            return None
    except (KeyError, ValueError):
        return None
    for kind, rel, value in proof.watch:
        if current(root, kind, rel) != value:
            return None
    return proof


def allowed(remote: str, networks: str) -> bool:
    """Whether ``remote`` may start a run under ``cron_allow`` (empty: anyone)."""
    if not networks:
        return True
    import ipaddress  # only for a site that limits its callers

    try:
        address = ipaddress.ip_address(remote.split("%")[0])
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net, strict=False) for net in networks.split())


def caller_allowed(proof: Proof, client: Callable[[str], str] | None) -> bool:
    """cron_allow as the full way applies it, to the address the web trusts:
    ``client`` answers it given the site's trusted_proxies (None: no address)."""
    networks = proof.values.get("cron_allow", "")
    if not networks:
        return True
    return allowed(client(proof.values.get("trusted_proxies", "")) if client else "", networks)


def tick(root: str, client: Callable[[str], str] | None = None,
         moment: float | None = None) -> str | None:
    """The cron run's answer when the proof holds (the round robin moved on and
    the log told), or None: then the caller runs the full sender. ``client``
    is the request's address given the trusted_proxies (the web's
    ``clients.client_address`` on the CGI or WSGI request), for cron_allow."""
    began = time.monotonic()
    proof = holds(root, moment)
    if proof is None or not caller_allowed(proof, client):
        return None  # a caller not allowed gets its 403 from the full way
    from datetime import datetime, timezone

    from vykhukhol.timeutil import format_time

    now = datetime.fromtimestamp(time.time() if moment is None else moment, timezone.utc)
    lease = os.urandom(8).hex()
    from vykhukhol.errors import VykhukholError

    try:
        take_turn(root, proof, now)
    except (OSError, VykhukholError):
        return None  # the full way reports what is wrong with state/
    until = format_time(datetime.fromtimestamp(float(proof.values["until"]), timezone.utc))
    elapsed = time.monotonic() - began
    from vykhukhol.files.runlog import ended_line

    _log(root, lease, now, ended_line(elapsed, f"all done (nothing due before {until})", 0))
    return (f"run {lease}\nstarted {format_time(now)}\nnothing due before {until}\n"
            f"ended {format_time(now)}: done\n")


def take_turn(root: str, proof: Proof, now) -> str | None:
    """What an idle full run does to the round robin (sender steps 3-4): the
    enabled service in its send window served longest ago counts as served now.
    Returns its name (None: no service is in its window)."""
    import vykhukhol.sender.rotation as rotation

    zone = proof.values.get("timezone", "UTC")
    ready = [name for name, window in proof.services if not window or _in_window(window, now, zone)]
    return rotation.take_turn(os.path.join(root, "state", "served"), ready, now)


def _in_window(window: str, now, zone: str) -> bool:
    from vykhukhol.services.schedule import matches_expr  # only for a site with send windows

    return matches_expr(window, now, zone)


def _log(root: str, lease: str, now, message: str) -> None:
    """One line in the run log, as the admin's list of runs reads it; never raises."""
    import vykhukhol.files.runlog as runlog
    from vykhukhol.errors import VykhukholError

    try:
        runlog.append(os.path.join(root, "log", "run.log"), now, lease, "info", message)
    except (OSError, VykhukholError) as exc:  # the log costs the log, never the tick
        import sys

        print(f"vykhukhol: the run log cannot be written: {exc}", file=sys.stderr)


def data_root(scripts_dir: str) -> str:
    """:func:`vykhukhol.datadir.locate` without pathlib and dataclasses (the same
    order: ``VYKHUKHOL_DATA``, ``vykhukhol.path`` beside the scripts, else the
    checkout's ``data/``; a test holds the two together)."""
    env = os.environ.get("VYKHUKHOL_DATA")
    if env:
        return os.path.realpath(env)
    checkout = os.path.realpath(__file__)
    for _ in range(4):  # lib/vykhukhol/sender/idle.py → the checkout
        checkout = os.path.dirname(checkout)
    for folder in (scripts_dir, os.path.join(checkout, "cgi")):
        pointer = os.path.join(folder, "vykhukhol.path")
        if folder and os.path.isfile(pointer):
            with open(pointer, encoding="utf-8") as handle:
                text = handle.read().strip()
            if text:
                return os.path.realpath(os.path.join(os.path.dirname(pointer), text))
    return os.path.realpath(os.path.join(checkout, "data"))


# --- the proof, written by a full run that found nothing to do ---------------------

def watched(data) -> list[tuple[str, str, str]]:
    """Every check a proof rests on, with its value now."""
    import glob

    root = str(data.root)
    rels = [("file", "settings.ini"), ("empty", "state/blocked"),
            ("empty", "state/news.journal"), ("empty", "state/unsent-confirmations"),
            ("dir", "services"), ("dir", "newsletters"),
            ("file", "webhooks/endpoints.ini"), ("file", "webhooks/events.log")]
    for job in sorted(glob.glob(os.path.join(root, "newsletters", "*.job"))):
        rels.append(("file", os.path.relpath(job, root)))
    services_dir = os.path.join(root, "services")
    for db in sorted(os.listdir(services_dir)) if os.path.isdir(services_dir) else []:
        db_dir = os.path.join(services_dir, db)
        if not os.path.isdir(db_dir):
            continue
        rels += [("dir", f"services/{db}"), ("empty", f"state/db-{db}.journal")]
        for name in sorted(os.listdir(db_dir)):
            folder = f"services/{db}/{name}"
            if not os.path.isdir(os.path.join(root, folder)):
                continue
            rels += [("dir", folder), ("file", f"{folder}/service.ini"),
                     ("file", f"{folder}/subscribers.txt"), ("dir", f"{folder}/letters"),
                     ("file", f"{folder}/feed.ini")]
            letters = os.path.join(root, folder, "letters")
            for letter in sorted(os.listdir(letters)) if os.path.isdir(letters) else []:
                rels.append(("file", f"{folder}/letters/{letter}"))
    return [(kind, rel, current(root, kind, rel)) for kind, rel in rels]


def after_run(run) -> None:
    """Called at the end of every full run: a proof after an idle one, else none."""
    from vykhukhol.states import Outcome

    if run.report.outcome is Outcome.DONE and not run.report.sent:
        prove(run)
    else:
        _forget(run)


def _forget(run) -> None:
    from vykhukhol.errors import VykhukholError

    try:
        forget(run.data)
    except VykhukholError as exc:  # a stale proof fails its own checks anyway
        run.log.error(f"the idle proof could not be removed: {exc.message}")


def forget(data) -> None:
    from vykhukhol import files

    files.remove(data.state / STATE_FILE[1])


def prove(run) -> float | None:
    """After a full run that sent nothing and stopped for no reason: write the
    proof that nothing is due before T, and return T (epoch seconds). None
    (and no proof on disk) when something may be due, or cannot be ruled out."""
    try:
        until = _prove(run)
    except Exception as exc:  # noqa: BLE001 - a proof is an optimisation: without it, the full way
        run.log.error(f"the idle proof could not be written: {exc}")
        until = None
    if until is None:
        _forget(run)
    return until


def _prove(run) -> float | None:
    from vykhukhol import files, newsletters, webhooks
    from vykhukhol import services as svc
    from vykhukhol import settings as settings_mod
    from vykhukhol.newsletters import feeds
    from vykhukhol.services import due_summary
    from vykhukhol.services.rules import rules_of
    from vykhukhol.timeutil import parse_time

    data = run.data
    moment = run.now().timestamp()  # the run's time: a test may give it another
    before = watched(data)
    if any(value in ("?", "1") for _, _, value in before):
        return None  # something unreadable, a journal to fold, or a block
    settings = settings_mod.load(data.settings)
    if settings["mode"] != "working" or settings.secret_problem:
        return None
    if any(name.endswith(".busy") for name in os.listdir(data.newsletters)) \
            if data.newsletters.is_dir() else False:
        return None
    until = moment + MAX_IDLE
    if settings["mail.bounce_mailbox"]:
        until = min(until, moment + MAILBOX_EVERY)
    for job in newsletters.list_jobs(data):
        until = min(until, job.start.timestamp())
    feed_due = feeds.next_read(data)  # a feed's next read (0: one is due now)
    if feed_due is not None:
        until = min(until, feed_due)
    hook_due = webhooks.next_due(data)  # a webhook's next delivery (0: one is due now)
    if hook_due is not None:
        until = min(until, hook_due)
    enabled = []
    for service in svc.load_services(data):
        if svc.db_lock(data, service.db).holder() is not None:
            return None
        if not service.enabled:
            continue
        if "\t" in service.send_window or "\n" in service.send_window:
            return None
        enabled.append(service)
        summary = due_summary.read_due(data, service.name)
        if summary is None or summary.fingerprint != rules_of(run.settings, service).fingerprint() \
                or summary.stamp != due_summary.file_stamp(service.subscribers_path):
            return None
        next_due = parse_time(summary.next)
        if next_due is not None:
            until = min(until, next_due.timestamp())
    if not enabled or until <= moment:
        return None  # no service enabled: the full way tells the admin every run
    after = watched(data)
    if after != before:
        return None
    racy = (time.time() - RACY) * 1e9  # file times are the real clock's
    for kind, _, value in after:
        if kind == "file" and value != "-" and int(value.rsplit(":", 1)[1]) > racy:
            return None  # changed a moment ago: a second change could keep its stamp
    lines = [f"version\t{VERSION}\n", f"built\t{moment!r}\n", f"until\t{until!r}\n",
             f"timezone\t{settings['timezone']}\n", f"cron_allow\t{settings['cron_allow']}\n",
             f"trusted_proxies\t{settings['trusted_proxies']}\n"]
    lines += [f"service\t{s.name}\t{s.send_window}\n" for s in enabled]
    lines += [f"watch\t{kind}\t{rel}\t{value}\n" for kind, rel, value in after]
    lines.append("end\n")
    files.atomic_write(data.state / STATE_FILE[1], lines)
    return until
