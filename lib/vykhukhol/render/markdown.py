"""A letter written in Markdown, made into the two templates of any letter:
the HTML part and a plain-text part (docs/using/services.md#markdown).

The order is what keeps a subscriber's values from becoming markup. The
Markdown is converted first, with every template tag (``{{ name }}``,
``{% if %}``, ``{# #}``) set aside as an opaque word and put back verbatim
into both results; the values are filled in afterwards, when the two
templates are rendered as any letter's (:func:`vykhukhol.render.render_html`
escapes every value). So a subscriber named ``<b>x</b>`` or ``*x*`` reads as
written in both parts, and a value can never open a link.

The Markdown is read by markdown-it-py's ``commonmark`` preset with
``html=False``: raw HTML in it is shown as text, never passed on. A link or
image to a ``javascript:``, ``vbscript:``, ``file:`` or ``data:`` address is
no link (:func:`_safe_link`): it stays text. A brace the Markdown produced by
itself (from ``\\{`` or ``&#123;``) is written so that it is no template tag.
A link's address must fix its scheme before any template tag, unless it
begins with one of the project's own links (``{{ unsubscribe_url }}``…).

The text part: links as ``text (url)``, list items after ``- `` (or their
number), headings as lines of their own, emphasis as plain words, quotes after
``> ``, code as it is.

A letter longer than :data:`MAX_MARKDOWN` characters is refused.

It deliberately does not render a template, add the footer, count clicks or
read a file: the two templates it returns go where any letter's go.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable
from typing import Any

from vykhukhol.errors import BadInput

#: Characters a Markdown letter may have: markdown-it reads some texts in
#: quadratic time (30,000 characters of "*a " took 0.46 s here, 90,000 took
#: 6 s), so a letter is bounded before it is read, as a render is in time.
MAX_MARKDOWN = 30_000

#: The Jinja2 tags set aside before the Markdown is read (raw blocks whole).
_TAGS = re.compile(r"\{%-?\s*raw\s*-?%\}.*?\{%-?\s*endraw\s*-?%\}|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}",
                   re.S)
#: Schemes a link of a letter may never have (markdown-it lets ``data:image/...`` through).
_BAD_SCHEMES = re.compile(r"^(javascript|vbscript|file|data):", re.I)
_FOOTER = re.compile(r"\{\{-?\s*footer\b")
#: The values a link's address may begin with: the project's own links.
_OWN_LINKS = ("unsubscribe_url", "manage_url", "web_url", "confirm_url")
_OWN_LINK = re.compile(r"\{\{-?\s*(" + "|".join(_OWN_LINKS) + r")\s*-?\}\}")
_ADDRESS = re.compile(r'(?:href|src)="([^"]*)"')


def _safe_link(url: str) -> bool:
    # markdown-it asks before it makes a link or an image; control characters
    # and white space inside a scheme ("java\tscript:") are taken out first.
    return not _BAD_SCHEMES.match(re.sub(r"[\x00-\x20\x7f]", "", url))


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt  # only when a Markdown letter is made

    parser = MarkdownIt("commonmark", {"html": False})
    parser.validateLink = _safe_link  # type: ignore[method-assign]  # markdown-it's documented hook
    return parser


@functools.lru_cache(maxsize=64)
def parts(source: str) -> tuple[str, str]:
    """The (text, HTML) templates of the Markdown letter ``source``;
    :class:`BadInput` when it is longer than :data:`MAX_MARKDOWN`."""
    if len(source) > MAX_MARKDOWN:
        raise BadInput("text: a letter in Markdown has at most {count} characters",
                       count=MAX_MARKDOWN)
    nonce = secrets.token_hex(4)
    tags: list[str] = []

    def aside(match: re.Match[str]) -> str:
        tags.append(match.group(0))
        return f"vykhukhol{nonce}t{len(tags) - 1}x"

    marked = _TAGS.sub(aside, source)
    token = re.compile(f"vykhukhol{nonce}t([0-9]+)x")

    def statements(block: str) -> bool:
        """Whether ``block`` holds only statements ({% for %}) or the footer."""
        found = token.findall(block)
        return bool(found) and not token.sub("", block).strip() \
            and all(_statement(tags[int(n)]) for n in found)

    # A statement on a line of its own stands apart: the list or paragraph
    # it opens or closes does not swallow it.
    marked = "\n".join(f"\n{line}\n" if statements(line) else line for line in marked.split("\n"))
    parser = _parser()
    tokens = parser.parse(marked)
    html = parser.renderer.render(tokens, parser.options, {}).replace("{", "&#123;")
    for address in _ADDRESS.findall(html):
        _check_address(address, token, tags)
    html = re.sub(r"<p>([^<]*)</p>\n?", lambda m: m.group(1) if statements(m.group(1)) else m.group(0),
                  html)
    text = _Text(parser, statements).render(tokens).replace("{", "{{ '{' }}")

    def back(match: re.Match[str]) -> str:
        return tags[int(match.group(1))]

    return token.sub(back, text), token.sub(back, html)


def _check_address(address: str, token: re.Pattern[str], tags: list[str]) -> None:
    """Refuse a link whose scheme a template tag could choose: markdown-it
    checked the address with the tags set aside, so a value (or an ``{% if %}``)
    before the ``:`` could still make it ``javascript:``."""
    first = token.search(address)
    if first is None or ":" in address[:first.start()]:
        return
    if first.start() == 0 and _OWN_LINK.fullmatch(tags[int(first.group(1))]):
        return
    raise BadInput("text: the address of a link in Markdown must begin with its scheme "
                   "(https://…) or with one of {names}",
                   names=", ".join("{{ " + name + " }}" for name in _OWN_LINKS))


def _statement(tag: str) -> bool:
    return not tag.startswith("{{") or bool(_FOOTER.match(tag))


class _Text:
    """The plain text of markdown-it's tokens, block by block."""

    def __init__(self, parser: Any, statements: Callable[[str], bool]) -> None:
        self.parser = parser
        self.statements = statements

    def render(self, tokens: list) -> str:
        out = ""
        for block in self._blocks(tokens, 0, len(tokens)):
            # a block of statements only takes no lines: it leads the block after it
            out += block if self.statements(block) else block + "\n\n"
        return out.rstrip("\n") + "\n" if out else ""

    def _blocks(self, tokens: list, start: int, end: int) -> list[str]:
        """The blocks between ``start`` and ``end`` (a container's children)."""
        out: list[str] = []
        at = start
        while at < end:
            token = tokens[at]
            close = self._close(tokens, at) if token.nesting == 1 else at
            kind = token.type
            if kind in ("paragraph_open", "heading_open"):
                out.append(self._inline(tokens[at + 1].children or []))
            elif kind in ("bullet_list_open", "ordered_list_open"):
                out.append(self._list(tokens, at, close))
            elif kind == "blockquote_open":
                inner = "\n\n".join(self._blocks(tokens, at + 1, close))
                out.append("\n".join(f"> {line}".rstrip() for line in inner.split("\n")))
            elif kind in ("fence", "code_block"):
                out.append(token.content.rstrip("\n"))
            elif kind == "hr":
                out.append("-" * 20)
            elif kind == "inline":
                out.append(self._inline(token.children or []))
            at = close + 1
        return out

    def _list(self, tokens: list, start: int, end: int) -> str:
        number = int(tokens[start].attrGet("start") or 1)
        ordered = tokens[start].type == "ordered_list_open"
        items = []
        at = start + 1
        while at < end:
            close = self._close(tokens, at)
            mark = f"{number}. " if ordered else "- "
            number += 1
            inner = "\n".join(self._blocks(tokens, at + 1, close))
            lines = inner.split("\n")
            items.append("\n".join([mark + lines[0]] + [" " * len(mark) + line if line else ""
                                                         for line in lines[1:]]))
            at = close + 1
        return "\n".join(items)

    @staticmethod
    def _close(tokens: list, at: int) -> int:
        depth = 0
        for index in range(at, len(tokens)):
            depth += tokens[index].nesting
            if depth == 0:
                return index
        return len(tokens) - 1

    def _inline(self, children: list) -> str:
        out: list[str] = []
        links: list[tuple[int, str]] = []
        for child in children:
            kind = child.type
            if kind in ("text", "code_inline"):
                out.append(child.content)
            elif kind in ("softbreak", "hardbreak"):
                out.append("\n")
            elif kind == "link_open":
                links.append((len(out), str(child.attrGet("href") or "")))
            elif kind == "link_close" and links:
                begin, href = links.pop()
                out.append(self._after("".join(out[begin:]), href))
            elif kind == "image":
                alt = "".join(c.content for c in child.children or [])
                out.append(alt + self._after(alt, str(child.attrGet("src") or "")))
        return "".join(out)

    def _after(self, shown: str, href: str) -> str:
        """What follows a link's words: `` (url)``, unless the words are the address."""
        url = self.parser.normalizeLinkText(href)
        if shown.strip() in (url, href, url.removeprefix("mailto:")):
            return ""
        return f" ({url})"
