"""Where the public corpora are: beside the checkout, never in it.

Data fetched from other projects (Sisimai's bounce set) is not committed; it
lies in ``../shared/corpora/`` next to the checkout (for a ``git worktree``,
next to its main checkout too), or in the folder that ``VYKHUKHOL_CORPORA``
names (docs/development/tests.md#dev-tests-corpora). A test that needs a
corpus asks :func:`need`, which skips it, saying where it looked, when the
corpus is absent (a user's own clone); a script asks :func:`missing` and says
so itself.
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
#: The environment variable that names the folder holding the corpora.
ENV = "VYKHUKHOL_CORPORA"
DOCS = "docs/development/tests.md#dev-tests-corpora"


def _checkouts() -> list[Path]:
    """This checkout, and for a git worktree the main checkout it belongs to
    (its ``.git`` file says ``gitdir: <main>/.git/worktrees/<name>``)."""
    found = [CHECKOUT]
    dot_git = CHECKOUT / ".git"
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        gitdir = (CHECKOUT / text.removeprefix("gitdir:").strip()).resolve()
        if gitdir.parent.name == "worktrees" and gitdir.parents[1].name == ".git":
            found.append(gitdir.parents[2])
    return found


def folder(name: str) -> Path:
    """Where corpus ``name`` (``sisimai``) is; the first place looked when absent."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]) / name
    places = [checkout.parent / "shared" / "corpora" / name for checkout in _checkouts()]
    return next((place for place in places if place.is_dir()), places[0])


def missing(name: str, what: str) -> str:
    """Why corpus ``name`` cannot be read, or "" when it is there."""
    path = folder(name)
    if path.is_dir():
        return ""
    if os.environ.get(ENV):
        return f"{what} is not where {ENV} points: {path} (see {DOCS})"
    return f"{what} is not beside this checkout: ../shared/corpora/{name} (see {DOCS})"


def need(name: str, what: str) -> Path:
    """The folder of corpus ``name``, or skip the test that asked, saying why."""
    import pytest

    reason = missing(name, what)
    if reason:
        pytest.skip(reason)
    return folder(name)
