"""A service that follows its site's feed (docs/using/feeds.md#feeds): each new item of an RSS
2.0 or Atom feed becomes one newsletter to the service's confirmed
subscribers, made the way ``vykhukhol newsletter create`` makes one.

What is where:

* ``<service folder>/feed.ini`` — the URL and how often to read it (``every``);
  ``<service folder>/feed.txt`` — the letter: a ``Subject:`` line, a blank
  line, the text; Jinja2 templates with ``title``, ``link``, ``summary`` and
  ``published`` of the item beside every newsletter's variables (name,
  unsubscribe_url, …). Written by ``vykhukhol service feed`` and the service's
  admin page (:mod:`.feed_settings`).
* ``data/state/feeds/<service>.state`` — the last answer's ETag and
  Last-Modified, when it was read, the last problem, and the last item
  dropped (for Status).
* ``data/state/feeds/<service>.items`` — the record of the feed read now: one
  line an event, the last line of an item wins:
  ``<key>\\t<seen|new|made|dropped>\\t<job>\\t<item as JSON>`` (the key is a
  hash of the item's id; a new URL starts a new record).

**Sent once, whatever is killed when.** Per read, under the record's lock:

1. the new items are appended to the record as ``new``, with their title,
   link and summary, in one fsynced append, *before* any newsletter exists;
2. each ``new`` item is made into a newsletter *from the record* (not from
   the feed), under a job name that is a hash of the service, the feed's URL
   and the item (``feed-…``): making it again makes the same job, and a job whose
   ``.job`` file exists (written last by ``create``) or that the history
   knows (it ran, or was cancelled) is not made again;
3. ``made`` is appended.

An item whose newsletter cannot be made (its letter does not render) is
tried again at the next runs, :data:`MAX_TRIES` times in all (each failure
appends ``new`` with its count); then ``dropped`` is appended and Status
warns for :data:`DROPPED_DAYS` days, so no item waits for ever.

A kill before 1 loses nothing: the item is not in the record, so the next
read finds it new again. A kill between 1 and 2, or in the middle of
``create`` (its ``.job`` not written yet), leaves ``new``: the next run makes
the job first thing, before it reads the feed. A kill between 2 and 3 leaves
a job and ``new``: the next run finds the job (or its history line) and only
writes ``made``. Two runs at once take turns on the record's lock.

The first successful read only marks what is there as ``seen``: following a
feed never mails its old posts. An item is known by its id (RSS guid, Atom
id, else its link): an edited item sends nothing again. At most
:data:`MAX_NEW` items become letters per read (the newest); older new ones
are marked seen, with a log line, so a feed whose ids all changed at once
cannot flood anybody. A feed that cannot be read or is not a feed (an HTML
page, 100 MB, a timeout) is one log line and a warning on Status until a
read succeeds; the run goes on.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import NamedTuple

import vykhukhol.newsletters as newsletters
from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, LockBusy, VykhukholError
from vykhukhol.files.kv import read_kv, time_of, write_kv
from vykhukhol.newsletters import feed_fetch, history
from vykhukhol.newsletters.feed_settings import (
    Feed,
    ini_path,
    items_path,
    load,
    state_path,
    with_item,
)
from vykhukhol.timeutil import format_time, parse_time

MAX_NEW = 10                  # items that become letters in one read
MAX_TRIES = 3                 # runs that try to make an item's newsletter before it is dropped
DROPPED_DAYS = 7              # days Status warns of a dropped item
STATUSES = ("seen", "new", "made", "dropped")
SHARE = 0.5                   # a read ends inside this share of time_limit, as new letters do


# --- the record ----------------------------------------------------------------------

class Record(NamedTuple):
    key: str
    status: str       # seen, new, made, dropped
    job: str
    item: dict


def _key(item_id: str) -> str:
    return hashlib.sha256(item_id.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def job_name(service: str, url: str, key: str) -> str:
    """The newsletter an item becomes: the same name every time it is made,
    another for the same id in another feed."""
    return "feed-" + hashlib.sha256(f"{service}\0{url}\0{key}".encode(
        "utf-8", "surrogateescape")).hexdigest()[:24]


def records(data: DataDir, name: str) -> dict[str, Record]:
    """Each item's last line (lines that do not parse are skipped)."""
    found: dict[str, Record] = {}
    for line in files.read_lines(items_path(data, name)):
        parts = line.split("\t", 3)
        if len(parts) < 3 or parts[1] not in STATUSES:
            continue
        try:
            item = json.loads(parts[3]) if len(parts) == 4 and parts[3] else {}
        except ValueError:
            item = {}
        found[parts[0]] = Record(parts[0], parts[1], parts[2], item if isinstance(item, dict) else {})
    return found


def _append(data: DataDir, name: str, lines: list[str]) -> None:
    """One fsynced append of whole lines: they are on disk before anything
    they describe is done."""
    if lines:
        path = items_path(data, name)
        files.make_folder(path.parent)
        files.append_line(path, "\n".join(lines))


def _line(key: str, status: str, job: str = "-", item: dict | None = None) -> str:
    return "\t".join((key, status, job, json.dumps(item, ensure_ascii=False) if item else ""))


# --- the run's step --------------------------------------------------------------------

def follow_feeds(run) -> None:
    """After the newsletters step (docs/design/run.md#run-steps, step 2): every feed due is read (at most
    once per its ``every``), its new items recorded and made into
    newsletters, which the next runs send. Nothing here stops the run."""
    for service in svc.load_services(run.data):
        if not ini_path(service).exists():
            continue
        try:
            feed = load(service)
            if feed is not None:
                _follow(run, service, feed)
        except VykhukholError as exc:
            run.log.error(f"feed of {service.name}: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - a feed never stops a run
            run.log.error(f"feed of {service.name}: {type(exc).__name__}: {exc}")


def _follow(run, service: svc.Service, feed: Feed) -> None:
    data, name = run.data, service.name
    try:
        with files.record_lock(items_path(data, name), timeout=0):
            _make_waiting(run, service, feed)
            _read(run, service, feed)
    except LockBusy:
        run.log.write(f"feed of {name}: another run is reading it")


def _due(values: dict[str, str], feed: Feed, moment: datetime) -> bool:
    last = time_of(values, "read_at")
    return last is None or values.get("url") != feed.url \
        or (moment - last).total_seconds() >= feed.every


def _read(run, service: svc.Service, feed: Feed) -> None:
    data, name, moment = run.data, service.name, run.now()
    path = state_path(data, name)
    values = read_kv(path)
    if not _due(values, feed, moment):
        return
    # a socket wait of margin: the name lookup before the connect is outside the deadline's reach
    seconds = min(feed_fetch.SECONDS, run.time_limit * SHARE - run.elapsed()
                  - feed_fetch.SOCKET_SECONDS)
    if seconds < 1:
        run.log.write(f"feed of {name}: no time left in this run to read it")
        return
    same = values.get("url") == feed.url
    values.update(url=feed.url, read_at=format_time(moment))
    try:
        answer = feed_fetch.fetch(feed.url, values.get("etag", "") if same else "",
                                  values.get("modified", "") if same else "", seconds)
        found = feed_fetch.items(answer.body, answer.content_type) if answer.changed else None
    except feed_fetch.FeedProblem as exc:
        run.log.error(f"feed of {name}: {feed.url}: {exc.message}")
        values.update(problem=json.dumps({"t": exc.template, "v": {
            k: str(v) for k, v in exc.values.items()}}, ensure_ascii=False),
            problem_at=values.get("problem_at") or format_time(moment))
        write_kv(path, values)
        return
    values.update(problem="", problem_at="")
    if found is None:  # 304: nothing changed
        write_kv(path, values)
        return
    if not same:  # another feed: its ids say nothing of the last one's
        files.remove(items_path(data, name))
    known = records(data, name)
    first = not values.get("ok_at") or not same
    fresh = [item for item in found if _key(item.key) not in known]
    values.update(etag=answer.etag, modified=answer.modified, ok_at=format_time(moment))
    if first:
        _append(data, name, [_line(_key(i.key), "seen") for i in fresh])
        write_kv(path, values)
        run.log.write(f"feed of {name}: first read, {len(fresh)} item{'' if len(fresh) == 1 else 's'} "
                      "there marked as seen")
        return
    older, fresh = fresh[:-MAX_NEW], fresh[-MAX_NEW:]
    if older:
        run.log.write(f"feed of {name}: {len(older)} more new items than {MAX_NEW} at once; "
                      "the older ones are marked as seen")
    lines = [_line(_key(i.key), "seen") for i in older]
    lines += [_line(_key(i.key), "new", job_name(name, feed.url, _key(i.key)), {
        "title": i.title, "link": i.link, "summary": i.summary, "published": i.published})
        for i in fresh]
    _append(data, name, lines)           # 1. recorded (fsynced) before any newsletter exists
    write_kv(path, values)
    _make_waiting(run, service, feed)    # 2. and 3.


def _made_already(data: DataDir, job: str) -> bool:
    return newsletters.paths(data, job)[0].exists() or any(
        entry.job == job for entry in history.entries(data))


def _make_waiting(run, service: svc.Service, feed: Feed) -> None:
    """Every ``new`` item of the record made into its newsletter, then ``made``;
    one that fails its last try ``dropped``."""
    data, name = run.data, service.name
    subject_template, body_template = feed.letter(run.settings["language"])
    for record in records(data, name).values():
        if record.status != "new":
            continue
        job = record.job if record.job.startswith("feed-") else job_name(name, feed.url, record.key)
        if not _made_already(data, job):
            item = {k: str(record.item.get(k, "")) for k in ("title", "link", "summary",
                                                              "published")}
            subject = " ".join(with_item(subject_template, item).split())
            try:
                newsletters.create(data, [name], subject, with_item(body_template, item),
                                   job_name=job)
            except BadInput as exc:  # the letter cannot be made (a busy lock is not a try)
                _failed(run, name, record, exc)
                continue
            run.log.write(f"feed of {name}: {item['title'] or item['link']!r} became "
                          f"newsletter {job}")
        _append(data, name, [_line(record.key, "made", job)])


def _failed(run, name: str, record: Record, exc: BadInput) -> None:
    """One more failed try of an item; at :data:`MAX_TRIES`, dropped with a warning."""
    tries = _tries(record.item) + 1
    what = record.item.get("title") or record.item.get("link") or record.key
    if tries < MAX_TRIES:
        run.log.error(f"feed of {name}: the letter for {what} cannot be made: {exc.message}; "
                      f"it is tried again next run ({tries} of {MAX_TRIES} tries)")
        _append(run.data, name, [_line(record.key, "new", record.job,
                                       {**record.item, "tries": tries})])
        return
    run.log.error(f"feed of {name}: the letter for {what} cannot be made: {exc.message}; "
                  f"dropped after {MAX_TRIES} tries")
    _append(run.data, name, [_line(record.key, "dropped", record.job, record.item)])
    path = state_path(run.data, name)
    values = read_kv(path)
    values.update(dropped=json.dumps({"title": str(what)[:feed_fetch.MAX_TITLE],
                                      "t": exc.template, "v": {
                                          k: str(v) for k, v in exc.values.items()}},
                                     ensure_ascii=False),
                  dropped_at=format_time(run.now()))
    write_kv(path, values)


def _tries(item: dict) -> int:
    try:
        return max(int(item.get("tries", 0)), 0)
    except (TypeError, ValueError):
        return 0


# --- what the rest of the house asks ------------------------------------------------------

def next_read(data: DataDir) -> float | None:
    """When the earliest feed is due (epoch seconds; now if an item waits to
    be made), or None when no service follows a feed: the idle proof's bound."""
    soonest = None
    for service in svc.load_services(data):
        feed = load(service) if ini_path(service).exists() else None
        if feed is None:
            continue
        values = read_kv(state_path(data, service.name))
        last = time_of(values, "read_at")
        due = 0.0 if last is None or values.get("url") != feed.url \
            or any(r.status == "new" for r in records(data, service.name).values()) \
            else last.timestamp() + feed.every
        soonest = due if soonest is None else min(soonest, due)
    return soonest


class Dropped(NamedTuple):
    title: str                # the item's title (else its link)
    why: BadInput
    at: datetime


class Standing(NamedTuple):
    url: str
    every: int
    read_at: datetime | None
    ok_at: datetime | None
    problem: BadInput | None
    problem_at: datetime | None
    dropped: Dropped | None   # the last item dropped after its tries


def _said(text: str) -> tuple[dict, BadInput]:
    """A problem as the state file keeps it (JSON of its template and values)."""
    try:
        said = json.loads(text)
        return said, BadInput(said["t"], **said["v"])
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return {}, BadInput("{reason}", reason=text[:300])


def standing(data: DataDir, service: svc.Service) -> Standing | None:
    """What the service page and ``service feed S`` show; None: no feed."""
    feed = load(service)
    if feed is None:
        return None
    values = read_kv(state_path(data, service.name))
    problem = _said(values["problem"])[1] if values.get("problem") else None

    def moment(key: str) -> datetime | None:
        try:
            return parse_time(values.get(key) or "-")
        except BadInput:
            return None
    dropped, dropped_at = None, moment("dropped_at")
    if values.get("dropped") and dropped_at is not None:
        said, why = _said(values["dropped"])
        dropped = Dropped(str(said.get("title", "")), why, dropped_at)
    return Standing(feed.url, feed.every, moment("read_at"), moment("ok_at"), problem,
                    moment("problem_at"), dropped)


def problems(data: DataDir) -> list[tuple[str, str, BadInput]]:
    """(service, url, why) of every feed whose last read failed: Status warns."""
    found = []
    for service in svc.load_services(data):
        if not ini_path(service).exists():
            continue
        now_ = standing(data, service)
        if now_ is not None and now_.problem is not None:
            found.append((service.name, now_.url, now_.problem))
    return found


def dropped(data: DataDir, moment: datetime) -> list[tuple[str, Dropped]]:
    """(service, the item) of every feed that dropped an item in the last
    :data:`DROPPED_DAYS` days: Status warns."""
    found = []
    for service in svc.load_services(data):
        if not ini_path(service).exists():
            continue
        now_ = standing(data, service)
        if now_ is not None and now_.dropped is not None \
                and (moment - now_.dropped.at).total_seconds() < DROPPED_DAYS * 86400:
            found.append((service.name, now_.dropped))
    return found
