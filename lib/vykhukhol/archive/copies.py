"""The kept copies of newsletters' letters: ``letters/<job>.letter``.

A copy of every newsletter's letter is made when the job is created and kept
after it ends, for the archive and for the recipients' own copies
(``{{ web_url }}``, cgi/view.py); ``<job>.publish`` beside it while a public
newsletter waits for its end (:data:`WAITING`, then :data:`SENT` once a letter
of it has gone out: a job that ends without one publishes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput
from vykhukhol.timeutil import format_time, now

WAITING, SENT = "waiting", "sent"
HTML_MARK = "=== html ==="  # a kept copy's HTML part follows this line, as in a job's .letter


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
