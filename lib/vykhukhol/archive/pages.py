"""The archive's files drawn (docs/using/archive.md#archive): each published letter's page, the
index and the Atom feed of a service, from the templates in
``templates/archive/`` (base.html, letter.html, index.html, feed.atom; and
copy.html, a recipient's own copy, for :mod:`vykhukhol.web.archive`).

A letter is rendered as a recipient with no name would read it: ``name`` and
``email`` are empty, and the personal links (``unsubscribe_url``,
``manage_url``) are a neutral text, so no page can name or act for anyone.
Pages show the text part, escaped, with its web addresses made links
(``|links``); no HTML of a letter reaches a page.

Values are escaped as :func:`html.escape` does (``&quot;``, ``&#x27;``), as
the pages were before they had templates: a page already right on disk is
left alone by :func:`build`, so an upgrade rewrites none of them.

What is published, and when, is the store's (:mod:`vykhukhol.archive`) and
the publisher's (:mod:`vykhukhol.archive.publish`); this module only draws.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.archive import (
    FILE_NAME,
    Entry,
    entries,
    folder,
    index_url,
    kept_newsletter,
    kept_versions,
    page_name,
)
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.i18n import t, tr
from vykhukhol.timeutil import format_time, now, parse_time

if TYPE_CHECKING:
    from vykhukhol.settings import Settings

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "archive"
FEED_ENTRIES = 50  # the newest letters the feed carries; the index lists them all
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")  # not allowed in XML
_LINK = re.compile(r"https?://[^\s<>\"'()\[\]{}]+[^\s<>\"'()\[\]{}.,;:!?]")


@dataclass
class Page:
    """A published letter as its page shows it."""

    entry: Entry
    name: str
    subject: str
    text: str
    published: datetime
    stamp: str  # the time, RFC 3339 (the pages' <time datetime> and the feed)
    day: str    # the day in the site's time zone, as the pages show it
    language: str = ""  # the one it is written in ("": the site's)
    # the same letter in the other language(s): its pages, each linked from this one
    versions: list[Page] = field(default_factory=list)
    others: list[tuple[str, str]] = field(default_factory=list)  # (language, page name)


def build(data: DataDir, settings: Settings, service: svc.Service) -> int:
    """Write the service's archive whole (or remove it when ``archive`` is
    off); returns how many letters it shows."""
    target = folder(settings) / service.name
    if not service.archive:
        _remove_folder(target)
        return 0
    lang = settings["language"]
    pages = _pages(data, settings, service)
    every = [each for page in pages for each in (page, *page.versions)]
    for page in every:
        text = letter_page(settings, service, page, page.language or lang)
        if files.read_text(target / page.name) != text:  # a page already right is left alone:
            files.write_public(target / page.name, text)  # a publication writes one, not all
    files.write_public(target / "index.html", index_page(settings, service, pages, lang))
    files.write_public(target / "feed.atom", feed(settings, service, pages))
    wanted = {page.name for page in every} | {"index.html", "feed.atom"}
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
    return tr(lang, "(a personal link: it is in each subscriber's own copy of the letter)")


def _pages(data: DataDir, settings: Settings, service: svc.Service) -> list[Page]:
    """The published letters, rendered for nobody in particular, newest first;
    each with its pages in other languages (docs/using/archive.md#archive-languages)."""
    try:
        letters = svc.load_letters(service)
    except BadInput:
        letters = []
    pages = []
    for entry in entries(data, service.name):
        # (language, subject, text) of the letter ("": the site's), then of each version
        written: list[tuple[str, str, str]] = []
        if entry.kind == "letter":
            number = int(entry.ref) if entry.ref.isdigit() else 0
            if not 1 <= number <= len(letters) or not letters[number - 1].public:
                continue
            for language in ("", *sorted(letters[number - 1].versions)):
                letter = letters[number - 1].for_reader(language)[0] if language \
                    else letters[number - 1]
                try:
                    written.append((language, letter.subject, letter.parts()[0]))
                except BadInput:  # a Markdown letter made too long by FTP: not shown until fixed
                    continue
        else:
            kept = kept_newsletter(data, entry.ref)
            if kept is None or not kept.public:
                continue
            written = [("", kept.subject, kept.text)] + [
                (language, subject, text) for language, (subject, text, _)
                in sorted(kept_versions(data, entry.ref).items())]
        try:
            published = parse_time(entry.time) or now()
        except BadInput:
            published = now()
        made = [page for language, subject, text in written
                if (page := _page(settings, service, entry, published, language, subject, text))]
        if not made or made[0].language:
            continue  # the letter itself cannot be made: not shown, nor its versions
        for page in made:
            page.others = [(other.language or settings["language"], other.name)
                           for other in made if other is not page]
        made[0].versions = made[1:]
        pages.append(made[0])
    pages.sort(key=lambda p: (p.published, p.name), reverse=True)
    return pages


def _page(settings: Settings, service: svc.Service, entry: Entry, published: datetime,
          language: str, subject: str, text: str) -> Page | None:
    """A letter's page in ``language`` ("": the site's), None when it cannot be made."""
    from vykhukhol import render  # Jinja2: only when a page is drawn

    lang = language or settings["language"]
    name = page_name(entry.kind, entry.ref, language or None)
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
        return None  # a letter that cannot be made is not sent either
    return Page(entry, name, subject, text, published, format_time(published),
                _day(published, settings), language)


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


@lru_cache(maxsize=1)
def _environment():  # -> jinja2.Environment
    import jinja2
    from markupsafe import Markup

    def escaped(value: object) -> Markup:
        # Every {{ value }} is escaped here, as html.escape does (see the
        # module's docstring); what is Markup already (|links) is left alone.
        return value if isinstance(value, Markup) else Markup(escape(str(value)))

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             finalize=escaped, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["links"] = lambda text: Markup(text_html(str(text)))
    env.filters["xml"] = lambda text: Markup(escape(_CONTROL.sub("", str(text)), quote=True))
    return env


def draw(template: str, lang: str, **context: object) -> str:
    """``template`` of templates/archive/ drawn in ``lang`` (``_()`` its sentences)."""
    from functools import partial

    return _environment().get_template(template).render(
        lang=lang, _=partial(tr, lang), t=partial(t, lang), language_name=_language_name,
        **context)


def _language_name(language: str) -> str:
    """A language's own name (English, Русский): a link to a letter's other
    version says it in the language the version is in."""
    return t(language, "language.name")


def letter_page(settings: Settings, service: svc.Service, page: Page, lang: str) -> str:
    index = index_url(settings, service.name)
    return draw("letter.html", lang, service=service, page=page, index=index,
                feed=index + "feed.atom")


def index_page(settings: Settings, service: svc.Service, pages: list[Page], lang: str) -> str:
    index = index_url(settings, service.name)
    return draw("index.html", lang, service=service, pages=pages, feed=index + "feed.atom",
                subscribe=f"{settings['site_url'].rstrip('/')}/cgi/subscribe.py"
                          f"?service={service.name}")


def feed(settings: Settings, service: svc.Service, pages: list[Page]) -> str:
    """The Atom feed of the newest :data:`FEED_ENTRIES` letters."""
    from urllib.parse import urlsplit

    return draw("feed.atom", settings["language"], service=service, pages=pages[:FEED_ENTRIES],
                index=index_url(settings, service.name),
                host=urlsplit(settings["site_url"]).hostname or "localhost",
                updated=format_time(pages[0].published if pages else now()))


def follow_language(data: DataDir, settings: Settings) -> int:
    """After ``language`` changed (the admin's Settings, ``settings set``):
    every archive that is on is written again in the new language, so no page
    stays in the old one until an ``archive build``. Returns how many."""
    built = 0
    for service in svc.load_services(data):
        if service.archive:
            build(data, settings, service)
            built += 1
    return built
