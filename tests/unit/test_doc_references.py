"""The repository stands on its own: what it cites, a reader of it has.

Code, tools, tests and the manual never cite a document outside the repository (a
numbered section of a spec, an issue number, a numbered section of the old
README); a reader is pointed at the manual instead, as
``docs/<path>.md#<label>``, and every such pointer names a page that exists
and a label (a MyST ``(label)=`` line) that page defines. A page named
without a label, as the texts users read do, must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: Where no outside document may be cited (folders are searched whole).
NO_OUTSIDE_REFERENCES = ["lib", "tools", "docs", "README.txt", "tests"]
#: Parts whose references are still being rewritten; empty this as they land.
PENDING: list[str] = []
#: Where every ``docs/<path>.md#<label>`` must name a real page and label.
POINTERS = ["lib", "tools", "tests"]
#: Where a page named without a label must exist too (the texts users read).
PAGES = ["lib", "tools"]

TEXT = {".py", ".md", ".txt", ".html", ".po", ".cfg", ".ini", ".toml", ".css", ".js", ".json"}
SKIPPED = {"tests/data", "docs/_build"}

OUTSIDE = re.compile(
    r"\bSPEC *(?:section +|§ *)?\d+"             # a section of the spec
    r"|\bissues? +#?\d+"                         # an issue of the tracker
    r"|\bREADME[ ,]*(?:section +|§ *)?\d+",      # a numbered section of the old README
    re.IGNORECASE)
POINTER = re.compile(r"\bdocs/([\w./-]+?\.md)(?:#([\w-]+))?")
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$", re.MULTILINE)


def _files(places: list[str]):
    for place in places:
        path = ROOT / place
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in found:
            rel = file.relative_to(ROOT).as_posix()
            if (file.is_file() and file.suffix in TEXT
                    and not any(rel == s or rel.startswith(s + "/") for s in SKIPPED)
                    and "__pycache__" not in file.parts):
                yield rel, file.read_text(encoding="utf-8", errors="replace")


def _pending(rel: str) -> bool:
    return any(rel == p or rel.startswith(p + "/") for p in PENDING)


def _lines(places: list[str], pattern: re.Pattern[str]):
    for rel, text in _files(places):
        for number, line in enumerate(text.splitlines(), start=1):
            for match in pattern.finditer(line):
                yield rel, number, match


def test_no_file_cites_a_spec_section_an_issue_or_a_readme_section() -> None:
    found = [f"{rel}:{number}: {match.group(0)}"
             for rel, number, match in _lines(NO_OUTSIDE_REFERENCES, OUTSIDE)
             if not _pending(rel)]
    assert not found, "outside documents cited (point at docs/ instead):\n" + "\n".join(found)


def test_every_pointer_into_the_manual_names_a_page_and_a_label_it_defines() -> None:
    labels: dict[str, set[str]] = {}
    broken = []
    for rel, number, match in _lines(POINTERS, POINTER):
        page, label = match.groups()
        if label is None:
            continue
        if page not in labels:
            path = DOCS / page
            labels[page] = set(LABEL.findall(path.read_text(encoding="utf-8"))) if path.is_file() else set()
        if label not in labels[page]:
            why = "no such label" if (DOCS / page).is_file() else "no such page"
            broken.append(f"{rel}:{number}: {match.group(0)} ({why})")
    assert not broken, "pointers into the manual that lead nowhere:\n" + "\n".join(broken)


def test_every_page_of_the_manual_a_text_names_exists() -> None:
    missing = [f"{rel}:{number}: {match.group(0)}"
               for rel, number, match in _lines(PAGES, POINTER)
               if not (DOCS / match.group(1)).is_file()]
    assert not missing, "pages of the manual that do not exist:\n" + "\n".join(missing)
