"""Where the data directory is, and the path of every file in it.

Found, in order: ``--data DIR`` (CLI), ``VYKHUKHOL_DATA``, a file
``vykhukhol.path`` beside the entry scripts, else ``data/`` of the checkout.
Every name that reaches a path goes through :func:`check_name` first, so no
URL or form can name a file outside the data directory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from vykhukhol.errors import BadInput

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
# A letter whose clicks are counted: a newsletter job (its letter in another
# language as job.en or job.ru), or a series letter as service.number.hash of
# its links (vykhukhol.newsletters.clicks).
LETTER_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}(?:\.[0-9]{1,3}\.[0-9a-f]{12}|\.ru|\.en)?")
CHECKOUT = Path(__file__).resolve().parents[2]  # lib/vykhukhol/ → the checkout


def check_name(name: str, what: str = "name") -> str:
    """A DB, service or job name, or BadInput saying what a name may be."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        shown = name if isinstance(name, str) and len(name) <= 60 else "(too long)"
        raise BadInput(
            f"invalid {what} {shown!r}: use 1-40 characters a-z, 0-9, _ and -, starting with a letter or digit"
        )
    return name


def locate(explicit: str | os.PathLike[str] | None = None,
           scripts_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data directory, found in the order docs/reference/data-files.md#data-files-where gives."""
    if explicit:
        return Path(explicit).resolve()
    env = os.environ.get("VYKHUKHOL_DATA")
    if env:
        return Path(env).resolve()
    beside = [Path(scripts_dir)] if scripts_dir else []
    for folder in (*beside, CHECKOUT / "cgi"):
        pointer = folder / "vykhukhol.path"
        if pointer.is_file():
            text = pointer.read_text(encoding="utf-8").strip()
            if text:
                target = Path(text)
                return (target if target.is_absolute() else (pointer.parent / target)).resolve()
    return (CHECKOUT / "data").resolve()


class DataDir:
    """Paths inside one data directory. It creates nothing by itself.

    Immutable, compared and hashed by its root. A plain class, not a frozen
    dataclass: :mod:`dataclasses` imports :mod:`inspect`, a cost every CGI
    process of a public page would pay (docs/design/startup.md#startup)."""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: str | os.PathLike) -> None:
        object.__setattr__(self, "root", Path(root))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"DataDir is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataDir):
            return NotImplemented
        return self.root == other.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"DataDir(root={self.root!r})"

    def __reduce__(self) -> tuple:  # copy and pickle make a new one, never set the root
        return (DataDir, (self.root,))

    @property
    def settings(self) -> Path:
        return self.root / "settings.ini"

    @property
    def services(self) -> Path:
        return self.root / "services"

    @property
    def newsletters(self) -> Path:
        return self.root / "newsletters"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def outbox(self) -> Path:
        return self.root / "outbox"

    @property
    def letters(self) -> Path:
        """Copies of the newsletters' letters, kept after their jobs for the
        archive and the recipients' own copies (:mod:`vykhukhol.archive`)."""
        return self.root / "letters"

    # The bounce reader's files (vykhukhol.bounces), named here so that whoever
    # must find an address in them (vykhukhol.members.traces) needs no bounces.
    @property
    def bounce_log(self) -> Path:
        """bounces.log: one line per returned message or report."""
        return self.log / "bounces.log"

    @property
    def bounce_journal(self) -> Path:
        """The bounce reader's journal: the batches and the messages done."""
        return self.root / "bounces" / "processed.txt"

    @property
    def kept_bounces(self) -> Path:
        """The returned messages kept for the admin."""
        return self.root / "bounces" / "kept"

    @property
    def soft_counts(self) -> Path:
        """The soft failures counted per service, address and letter."""
        return self.state / "soft"

    def db(self, db: str) -> Path:
        return self.services / check_name(db, "DB name")

    def job(self, job: str, suffix: str) -> Path:
        return self.newsletters / f"{check_name(job, 'newsletter name')}.{suffix}"

    @property
    def clicks(self) -> Path:
        """The counted links of letters and their clicks (vykhukhol.files.clicklinks)."""
        return self.root / "clicks"

    def click_file(self, letter: str, suffix: str) -> Path:
        """``<letter>.links`` (its links, one a line) or ``<letter>.counts``."""
        if not isinstance(letter, str) or not LETTER_RE.fullmatch(letter):
            raise BadInput(f"invalid letter id {letter[:60]!r}")
        return self.clicks / f"{letter}.{suffix}"

    @property
    def webhooks(self) -> Path:
        """The webhooks: their endpoints, the events journal, each endpoint's
        progress, retries and deliveries (vykhukhol.webhooks)."""
        return self.root / "webhooks"

    @property
    def api(self) -> Path:
        """The API's tokens (only their hashes) and each token's rate counter
        (vykhukhol.web.api)."""
        return self.root / "api"

    def make_skeleton(self) -> None:
        from vykhukhol.files import make_folder

        for folder in (self.services, self.newsletters, self.state, self.log, self.outbox):
            make_folder(folder)
