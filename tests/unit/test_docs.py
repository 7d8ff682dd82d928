"""The manual says what the code does, and every page of it can be reached.

The reference pages are written from the code by tools/docs_reference.py;
these tests fail when one is stale, when a setting, command, option or alert
is missing from them, when a page under docs/ is in no toctree, and they
prove that the build's ``-W`` turns a broken cross-reference into a failure.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"

_spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "tools" / "docs_reference.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def page(name: str) -> str:
    return (REFERENCE / name).read_text(encoding="utf-8")


def test_the_generated_reference_pages_say_what_the_code_does_now():
    stale = tool.stale()
    assert not stale, (f"out of date: {', '.join('docs/reference/' + name for name in stale)}; "
                       "run python tools/docs_reference.py")


def test_every_setting_is_in_the_reference_with_its_default():
    from vykhukhol.settings import KEYS

    text = page("settings.md")
    missing = [name for name in KEYS
               if f"({tool.label('setting', name)})=\n### `{name}`\n" not in text]
    assert not missing, f"settings missing from docs/reference/settings.md: {missing}"
    sections = text.split("\n### ")
    undefaulted = [name for name in KEYS
                   if not any(s.startswith(f"`{name}`\n") and "- Default: " in s for s in sections)]
    assert not undefaulted, f"settings without their default in settings.md: {undefaulted}"


def _command_section(text: str, command: str) -> str:
    start = text.find(f"({tool.label('command', *command.split())})=\n")
    if start < 0:
        return ""
    end = text.find("\n(command-", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_every_command_and_option_is_in_the_reference():
    text = page("commands.md")
    missing = [command for command in tool.command_names()
               if f"`vykhukhol {command}`" not in _command_section(text, command)]
    assert not missing, f"commands missing from docs/reference/commands.md: {missing}"
    unsaid = [f"{command or 'vykhukhol'} {option}"
              for command, options in tool.option_names().items()
              for option in options
              if f"- `{option}" not in (_command_section(text, command) if command else text)]
    assert not unsaid, f"options missing from docs/reference/commands.md: {unsaid}"


def test_every_alert_is_in_the_reference_with_its_subject_in_both_languages():
    from vykhukhol.i18n import catalog

    alerts = importlib.import_module(tool.ALERTS_MODULE)
    text = page("alerts.md")
    russian = catalog("ru")
    missing = [subject for subject, (first, _rest) in alerts.BODIES.items()
               if f"## `{subject}`" not in text or first not in text
               or russian.gettext(first) not in text]
    assert not missing, f"alerts missing from docs/reference/alerts.md (subject, English or Russian): {missing}"
    assert tool.alert_subjects() == list(alerts.BODIES)


# --- every page is reachable --------------------------------------------------

_TOCTREE = re.compile(r"^(```+|:::+)\{toctree\}[^\n]*\n(.*?)^\1\s*$", re.S | re.M)


def _pages() -> set[str]:
    """Every page under docs/ as Sphinx names it (``reference/index``)."""
    return {path.relative_to(DOCS).with_suffix("").as_posix()
            for path in DOCS.rglob("*.md") if "_build" not in path.relative_to(DOCS).parts}


def _toctree_entries(docname: str, pages: set[str]) -> set[str]:
    text = (DOCS / f"{docname}.md").read_text(encoding="utf-8")
    folder = docname.rpartition("/")[0]
    found = set()
    for _fence, body in _TOCTREE.findall(text):
        glob = any(line.strip() == ":glob:" for line in body.splitlines())
        for line in body.splitlines():
            entry = line.strip()
            if not entry or entry.startswith(":"):
                continue
            entry = re.sub(r"^.*<(.+)>$", r"\1", entry).removesuffix(".md")
            target = entry[1:] if entry.startswith("/") else "/".join(filter(None, (folder, entry)))
            target = "/".join(part for part in target.split("/") if part != ".")
            found.update(fnmatch.filter(pages, target) if glob else {target})
    return found


def test_every_page_under_docs_is_reachable_from_the_index():
    pages = _pages()
    assert "index" in pages, "docs/index.md, the manual's first page, is missing"
    reached, todo = {"index"}, ["index"]
    while todo:
        for entry in _toctree_entries(todo.pop(), pages):
            assert entry in pages, f"a toctree names {entry}, which is not a page under docs/"
            if entry not in reached:
                reached.add(entry)
                todo.append(entry)
    unreached = sorted(pages - reached)
    assert not unreached, f"pages in no toctree reached from docs/index.md: {unreached}"


def test_the_reference_index_lists_every_page_of_the_reference():
    pages = _pages()
    listed = _toctree_entries("reference/index", pages)
    unlisted = sorted(name for name in pages
                      if name.startswith("reference/") and name != "reference/index"
                      and name not in listed)
    assert not unlisted, f"pages of docs/reference/ not in its index's toctree: {unlisted}"
    generated = {f"reference/{name.removesuffix('.md')}" for name in tool.PAGES
                 if name.endswith(".md")}  # openapi.json is a document for programs
    assert generated <= listed, f"generated pages not in the index: {sorted(generated - listed)}"


# --- the build fails on a broken cross-reference -----------------------------


def _sphinx_project(folder: Path, body: str) -> Path:
    """A two-page manual built with the real docs/conf.py."""
    docs = folder / "docs"
    (docs / "_static").mkdir(parents=True)
    shutil.copy(DOCS / "conf.py", docs / "conf.py")
    shutil.copy(ROOT / "setup.cfg", folder / "setup.cfg")
    (docs / "index.md").write_text("# Manual\n\n```{toctree}\npage\n```\n", encoding="utf-8")
    (docs / "page.md").write_text(f"(here)=\n# Page\n\n{body}\n", encoding="utf-8")
    return docs


def _build(docs: Path, builder: str = "html") -> subprocess.CompletedProcess:
    """``sphinx-build -W``; the dummy builder resolves every reference too, and writes nothing."""
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-E", "-b", builder,
                           str(docs), str(docs / "_build" / builder)],
                          capture_output=True, text=True, timeout=300)


def test_a_broken_cross_reference_fails_the_docs_build(tmp_path):
    for module in ("sphinx", "myst_parser", "furo"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[docs]')")
    sound = _build(_sphinx_project(tmp_path / "sound", "See {ref}`here`."))
    assert sound.returncode == 0, f"a manual without a broken reference failed:\n{sound.stderr}"
    broken = _build(_sphinx_project(tmp_path / "broken", "See {ref}`nowhere-at-all`."), "dummy")
    assert broken.returncode != 0, "a broken {ref} did not fail sphinx-build -W"
    assert "nowhere-at-all" in broken.stderr, broken.stderr
    link = _build(_sphinx_project(tmp_path / "link", "See [the missing page](missing.md)."), "dummy")
    assert link.returncode != 0, "a link to a missing page did not fail sphinx-build -W"
    assert "missing.md" in link.stderr, link.stderr
