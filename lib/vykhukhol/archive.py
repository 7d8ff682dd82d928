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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from vykhukhol import files, tokens
from vykhukhol import services as svc
from vykhukhol.datadir import CHECKOUT, DataDir, check_name
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.timeutil import format_time, now, parse_time

if TYPE_CHECKING:
    from vykhukhol.sender.runtime import Run
    from vykhukhol.settings import Settings

#: The names a file of a service's archive may have; the web routes serve no other.
FILE_NAME = re.compile(r"index\.html|feed\.atom|letter-[0-9]{3}\.html|news-[a-z0-9][a-z0-9_-]{0,39}\.html")
PREVIEW = "preview"  # the item of the admin's test letter: no copy to show
WAITING, SENT = "waiting", "sent"
HTML_MARK = "=== html ==="  # a kept copy's HTML part follows this line, as in a job's .letter
FEED_ENTRIES = 50  # the newest letters the feed carries; the index lists them all
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")  # not allowed in XML
_LINK = re.compile(r"https?://[^\s<>\"'()\[\]{}]+[^\s<>\"'()\[\]{}.,;:!?]")


def folder(settings: Settings) -> Path:
    """Where the archive is written: ``archive_dir``, else ``archive/`` of the checkout."""
    return Path(settings["archive_dir"] or CHECKOUT / "archive")


def index_url(settings: Settings, service: str) -> str:
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
    time: str
    kind: str  # "letter" or "news"
    ref: str


def _entries_path(data: DataDir, service: str) -> Path:
    return data.state / "archive" / f"{check_name(service, 'service name')}.txt"


def entries(data: DataDir, service: str) -> list[Entry]:
    found = []
    for line in files.read_lines(_entries_path(data, service)):
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1] in ("letter", "news"):
            found.append(Entry(parts[0], parts[1], parts[2]))
    return found


def add_entries(data: DataDir, service: str, new: list[Entry]) -> None:
    path = _entries_path(data, service)
    with files.record_lock(path):
        known = entries(data, service)
        have = {(e.kind, e.ref) for e in known}
        known += [e for e in new if (e.kind, e.ref) not in have]
        files.atomic_write(path, [f"{e.time}\t{e.kind}\t{e.ref}\n" for e in known])


# --- the sender's hook -------------------------------------------------------------------

def after_run(run: Run) -> None:
    """What a run published (called once, at the end of :func:`sender.run`):
    the public series letters that went out for the first time, and the
    public newsletters whose jobs ended. A failure is logged; it never costs
    the run anything, and the next run tries again."""
    try:
        _publish_series(run)
        _publish_newsletters(run)
    except (VykhukholError, OSError) as exc:
        message = exc.message if isinstance(exc, VykhukholError) else str(exc)
        run.log.error(f"the public archive could not be written: {message}")


def _publish_series(run: Run) -> None:
    for target, items in run.report.items.items():
        numbers = sorted({int(i) for i in items if i.isdigit()})
        if not numbers:
            continue
        try:
            service = svc.find_service(run.data, target)
        except (NotFound, BadInput):
            continue  # a newsletter job
        if not service.archive:
            continue
        letters = svc.load_letters(service)
        have = {e.ref for e in entries(run.data, service.name) if e.kind == "letter"}
        stamp = format_time(run.now())
        new = [Entry(stamp, "letter", str(n)) for n in numbers
               if n <= len(letters) and letters[n - 1].public and str(n) not in have]
        if new:
            add_entries(run.data, service.name, new)
            build(run.data, run.settings, service)
            run.log.write(f"{service.name}: published in the archive: "
                          + ", ".join(f"letter {e.ref}" for e in new))


def _publish_newsletters(run: Run) -> None:
    data = run.data
    if not data.letters.is_dir():
        return
    for marker in sorted(data.letters.glob("*.publish")):
        job = marker.stem
        try:
            check_name(job)
        except BadInput:
            continue  # not one of ours (a file put there by hand)
        if run.report.sent.get(job):
            files.atomic_write(marker, SENT + "\n")
        if data.job(job, "job").exists():
            continue  # still being sent
        went_out = (files.read_text(marker, "") or "").strip() == SENT
        kept = kept_newsletter(data, job)
        for name in kept.services if went_out and kept else []:
            try:
                service = svc.find_service(data, name)
            except (NotFound, BadInput):
                continue
            add_entries(data, name, [Entry(format_time(run.now()), "news", job)])
            if service.archive:
                build(data, run.settings, service)
                run.log.write(f"{name}: published in the archive: newsletter {job}")
        files.remove(marker)  # only now: a build that failed is tried again by the next run


# --- a recipient's own copy (cgi/view.py) ----------------------------------------------------

def own_copy(data: DataDir, settings: Settings, service_name: str, item: str,
             email: str) -> tuple[str, str, str | None] | None:
    """(subject, text, its public page or None) of letter ``item`` of the
    service as ``email`` received it (with the name the subscriber has now,
    and the personal links that act — unsubscribe, own page — as the
    archive's neutral text); None when the letter is not kept any more. The caller has checked the
    link's signature."""
    from vykhukhol import render
    from vykhukhol.services import subscribers as subs

    try:
        service = svc.find_service(data, service_name)
    except (NotFound, BadInput):
        return None
    public = None
    if item.isdigit() and len(item) <= 3:
        try:
            letters = svc.load_letters(service)
        except BadInput:
            return None
        if not 1 <= int(item) <= len(letters):
            return None
        subject, text = letters[int(item) - 1].subject, letters[int(item) - 1].body
        if service.archive and letters[int(item) - 1].public and \
                any(e.kind == "letter" and e.ref == item for e in entries(data, service.name)):
            public = page_url(settings, service.name, "letter", item)
    else:
        kept = kept_newsletter(data, item)
        if kept is None or service.name not in kept.services:
            return None
        subject, text = kept.subject, kept.text
        if service.archive and kept.public and \
                any(e.kind == "news" and e.ref == item for e in entries(data, service.name)):
            public = page_url(settings, service.name, "news", item)
    sub = subs.find(service.subscribers_path, email)
    # A web link is forwarded and shared: like the archive's pages, the copy
    # holds no personal link that acts (the letter in the mailbox has them).
    context = render.one_line_values({
        "name": sub.name if sub else "", "email": email, "service": service.title,
        "unsubscribe_url": neutral(settings["language"]),
        "manage_url": neutral(settings["language"]),
        "web_url": tokens.view_link(settings["site_url"], settings.secret, service.name, email,
                                    item),
        "date": now().strftime("%Y-%m-%d"),
    })
    budget = render.Budget()
    try:
        return (" ".join(render.render(subject, context, "subject", budget).split()),
                render.render(text, context, "text", budget), public)
    except BadInput:
        return None


# --- the switch ------------------------------------------------------------------------------

def switch(data: DataDir, settings: Settings, name: str, on: bool) -> svc.Service:
    """``vykhukhol archive on|off`` and the admin's switch: the service's
    ``archive`` flag, and its folder built (on) or removed (off)."""
    service = svc.edit_service(data, name, {"archive": "yes" if on else "no"})
    if on:
        catch_up(data, service)
    build(data, settings, service)
    return service


def catch_up(data: DataDir, service: svc.Service) -> None:
    """Public series letters that went out while the archive was off (the
    runs publish only into an archive that is on): published now, dated now.
    One read of the subscriber file, at the owner's click, never in a run."""
    from vykhukhol.services import subscribers as subs

    try:
        letters = svc.load_letters(service)
    except BadInput:
        return
    have = {e.ref for e in entries(data, service.name) if e.kind == "letter"}
    waiting = [letter.number for letter in letters if letter.public and str(letter.number) not in have]
    if not waiting:
        return
    furthest = max((sub.sent for sub in subs.subscribers(service.subscribers_path)), default=0)
    stamp = format_time(now())
    add_entries(data, service.name, [Entry(stamp, "letter", str(n)) for n in waiting
                                     if n <= furthest])


# --- the files ------------------------------------------------------------------------------

@dataclass
class Page:
    entry: Entry
    name: str
    subject: str
    text: str
    published: datetime


def build(data: DataDir, settings: Settings, service: svc.Service) -> int:
    """Write the service's archive whole (or remove it when ``archive`` is
    off); returns how many letters it shows."""
    target = folder(settings) / service.name
    if not service.archive:
        _remove_folder(target)
        return 0
    lang = settings["language"]
    pages = _pages(data, settings, service)
    for page in pages:
        text = letter_page(settings, service, page, lang)
        if files.read_text(target / page.name) != text:  # a page already right is left alone:
            files.write_public(target / page.name, text)  # a publication writes one, not all
    files.write_public(target / "index.html", index_page(settings, service, pages, lang))
    files.write_public(target / "feed.atom", feed(settings, service, pages))
    wanted = {page.name for page in pages} | {"index.html", "feed.atom"}
    for stale in target.iterdir():
        if FILE_NAME.fullmatch(stale.name) and stale.name not in wanted:
            files.remove(stale)
    return len(pages)


def _remove_folder(target: Path) -> None:
    if not target.is_dir():
        return
    for path in target.iterdir():
        if FILE_NAME.fullmatch(path.name) or path.name.endswith(".tmp"):
            files.remove(path)
    try:
        target.rmdir()
    except OSError:
        pass  # something of the owner's own is in it: left alone


def neutral(lang: str) -> str:
    """What stands for a personal link on a public page."""
    from vykhukhol.i18n import tr

    return tr(lang, "(a personal link: it is in each subscriber's own copy of the letter)")


def _pages(data: DataDir, settings: Settings, service: svc.Service) -> list[Page]:
    """The published letters, rendered for nobody in particular, newest first."""
    from vykhukhol import render

    try:
        letters = svc.load_letters(service)
    except BadInput:
        letters = []
    lang = settings["language"]
    pages = []
    for entry in entries(data, service.name):
        if entry.kind == "letter":
            number = int(entry.ref) if entry.ref.isdigit() else 0
            if not 1 <= number <= len(letters) or not letters[number - 1].public:
                continue
            subject, text = letters[number - 1].subject, letters[number - 1].body
        else:
            kept = kept_newsletter(data, entry.ref)
            if kept is None or not kept.public:
                continue
            subject, text = kept.subject, kept.text
        try:
            published = parse_time(entry.time) or now()
        except BadInput:
            published = now()
        name = page_name(entry.kind, entry.ref)
        context = render.one_line_values({
            "name": "", "email": "", "service": service.title,
            "unsubscribe_url": neutral(lang), "manage_url": neutral(lang),
            "web_url": index_url(settings, service.name) + name,
            "date": published.strftime("%Y-%m-%d"),
        })
        budget = render.Budget()
        try:
            subject = " ".join(render.render(subject, context, "subject", budget).split())
            text = render.render(text, context, "text", budget)
        except BadInput:
            continue  # a letter that cannot be made is not sent either
        pages.append(Page(entry, name, subject, text, published))
    pages.sort(key=lambda p: (p.published, p.name), reverse=True)
    return pages


STYLE = ("body{font-family:system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;"
          "line-height:1.5;color:#222}pre{white-space:pre-wrap;font-family:inherit}"
          "time,.small{color:#666;font-size:.9em}ul{padding-left:1.2em}li{margin:.4em 0}")


def _html(lang: str, title: str, body: str, feed_url: str) -> str:
    return (f'<!doctype html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="referrer" content="no-referrer">\n'
            f"<title>{escape(title)}</title>\n"
            f'<link rel="alternate" type="application/atom+xml" href="{escape(feed_url)}">\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def text_html(text: str) -> str:
    """A letter's text as HTML: everything escaped, web addresses made links."""
    out, at = [], 0
    for match in _LINK.finditer(text):
        out.append(escape(text[at:match.start()]))
        url = escape(match.group())
        out.append(f'<a href="{url}" rel="nofollow noopener">{url}</a>')
        at = match.end()
    out.append(escape(text[at:]))
    return "".join(out)


def _day(moment: datetime, settings: Settings) -> str:
    from zoneinfo import ZoneInfo

    return moment.astimezone(ZoneInfo(settings["timezone"])).strftime("%Y-%m-%d")


def letter_page(settings: Settings, service: svc.Service, page: Page, lang: str) -> str:
    from vykhukhol.i18n import tr

    index = index_url(settings, service.name)
    body = (f'<p class="small"><a href="{escape(index)}">'
            f'{escape(tr(lang, "Archive of “{service}”", service=service.title))}</a></p>\n'
            f"<h1>{escape(page.subject)}</h1>\n"
            f'<p><time datetime="{format_time(page.published)}">'
            f"{_day(page.published, settings)}</time></p>\n"
            f"<pre>{text_html(page.text)}</pre>\n")
    return _html(lang, f"{page.subject} — {service.title}", body, index + "feed.atom")


def index_page(settings: Settings, service: svc.Service, pages: list[Page], lang: str) -> str:
    from vykhukhol.i18n import tr

    index = index_url(settings, service.name)
    subscribe = f"{settings['site_url'].rstrip('/')}/cgi/subscribe.py?service={service.name}"
    rows = "".join(f'<li><time datetime="{format_time(p.published)}">'
                   f"{_day(p.published, settings)}</time> "
                   f'<a href="{escape(p.name)}">{escape(p.subject)}</a></li>\n' for p in pages)
    body = (f"<h1>{escape(tr(lang, 'Archive of “{service}”', service=service.title))}</h1>\n"
            f'<p><a href="{escape(subscribe)}">{escape(tr(lang, "Subscribe"))}</a> · '
            f'<a href="feed.atom">{escape(tr(lang, "Atom feed"))}</a></p>\n'
            + (f"<ul>\n{rows}</ul>\n" if pages
               else f"<p>{escape(tr(lang, 'No letters have been published yet.'))}</p>\n"))
    return _html(lang, tr(lang, "Archive of “{service}”", service=service.title), body,
                 index + "feed.atom")


def _xml(text: str) -> str:
    return escape(_CONTROL.sub("", text), quote=True)


def feed(settings: Settings, service: svc.Service, pages: list[Page]) -> str:
    """The Atom feed (RFC 4287) of the newest :data:`FEED_ENTRIES` letters.
    Ids are tag URIs (RFC 4151) of the site's host and each letter's page,
    so they stay the same however often the feed is written."""
    from urllib.parse import urlsplit

    index = index_url(settings, service.name)
    host = urlsplit(settings["site_url"]).hostname or "localhost"
    updated = format_time(pages[0].published if pages else now())
    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             f'<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="{settings["language"]}">',
             f"<id>tag:{_xml(host)},2026:vykhukhol/{service.name}</id>",
             f"<title>{_xml(service.title)}</title>",
             f"<updated>{updated}</updated>",
             f"<author><name>{_xml(service.from_name or service.title)}</name></author>",
             f'<link rel="self" type="application/atom+xml" href="{_xml(index)}feed.atom"/>',
             f'<link rel="alternate" type="text/html" href="{_xml(index)}"/>']
    for page in pages[:FEED_ENTRIES]:
        stamp = format_time(page.published)
        lines += ["<entry>",
                  f"<id>tag:{_xml(host)},{stamp[:10]}:vykhukhol/{service.name}/{page.name[:-5]}</id>",
                  f"<title>{_xml(page.subject)}</title>",
                  f"<updated>{stamp}</updated>",
                  f'<link rel="alternate" type="text/html" href="{_xml(index + page.name)}"/>',
                  f'<content type="html">{_xml("<pre>" + text_html(page.text) + "</pre>")}</content>',
                  "</entry>"]
    lines.append("</feed>")
    return "\n".join(lines) + "\n"
