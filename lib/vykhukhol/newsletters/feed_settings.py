"""What a service's feed is set to (docs/using/feeds.md#feeds): ``<service folder>/feed.ini``
(the URL and ``every``) and ``feed.txt`` (the letter), as ``vykhukhol service
feed`` and the service page write them and :mod:`.feeds` reads them; and how
an item's words enter the newsletter's template as data, never as code.

Where the reads are recorded (``data/state/feeds/``) is named here too, so
that a new URL or ``--off`` forgets them; what they hold is :mod:`.feeds`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from vykhukhol import files
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.i18n import LANGUAGES, tr
from vykhukhol.timeutil import format_duration, parse_duration

DEFAULT_EVERY = 3600          # seconds between reads: hourly
MIN_EVERY = 600               # not more often than every 10 minutes
MAX_TEMPLATE = 20_000         # characters of the letter template
FOLDER = "feeds"              # in data/state/


def _(text: str) -> str:  # marks a text for the catalog (tools/i18n.py extract)
    return text


# The letter a feed gets when its owner gives none, in the site's `language`
# when each letter is made. No footer of its own: every list letter gets the
# service's footer (docs/using/services.md#footer), its unsubscribe link with it.
DEFAULT_SUBJECT = "{{ title }}"
DEFAULT_BODY = _("{{ title }}\n\n{{ summary }}\n\nRead it on the site: {{ link }}")
# The default letter as version 1.0 wrote it into feed.txt, with a footer of
# its own: a feed.txt that says it word for word is the default letter too.
FOOTED_BODY = _("{{ title }}\n\n{{ summary }}\n\nRead it on the site: {{ link }}\n\n--\n"
                "You receive this as a subscriber of {{ service }}. "
                "To unsubscribe: {{ unsubscribe_url }}")


class Feed(NamedTuple):
    url: str
    every: int            # seconds
    subject: str          # feed.txt's template; "" when there is none
    body: str             # feed.txt's template; "" when there is none

    def letter(self, lang: str) -> tuple[str, str]:
        """(subject, body) templates of the letters made now: the owner's, or
        the default one in ``lang`` (the site's language at this moment)."""
        if self.body.strip() and not is_default(self.subject, self.body):
            return self.subject, self.body
        return DEFAULT_SUBJECT, tr(lang, DEFAULT_BODY)


def is_default(subject: str, body: str) -> bool:
    """Whether a letter says the default one word for word, in any language
    (so that saving the admin's form unchanged keeps following `language`)."""
    def plain(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").strip().split("\n"))

    return subject.strip() == DEFAULT_SUBJECT and plain(body) in {
        plain(tr(lang, text)) for lang in LANGUAGES for text in (DEFAULT_BODY, FOOTED_BODY)}


# --- where it is kept ------------------------------------------------------------

def ini_path(service: svc.Service) -> Path:
    return service.folder / "feed.ini"


def template_path(service: svc.Service) -> Path:
    return service.folder / "feed.txt"


def state_path(data: DataDir, name: str) -> Path:
    return data.state / FOLDER / f"{name}.state"


def items_path(data: DataDir, name: str) -> Path:
    return data.state / FOLDER / f"{name}.items"


def load(service: svc.Service) -> Feed | None:
    """The service's feed, or None when it follows none (or its file is broken)."""
    values = {}
    for line in files.read_lines(ini_path(service)):
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    if not values.get("url"):
        return None
    try:
        every = parse_duration(values.get("every", "1h"))
    except BadInput:
        every = DEFAULT_EVERY
    subject, body = split_letter("\n".join(files.read_lines(template_path(service))))
    return Feed(values["url"], max(every, MIN_EVERY), subject, body)


def split_letter(text: str) -> tuple[str, str]:
    """``Subject: …``, a blank line, the body → (subject, body); ("", "") if empty."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    if not text.strip():
        return "", ""
    head, _sep, body = text.partition("\n")
    if not head.lower().startswith("subject:"):
        raise BadInput("the feed's letter must start with a Subject: line, then a blank line "
                       "and the text")
    return head[len("subject:"):].strip(), body.lstrip("\n")


# --- what the owner sets -----------------------------------------------------------

def check_url(url: str) -> str:
    from urllib.parse import urlsplit

    url = (url or "").strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or any(c in url for c in " \t\r\n"):
        raise BadInput("not a feed address: {url} (expected http:// or https://…, e.g. "
                       "https://example.org/feed.xml)", url=repr(url))
    return url


def check_every(text: str) -> int:
    seconds = parse_duration(text)
    if seconds < MIN_EVERY:
        raise BadInput("a feed is read at most every {least}; {text} is too often",
                       least=format_duration(MIN_EVERY), text=text.strip())
    return seconds


def follow(data: DataDir, service_name: str, url: str, every: str = "1h",
           letter: str | None = None) -> Feed:
    """Start (or change) following ``url``; the letter template ``letter``
    (``Subject:`` line, blank line, text) or, when None, the one it has, else
    the default one (in the site's language when each letter is made; a
    ``letter`` that says the default word for word is the default too).
    Everything is checked before anything is written. A new URL is a new
    feed: its first read marks what is there as seen."""
    service = svc.find_service(data, service_name)
    url, seconds = check_url(url), check_every(every)
    old = load(service)
    default = False
    if letter is not None:
        if len(letter) > MAX_TEMPLATE:
            raise BadInput("the feed's letter is longer than {n} characters", n=MAX_TEMPLATE)
        subject, body = split_letter(letter)
        if not subject or any(c in subject for c in "\r\n"):
            raise BadInput("the feed's letter needs a one-line subject")
        if not body.strip():
            raise BadInput("the feed's letter has no text")
        check_letter(subject, body)
        default = is_default(subject, body)
    if old is not None and old.url != url:
        forget_reads(data, service.name)
    if default:
        files.remove(template_path(service))
    elif letter is not None:
        files.atomic_write(template_path(service), letter if letter.endswith("\n") else letter + "\n")
    files.atomic_write(ini_path(service), [f"url = {url}\n",
                                           f"every = {format_duration(seconds)}\n"])
    feed = load(service)
    assert feed is not None, "its url was just written"
    return feed


def stop(data: DataDir, service_name: str) -> bool:
    """Follow no feed any more (the letter template and the record go too);
    False if it followed none."""
    service = svc.find_service(data, service_name)
    had = ini_path(service).exists()
    files.remove(ini_path(service))
    files.remove(template_path(service))
    forget_reads(data, service.name)
    return had


def forget_reads(data: DataDir, name: str) -> None:
    files.remove(state_path(data, name))
    files.remove(items_path(data, name))


def check_letter(subject: str, body: str) -> None:
    """The letter as a newsletter of a sample item would be: refused
    (:class:`BadInput`) if it does not compile or is over the bounds."""
    from vykhukhol import render  # Jinja2: only when a letter is checked

    sample = {"title": "A new post", "link": "https://example.org/a-new-post",
              "summary": "What the post is about.", "published": "2026-12-01"}
    budget = render.Budget()
    render.check_template(with_item(subject, sample), "subject", budget=budget)
    render.check_template(with_item(body, sample), "text", budget=budget)


# --- the item inside the newsletter's template -------------------------------------

def literal(value: str) -> str:
    """``value`` as a Jinja2 string literal that says exactly it: only printable
    ASCII other than quotes, braces, ``%``, ``#`` and backslashes appears as
    itself; every other character is a ``\\U`` escape, so nothing the feed says
    can end the literal or the tag (the lexer reads the escapes back)."""
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;/?=&!()*+-_@$^`|~[]<>'")
    return '"' + "".join(c if c in safe else f"\\U{ord(c):08x}" for c in value) + '"'


def with_item(template: str, item: dict[str, str]) -> str:
    """A newsletter template that knows the item: ``{% set %}`` of each value
    as a literal, then the owner's template. The values are data, never
    template code: a ``{{`` in a post's title is printed, not run."""
    sets = "".join(f"{{% set {key} = {literal(str(item.get(key, '')))} %}}"
                   for key in ("title", "link", "summary", "published"))
    return sets + template
