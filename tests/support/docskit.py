"""The manual's text, found by its labels.

Every page and section of docs/ that a test reads carries a MyST label, a
line `(name)=` above its heading. A test names the label, never a section
number or a title that may be reworded; `section(name)` gives the text under
that heading, up to the next heading of the same or a higher level.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
HEADING = re.compile(r"(#+) ")
FENCE = re.compile(r"\s*(```|~~~)")


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


def page_of(label: str) -> Path:
    """The page that holds the label."""
    marker = f"({label})="
    for page in _pages():
        if marker in page.read_text(encoding="utf-8").splitlines():
            return page
    raise AssertionError(f"no page of docs/ has the label ({label})=")


def section(label: str) -> str:
    """The heading that `(label)=` marks and the text under it, up to the next
    heading of the same or a higher level (headings inside fenced code blocks
    are not headings)."""
    lines = page_of(label).read_text(encoding="utf-8").splitlines()
    start = lines.index(f"({label})=") + 1
    heading = HEADING.match(lines[start])
    assert heading, f"({label})= is not followed by a heading"
    level = len(heading.group(1))
    taken, fenced = [lines[start]], False
    for line in lines[start + 1:]:
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            found = HEADING.match(line)
            if found and len(found.group(1)) <= level:
                break
        taken.append(line)
    while taken and (not taken[-1].strip() or re.fullmatch(r"\([\w-]+\)=", taken[-1])):
        taken.pop()  # the next section's label and the blank lines before it
    return "\n".join(taken) + "\n"


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks of a text, in order."""
    blocks, current = [], None
    for line in text.splitlines():
        if FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks
