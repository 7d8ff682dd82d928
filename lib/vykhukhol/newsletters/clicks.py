"""Clicks counted without spying (docs/using/clicks.md#clicks): a letter's links through cgi/go.py.

A newsletter made with ``--clicks`` (the admin form's box) or a series letter
with the header line ``Clicks: yes`` has its links rewritten when its letters
are made: each ``http``/``https`` link of the text part, and each ``<a href>``
of the HTML part, becomes ``<site_url>/cgi/go.py?l=<letter>&n=<number>&t=<token>``
(:func:`vykhukhol.tokens.click_link`: HMAC over the letter and the number).
``go.py`` (:mod:`vykhukhol.web.go`) answers 302 to the link the *stored*
letter has under that number, and nowhere else, and counts one click.

Two files per letter, in ``data/clicks/``: ``<letter>.links``, the letter's
links (link n on line n), stored before the first of its letters is made,
and ``<letter>.counts``, a counter per link and hour raised by go.py. Their format has
its one home in :mod:`vykhukhol.files.clicklinks`, which go.py can import
without this package's face.

A letter is a newsletter's job name, or ``<service>.<number>.<hash>`` for a
series letter, the hash being of its links: a series letter whose links are
edited is a new letter, so an old letter's link never leads to a new target.

What it deliberately does not do: it records no address, no IP, no
user agent and no time finer than the hour (nothing ties a click to a
recipient: every recipient's letter has the same links); it counts no opens
(no pixel, no image is rewritten); it leaves ``mailto:``, ``javascript:``
and every other scheme alone, and every link made of template values
(``{{ unsubscribe_url }}``, a URL with ``{{ }}`` in it), whose targets differ
per recipient. The public archive and the copy "in the browser" show the
letter's own links.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import NamedTuple

from vykhukhol import tokens
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files import clicklinks
from vykhukhol.files.clicklinks import MAX_LINKS
from vykhukhol.services import LANGUAGES, Letter

MAX_URL = 2000  # characters: a longer link is left as it is
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_TEXT_URL = re.compile(r"https?://[^\s<>\"'{}\[\]\\^`|]+", re.I)
_OPENING = "([<\"'«„“‘*_"  # what may stand before a link in its word: "(https://…)"
_HREF = re.compile(r"""<a\b[^>]*?\shref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.I)
_TRAILING = ".,;:!?'\""
_URL_SAFE = "".join(chr(c) for c in range(33, 127))  # what a Location header may carry as it is


class Prepared(NamedTuple):
    """A letter's parts with their links rewritten, and the letter they count for."""
    letter: str
    text: str
    html: str | None
    links: tuple[str, ...]


class LinkCount(NamedTuple):
    number: int
    url: str
    clicks: int


def _masked(source: str) -> list[tuple[int, int]]:
    return [match.span() for match in _TEMPLATE.finditer(source)]


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a < end and start < b for a, b in spans)


def _text_links(text: str) -> Iterable[tuple[int, int, str]]:
    """(start, end, url) of each countable link of a plain text."""
    spans = _masked(text)
    for match in _TEXT_URL.finditer(text):
        word = match.start()
        while word and not text[word - 1].isspace():
            word -= 1
        if text[word:match.start()].strip(_OPENING):
            continue  # inside another word: javascript:open('https://…'), data:…,https://…
        url = match.group(0).rstrip(_TRAILING)
        if url.endswith(")") and url.count("(") < url.count(")"):
            url = url[:-1].rstrip(_TRAILING)  # "(see https://example.org/a)"
        start, end = match.start(), match.start() + len(url)
        if text[match.end():match.end() + 1] == "{" or _inside(spans, start, end):
            continue  # built from template values: its target differs per recipient
        yield start, end, url


def _html_links(html: str) -> Iterable[tuple[int, int, str]]:
    """(start, end, url) of each countable ``<a href>`` value of an HTML part."""
    import html as html_mod

    spans = _masked(html)
    for match in _HREF.finditer(html):
        group = next(i for i in (1, 2, 3) if match.group(i) is not None)
        start, end = match.span(group)
        if _inside(spans, match.start(), end):
            continue
        yield start, end, html_mod.unescape(match.group(group)).strip()


def _countable(url: str, own: str) -> bool:
    return (url[:8].lower().startswith(("http://", "https://")) and len(url) <= MAX_URL
            and not any(c.isspace() or ord(c) < 32 or c in "{}" for c in url)
            and not url.startswith(own))


def _location(url: str) -> str:
    """``url`` as a Location header carries it: ASCII, anything else %-encoded
    as UTF-8 (browsers decode a host so written, WHATWG URL)."""
    from urllib.parse import quote

    return quote(url, safe=_URL_SAFE)


def rewrite(site_url: str, secret: bytes, letter: str, text: str, html: str | None,
            links: tuple[str, ...] | None = None) -> Prepared:
    """``text`` and ``html`` with each countable link replaced by its go.py link.
    Links are numbered from 1 in order of first appearance, the text part
    first; the same link twice is one number. ``links``: a table already
    stored, whose numbers are kept (a link it does not hold is left as it is)."""
    own = f"{site_url.rstrip('/')}/cgi/"
    table: list[str] = list(links or ())
    numbers = {url: i for i, url in enumerate(table, start=1)}
    fixed = links is not None

    def number_of(url: str) -> int | None:
        target = _location(url)
        if target not in numbers and not fixed and len(table) < MAX_LINKS:
            table.append(target)
            numbers[target] = len(table)
        return numbers.get(target)

    def replaced(source: str, found: Iterable[tuple[int, int, str]], escape: bool) -> str:
        parts, at = [], 0
        for start, end, url in list(found):
            number = number_of(url) if _countable(url, own) else None
            if number is None:
                continue
            link = tokens.click_link(site_url, secret, letter, number)
            parts += [source[at:start], link.replace("&", "&amp;") if escape else link]
            at = end
        return "".join(parts) + source[at:]

    new_text = replaced(text, _text_links(text), False)
    new_html = replaced(html, _html_links(html), True) if html else html
    return Prepared(letter, new_text, new_html, tuple(table))


def series_letter(service: str, number: int, site_url: str, secret: bytes, text: str,
                  html: str | None) -> str:
    """The letter id of series letter ``number`` of ``service``: named by the
    hash of its links, so that editing them makes a new letter."""
    links = rewrite(site_url, secret, "x", text, html).links
    digest = hashlib.sha256("\n".join(links).encode("utf-8")).hexdigest()[:12]
    return f"{service}.{number}.{digest}"


def series_copy(data: DataDir, site_url: str, secret: bytes, service: str, letter: Letter) -> Letter:
    """Series ``letter`` of ``service`` as its letters are made: its links stored
    and rewritten (once a run: the sender keeps the copy)."""
    text, html = letter.parts()  # a Markdown letter's links are its HTML part's
    letter_id = series_letter(service, letter.number, site_url, secret, text, html)
    made = prepare(data, site_url, secret, letter_id, text, html)
    return Letter(letter.number, letter.subject, letter.delay, made.text, made.html,
                  {key: value for key, value in letter.headers.items() if key != "format"})


def prepare(data: DataDir, site_url: str, secret: bytes, letter: str, text: str,
            html: str | None) -> Prepared:
    """The letter's parts rewritten, its links stored first (once: a table
    already there is kept, and must be the letter's own — BadInput if the
    letter now has links it does not hold, so no letter goes out whose links
    would lead elsewhere than they say)."""
    made = rewrite(site_url, secret, letter, text, html)
    stored = links(data, letter)
    if stored is None:
        clicklinks.write_links(data, letter, made.links)
        return made
    if made.links != stored:
        raise BadInput("letter {letter}: its links differ from the ones stored for its clicks",
                       letter=letter)
    return made


def links(data: DataDir, letter: str) -> tuple[str, ...] | None:
    """The stored links of ``letter`` (None: none stored)."""
    return clicklinks.read_links(data, letter)


def counts(data: DataDir, letter: str) -> list[LinkCount]:
    """Each stored link of ``letter`` with its clicks (empty: nothing counted
    for it); a line that cannot be read is passed over."""
    table = links(data, letter)
    if table is None:
        return []
    clicks = clicklinks.read_counts(data, letter, len(table))
    return [LinkCount(i, url, n) for i, (url, n) in enumerate(zip(table, clicks, strict=True), start=1)]


def total(counted: list[LinkCount]) -> int:
    return sum(link.clicks for link in counted)


def of_letters(data: DataDir, letters: Iterable[str]) -> dict[str, list[LinkCount]]:
    """The counts of each of ``letters`` whose clicks are counted (a
    newsletter made without counting has no entry). A newsletter's letter in
    another language counts under ``<job>.<language>``: its clicks are the
    job's too, a link both bodies hold counted once with both bodies' clicks,
    a link of its own listed after the main letter's."""
    result = {}
    for letter in letters:
        found = [letter] + [f"{letter}.{language}" for language in LANGUAGES]
        try:
            counted = {name: counts(data, name) for name in found
                       if links(data, name) is not None}
        except BadInput:  # not a letter id: nothing was ever counted under it
            continue
        if counted:
            result[letter] = _joined(list(counted.values()))
    return result


def _joined(bodies: list[list[LinkCount]]) -> list[LinkCount]:
    """The links of several bodies of one letter, the same URL's clicks added,
    numbered in order (the main body's links keep their numbers)."""
    clicks_of: dict[str, int] = {}
    for body in bodies:
        for link in body:
            clicks_of[link.url] = clicks_of.get(link.url, 0) + link.clicks
    return [LinkCount(i, url, n) for i, (url, n) in enumerate(clicks_of.items(), start=1)]


def to_json(counted: list[LinkCount] | None) -> dict:
    """A newsletter's clicks as ``newsletter history --json`` gives them:
    ``clicks`` (the total; null when they were not counted) and ``links``
    (number, url and clicks of each)."""
    if counted is None:
        return {"clicks": None, "links": []}
    return {"clicks": total(counted),
            "links": [{"number": link.number, "url": link.url, "clicks": link.clicks}
                      for link in counted]}
