"""Sphinx configuration of the manual: MyST Markdown sources, the furo theme.

Build it as CI does, warnings being errors (a broken link or cross-reference
fails the build)::

    .venv/bin/python -m pip install -e '.[docs]'
    .venv/bin/sphinx-build -W -q docs docs/_build/html

The pages under reference/ that say so are generated from the code by
tools/docs_reference.py; tests/unit/test_docs.py fails when one is stale.
"""

import configparser
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def _version() -> str:
    setup = configparser.ConfigParser()
    setup.read(CHECKOUT / "setup.cfg", encoding="utf-8")
    return setup["metadata"]["version"]


project = "Vykhukhol"
author = "the Vykhukhol authors"
copyright = "2026, the Vykhukhol authors"
release = version = _version()

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# Every warning is an error (-W) and none is hidden.
suppress_warnings: list[str] = []
nitpicky = True

myst_heading_anchors = 0  # a page is reached by a (label)= target, never by a guessed anchor

html_theme = "furo"
html_title = f"Vykhukhol {release}"
# _static/screens/: the pages as a person sees them (tests/browser/test_docs_screens.py).
html_static_path = ["_static"]
