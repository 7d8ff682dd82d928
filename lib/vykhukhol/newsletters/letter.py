"""A newsletter job's letter, ``<job>.letter``: what every recipient gets.

A ``Subject:`` header (and ``Format: markdown`` when the text is Markdown,
which then makes both parts: docs/using/newsletters.md#newsletter-markdown), a
blank line, the text, and optionally a line ``=== html ===`` followed by the
HTML alternative. A file without ``Format`` is plain text, as every letter was
before. A copy of the parts as sent is kept for the archive
(:func:`vykhukhol.archive.keep_newsletter`).

``<job>.<language>.letter`` (``<job>.en.letter``), of the same form, is the
letter in another language (docs/using/newsletters.md#newsletter-languages): a
recipient whose own language it is gets it, everyone else the main one.
"""

from __future__ import annotations

import os
from pathlib import Path

from vykhukhol import archive, files
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, LockBusy, NotFound, StorageError
from vykhukhol.newsletters.jobs import lock, read_job
from vykhukhol.services import LANGUAGES, MARKDOWN, check_parts, given_html, sent_parts

HTML_MARK = "=== html ==="


def read_source(data: DataDir, name: str) -> tuple[str, str, str | None, bool]:
    """(subject, text, html, markdown) of a job as written; NotFound when the file is missing."""
    text = files.read_text(data.job(name, "letter"))
    if text is None:
        raise NotFound(f"newsletter {name!r} has no letter file")
    return _parse(text)


def _parse(text: str) -> tuple[str, str, str | None, bool]:
    head, _, body = text.partition("\n\n")
    subject, markdown = "", False
    for line in head.split("\n"):  # not splitlines(): a subject may hold U+2028 and kin
        key, _, value = line.partition(":")
        if key.strip().lower() == "subject":
            subject = value.strip()
        elif key.strip().lower() == "format":
            markdown = value.strip().lower() == MARKDOWN
    html = None
    if f"\n{HTML_MARK}\n" in f"\n{body}":
        body, _, html = f"\n{body}".partition(f"\n{HTML_MARK}\n")
        body = body[1:]
    return subject, body, given_html(html), markdown


def read_letter(data: DataDir, name: str) -> tuple[str, str, str | None]:
    """(subject, text, html) templates of a job as it is sent (a Markdown
    letter's two parts made from it); NotFound when the file is missing."""
    subject, body, html, markdown = read_source(data, name)
    return (subject, *sent_parts(body, html, markdown))


def version_path(data: DataDir, name: str, language: str) -> Path:
    """Where job ``name`` keeps its letter in ``language``."""
    return data.job(name, f"{language}.letter")


def read_version_sources(data: DataDir, name: str) -> dict[str, tuple[str, str, str | None, bool]]:
    """(subject, text, html, markdown) of the job's letter in each other
    language it has, as written."""
    found = {}
    for language in LANGUAGES:
        text = files.read_text(version_path(data, name, language))
        if text is not None:
            found[language] = _parse(text)
    return found


def read_versions(data: DataDir, name: str) -> dict[str, tuple[str, str, str | None]]:
    """(subject, text, html) templates of the job's letter in each other
    language it has, as they are sent."""
    return {language: (subject, *sent_parts(body, html, markdown))
            for language, (subject, body, html, markdown)
            in read_version_sources(data, name).items()}


def letter_file(subject: str, text: str, html: str | None, markdown: bool = False) -> str:
    """The job's letter file of these parts."""
    head = f"Subject: {subject}\n" + (f"Format: {MARKDOWN}\n" if markdown else "")
    return f"{head}\n{text}" + (f"\n{HTML_MARK}\n{html}" if html else "")


def check_letter(subject: str, text: str, html: str | None, markdown: bool = False) -> str:
    """The subject, stripped, of a letter that may be sent; BadInput says why not."""
    subject = (subject or "").strip()
    if not subject or any(c in subject for c in "\r\n"):
        raise BadInput("subject: must be one non-empty line")
    check_parts(subject, text, html, markdown)
    if not (text or "").strip():
        raise BadInput("text: must not be empty")
    return subject


def edit_letter(data: DataDir, name: str, subject: str, text: str, html: str | None,
                markdown: bool = False,
                versions: dict[str, tuple[str, str, str | None] | None] | None = None) -> None:
    """A waiting job's new subject, text and HTML. Changed under the
    newsletters' lock, the one a run holds from before it reads a job's letter
    until it has handed its letters over: so a run sends either the old letter
    or the new one, never half of each, and once a run has begun the job
    (``first_run``, written under that lock before its first letter leaves)
    it is refused. A run holding the lock right now: refused, try again.
    ``versions``: the letter in other languages, (subject, text, html) by
    language, None for one that goes; a language not named stays as it is."""
    html = given_html(html)
    subject = check_letter(subject, text, html, markdown)
    changed = {language: None if version is None else
               (check_letter(version[0], version[1], given_html(version[2]), markdown),
                version[1], given_html(version[2]))
               for language, version in (versions or {}).items()}
    news = lock(data)
    news.ensure()
    try:
        # stamped as a run's, so a killed web process is seen dead (locks._holder_alive)
        news.acquire(f"admin-edit-{os.urandom(4).hex()}\t{os.getpid()}\t{os.uname().nodename}")
    except (LockBusy, StorageError):
        raise BadInput("a run is handing newsletters over right now; "
                       "nothing was changed: save again in a minute") from None
    try:
        job = read_job(data, name)
        if job.values.get("first_run", "-") != "-":
            raise BadInput("its first letter has left: it can no longer be changed")
        files.atomic_write(data.job(name, "letter"), letter_file(subject, text, html, markdown))
        kept = archive.kept_newsletter(data, name)
        archive.keep_newsletter(data, name, job.services, subject,
                                *sent_parts(text, html, markdown), kept.public if kept else False)
        for language, version in changed.items():
            if version is None:
                files.remove(version_path(data, name, language))
                archive.forget_version(data, name, language)
            else:
                files.atomic_write(version_path(data, name, language), letter_file(*version, markdown))
                archive.keep_version(data, name, language, version[0],
                                     *sent_parts(version[1], version[2], markdown))
    finally:
        news.release()
