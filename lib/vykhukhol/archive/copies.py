"""The kept copies of newsletters' letters: ``letters/<job>.letter``.

A copy of every newsletter's letter is made when the job is created and kept
after it ends, for the archive and for the recipients' own copies
(``{{ web_url }}``, cgi/view.py); ``<job>.publish`` beside it while a public
newsletter waits for its end (:data:`WAITING`, then :data:`SENT` once a letter
of it has gone out: a job that ends without one publishes nothing).
``letters/<job>.<language>.letter`` keeps the letter in another language
when the job has one (docs/using/newsletters.md#newsletter-languages), so a
resend sends each reader the same one again.
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


def keep_version(data: DataDir, job: str, language: str, subject: str, text: str,
                 html: str | None) -> None:
    """Keep a copy of a new job's letter in another ``language``."""
    check_name(job, "newsletter name")
    files.atomic_write(data.letters / f"{job}.{language}.letter",
                       f"Subject: {subject}\n\n" + text + (f"\n{HTML_MARK}\n{html}" if html else ""))


def forget_version(data: DataDir, job: str, language: str) -> None:
    """The kept copy of ``job``'s letter in ``language`` goes (the job no longer has it)."""
    files.remove(data.letters / f"{check_name(job, 'newsletter name')}.{language}.letter")


def kept_versions(data: DataDir, job: str) -> dict[str, tuple[str, str, str | None]]:
    """(subject, text, html) of the kept copies of ``job``'s letter in other languages."""
    found = {}
    for language in svc.LANGUAGES:
        source = files.read_text(data.letters / f"{check_name(job, 'newsletter name')}.{language}.letter")
        if source is not None:
            values, text, html = _parse(source)
            found[language] = (values.get("subject", ""), text, html)
    return found


def forget_newsletter(data: DataDir, job: str) -> None:
    """A cancelled job: its copy goes, and with it any page it would have had."""
    check_name(job, "newsletter name")
    files.remove(data.letters / f"{job}.publish")
    files.remove(data.letters / f"{job}.letter")
    for language in svc.LANGUAGES:
        files.remove(data.letters / f"{job}.{language}.letter")


def kept_newsletter(data: DataDir, job: str) -> Kept | None:
    try:
        check_name(job, "newsletter name")
    except BadInput:
        return None
    source = files.read_text(data.letters / f"{job}.letter")
    if source is None:
        return None
    values, body, html = _parse(source)
    return Kept(job, values.get("subject", ""), body, html,
                [s for s in values.get("services", "").split(",") if s],
                values.get("public") == "yes", values.get("created", "-"))


def _parse(source: str) -> tuple[dict[str, str], str, str | None]:
    """A kept copy's header values, text and HTML."""
    head, _, body = source.partition("\n\n")
    values = {}
    for line in head.split("\n"):
        key, _, value = line.partition(":")
        values[key.strip().lower()] = value.strip()
    html = None
    if f"\n{HTML_MARK}\n" in f"\n{body}":
        body, _, html = f"\n{body}".partition(f"\n{HTML_MARK}\n")
        body = body[1:]
    return values, body, svc.given_html(html)
