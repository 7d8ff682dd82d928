"""The public archive (SPEC 7): each service's public letters as static files.

``archive/<service>/`` beside ``cgi/`` (or the ``archive_dir`` setting) holds

* ``index.html`` — the published letters, newest first, with the feed linked;
* one page per letter: ``letter-NNN.html`` (series letter NNN) and
  ``news-<job>.html`` (a newsletter);
* ``feed.atom`` — the same letters as an Atom feed (RFC 4287).

They are written by the run that publishes a letter, so a visitor costs the
host no Python at all: Apache serves them as files (``archive/.htaccess``),
``serve`` and Passenger through :func:`vykhukhol.web.archive.static`.

What is published: a service whose ``archive`` is on, and of it each series
letter marked ``Public: yes`` once it has first gone out (or, when it went
out while the archive was off, when the archive is turned on), and each
newsletter created ``--public`` once its job has ended. A letter is rendered as a
recipient with no name would read it: ``name`` and ``email`` are empty, and
the personal links (``unsubscribe_url``, ``manage_url``) are a neutral text,
so no page can name or act for anyone. Pages show the text part, escaped,
with its web addresses made links; no HTML of a letter reaches a page.

Where things are kept, in the data directory (never served):

* ``state/archive/<service>.txt`` — what is published: ``time<TAB>kind<TAB>ref``
  lines, ``kind`` ``letter`` (ref: its number) or ``news`` (ref: the job);
* ``letters/<job>.letter`` — a copy of every newsletter's letter, made when
  the job is created and kept after it ends, for the archive and for the
  recipients' own copies (``{{ web_url }}``, cgi/view.py); ``<job>.publish``
  beside it while a public newsletter waits for its end (``waiting``, then
  ``sent`` once a letter of it has gone out: a job that ends without one, all
  its recipients gone meanwhile, publishes nothing).

The archive's files are rebuilt whole (they are few) each time something is
published or the switch is moved; a page whose letter is no longer public or
no longer there disappears at that rebuild.

This module is the store: where things are, what is published, the kept
copies of newsletters. :mod:`vykhukhol.archive.pages` draws the files (from
the templates in ``templates/archive/``); :mod:`vykhukhol.archive.publish`
decides when (after a run, at the switch). A recipient's own copy is the web
side's (:mod:`vykhukhol.web.archive`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vykhukhol import files, tokens
from vykhukhol import services as svc
from vykhukhol.datadir import CHECKOUT, DataDir, check_name
from vykhukhol.errors import BadInput
from vykhukhol.timeutil import format_time, now

if TYPE_CHECKING:
    from vykhukhol.settings import Settings

#: The names a file of a service's archive may have; the web routes serve no other.
FILE_NAME = re.compile(r"index\.html|feed\.atom|letter-[0-9]{3}\.html|news-[a-z0-9][a-z0-9_-]{0,39}\.html")
PREVIEW = "preview"  # the item of the admin's test letter: no copy to show
WAITING, SENT = "waiting", "sent"
HTML_MARK = "=== html ==="  # a kept copy's HTML part follows this line, as in a job's .letter


def folder(settings: Settings) -> Path:
    """Where the archive is written: ``archive_dir``, else ``archive/`` of the checkout."""
    return Path(settings["archive_dir"] or CHECKOUT / "archive")


def index_url(settings: Settings, service: str) -> str:
    """The address of the service's archive (its index page)."""
    return f"{settings['site_url'].rstrip('/')}/archive/{service}/"


def page_name(kind: str, ref: str) -> str:
    return f"letter-{int(ref):03d}.html" if kind == "letter" else f"news-{ref}.html"


def page_url(settings: Settings, service: str, kind: str, ref: str) -> str:
    return index_url(settings, service) + page_name(kind, ref)


def web_url(settings: Settings, service: svc.Service, item: str, email: str, public: bool) -> str:
    """``{{ web_url }}`` of a letter: its archive page when it is public there,
    else a signed link to the recipient's own copy."""
    if public and service.archive:
        return page_url(settings, service.name, "letter", item)
    return tokens.view_link(settings["site_url"], settings.secret, service.name, email, item)


# --- newsletters' letters, kept --------------------------------------------------

@dataclass
class Kept:
    """A newsletter's letter as its job was created."""

    job: str
    subject: str
    text: str
    html: str | None
    services: list[str]
    public: bool
    created: str


def keep_newsletter(data: DataDir, job: str, services: list[str], subject: str, text: str,
                    html: str | None, public: bool) -> None:
    """Keep a copy of a new job's letter (called by :func:`newsletters.create`)."""
    check_name(job, "newsletter name")
    head = (f"Subject: {subject}\nServices: {','.join(services)}\n"
            f"Public: {'yes' if public else 'no'}\nCreated: {format_time(now())}\n\n")
    files.atomic_write(data.letters / f"{job}.letter",
                       head + text + (f"\n{HTML_MARK}\n{html}" if html else ""))
    if public:
        files.atomic_write(data.letters / f"{job}.publish", WAITING + "\n")


def forget_newsletter(data: DataDir, job: str) -> None:
    """A cancelled job: its copy goes, and with it any page it would have had."""
    check_name(job, "newsletter name")
    files.remove(data.letters / f"{job}.publish")
    files.remove(data.letters / f"{job}.letter")


def kept_newsletter(data: DataDir, job: str) -> Kept | None:
    try:
        check_name(job, "newsletter name")
    except BadInput:
        return None
    source = files.read_text(data.letters / f"{job}.letter")
    if source is None:
        return None
    head, _, body = source.partition("\n\n")
    values = {}
    for line in head.split("\n"):
        key, _, value = line.partition(":")
        values[key.strip().lower()] = value.strip()
    html = None
    if f"\n{HTML_MARK}\n" in f"\n{body}":
        body, _, html = f"\n{body}".partition(f"\n{HTML_MARK}\n")
        body = body[1:]
    return Kept(job, values.get("subject", ""), body, svc.given_html(html),
                [s for s in values.get("services", "").split(",") if s],
                values.get("public") == "yes", values.get("created", "-"))


# --- what is published --------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One published letter: when, and which (a series letter's number or a job)."""

    time: str
    kind: str  # "letter" or "news"
    ref: str


def _entries_path(data: DataDir, service: str) -> Path:
    return data.state / "archive" / f"{check_name(service, 'service name')}.txt"


def entries(data: DataDir, service: str) -> list[Entry]:
    """What the service's archive has published, in the order it was."""
    found = []
    for line in files.read_lines(_entries_path(data, service)):
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1] in ("letter", "news"):
            found.append(Entry(parts[0], parts[1], parts[2]))
    return found


def add_entries(data: DataDir, service: str, new: list[Entry]) -> None:
    """``new`` published (those already there stay as they were)."""
    path = _entries_path(data, service)
    with files.record_lock(path):
        known = entries(data, service)
        have = {(e.kind, e.ref) for e in known}
        known += [e for e in new if (e.kind, e.ref) not in have]
        files.atomic_write(path, [f"{e.time}\t{e.kind}\t{e.ref}\n" for e in known])
