"""What the commands share: the data directory of a run (:class:`Context`),
secrets read without showing them, progress on a terminal, and the warnings
more than one command prints."""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
from collections.abc import Callable, Iterator
from typing import TextIO

from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir, locate
from vykhukhol.errors import BadInput, NotFound

# Where a secret comes from when it is not typed at a prompt (README §2): the
# command line shows it to every user of the host in `ps` and keeps it in the
# shell history, so these are the quiet ways.
PASSWORD_ENV = "VYKHUKHOL_PASSWORD"  # the admin password, for init and password
VALUE_ENV = "VYKHUKHOL_VALUE"        # a secret setting's value, for settings set
STDIN = "-"                          # read the value from the first line of standard input
ASK = "\0ask"                        # --password given without a value: ask for it
VISIBLE = ("note: a secret on the command line is visible to other users in `ps` and stays in "
           "the shell history; leave it out to be asked for it, give - to read it from standard "
           "input, or set {env}")


def progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)


def read_secret(given: str | None, what: str, env: str, required: bool = True) -> str | None:
    """A secret value: ``given`` on the command line (``-``: the first line of
    standard input; :data:`ASK` or None: not given), else the variable ``env``,
    else typed at a prompt (twice) on a terminal or read from standard input.
    None only when not ``required`` and nothing was given."""
    if given == STDIN:
        return _stdin_line(what)
    if given not in (None, ASK):
        return given
    if os.environ.get(env):
        return os.environ[env]
    if given is None and not required:
        return None
    if not sys.stdin.isatty():
        return _stdin_line(what)
    value = getpass.getpass(f"{what}: ")
    if getpass.getpass("again: ") != value:
        raise BadInput(f"the two {what}s differ; nothing changed")
    return value


def _stdin_line(what: str) -> str:
    line = sys.stdin.readline()
    if not line:
        raise BadInput(f"no {what} on standard input; nothing changed")
    return line.removesuffix("\n").removesuffix("\r")


def note_if_visible(given: str | None, env: str) -> None:
    if given not in (None, ASK, STDIN, ""):
        print(VISIBLE.format(env=env), file=sys.stderr)


class Context:
    def __init__(self, data_arg: str | None) -> None:
        self.data = DataDir(locate(data_arg))

    def settings(self) -> settings_mod.Settings:
        if not self.data.settings.exists():
            raise NotFound(f"no settings in {self.data.root}; run `vykhukhol init` first")
        return settings_mod.load(self.data.settings)


HTTP_WARNING = ("warning: site_url {url} is not https: letters go without one-click unsubscribe "
                "(List-Unsubscribe-Post, RFC 8058), which Gmail and Yahoo want of bulk senders")


def warn_http(site_url: str) -> None:
    if not site_url.startswith("https://"):
        print(HTTP_WARNING.format(url=site_url), file=sys.stderr)


@contextlib.contextmanager
def export_target(target: str | None) -> Iterator[tuple[TextIO, Callable[[int], None] | None]]:
    """Where an export goes: FILE, created 0600 and never over an existing
    one, with progress on stderr; or standard output, without."""
    from pathlib import Path

    from vykhukhol import files

    if not target:
        yield sys.stdout, None
        return
    try:
        out = files.open_private(Path(target))
    except FileExistsError:
        raise BadInput("{file} exists already; nothing written (remove it or name another file)",
                       file=target) from None
    try:
        yield out, lambda n: progress(f"exported {n}")
    finally:
        out.close()
        progress("")
