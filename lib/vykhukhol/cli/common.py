"""What the commands share: the parser that answers a wrong word in one line
(:class:`Parser`), the data directory of a run (:class:`Context`), secrets
read without showing them, files read as text, progress on a terminal, and
the warnings more than one command prints."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, NoReturn, TextIO, overload

from vykhukhol import files
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import DataDir, locate
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import LANGUAGES
from vykhukhol.watch import brakes

NAME_HELP = "lower-case letters, digits, - and _, e.g. news"
SERVICE_HELP = "the service's name, e.g. news"
EMAIL_HELP = "e.g. anna@example.org"


class UsageError(Exception):
    """A command line the parser refuses: one line on stderr, exit code 2."""


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as typed; each command's line beside its name, not under
    it (argparse reckons a group's command names two columns too short)."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action.choices, dict):
            longest = max(map(len, action.choices), default=0)
            self._action_max_length = max(self._action_max_length,
                                          longest + self._current_indent + self._indent_increment)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one clear line, exit 2
        raise UsageError(f"{self.prog}: {message}")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # A command or an action that does not exist: the nearest one, as git does.
        if isinstance(action.choices, dict) and value not in action.choices:
            import difflib  # only a wrong word pays for it

            near = difflib.get_close_matches(str(value), list(action.choices), n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"`{self.prog} --help` lists them"
            raise UsageError(f"{self.prog}: no command {str(value)!r}; {hint}")
        super()._check_value(action, value)


def add_command(commands: argparse._SubParsersAction, name: str, what: str,
                *lines: str) -> Parser:
    """Command or action ``name``: ``what`` it does, one line, shown in its
    group's list and atop its own ``--help``, with example ``lines`` below."""
    return commands.add_parser(name, help=what, description=what, epilog=examples(*lines))


def numbered(n: int, noun: str, nouns: str = "") -> str:
    """``n`` with its noun as English says it: "1 recipient", "2 recipients"
    (``nouns``: a plural that is not the noun and an s)."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Columns a person reads: each as wide as its widest cell, two spaces
    apart, the header first (the last column is left ragged)."""
    table = (header, *rows)
    widths = [max(len(row[column]) for row in table) for column in range(len(header) - 1)]
    for row in table:
        print("  ".join([*(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)),
                         row[-1]]))


def examples(*lines: str) -> str | None:
    """The end of a ``--help``: a few command lines, as they are typed."""
    return "examples:\n" + "".join(f"  {line}\n" for line in lines) if lines else None


def actions(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The actions of a group command (``service add``, ``service list`` …)."""
    return parser.add_subparsers(dest="action", required=True, parser_class=Parser)


# Where a secret comes from when it is not typed at a prompt: the
# command line shows it to every user of the host in `ps` and keeps it in the
# shell history, so these are the quiet ways.
PASSWORD_ENV = "VYKHUKHOL_PASSWORD"  # the admin password, for init and password
VALUE_ENV = "VYKHUKHOL_VALUE"        # a secret setting's value, for settings set
STDIN = "-"                          # read the value from the first line of standard input
ASK = "\0ask"                        # --password given without a value: ask for it
VISIBLE = ("note: a secret on the command line is visible to other users in `ps` and stays in "
           "the shell history; leave it out to be asked for it, give - to read it from standard "
           "input, or set {env}")


def read_file(path: str, what: str) -> str:
    """A UTF-8 file named on the command line; ``what`` names it in the error."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{what}: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{what}: {path} is not UTF-8 text") from None


def letter_text_arguments(p: Parser, public_help: str, clicks_help: str) -> None:
    """A letter's text, its HTML version and its two switches, as the series
    letters and the newsletters both take them."""
    body = p.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", help="the text, a template")
    body.add_argument("--body-file", help="a UTF-8 file with the text")
    p.add_argument("--html-file", help="a UTF-8 file with an HTML version (optional)")
    p.add_argument("--markdown", action="store_true",
                   help="the text is Markdown: it makes both the HTML part and the plain text "
                        "(without --html-file; docs/using/services.md#markdown)")
    p.add_argument("--public", action="store_true", help=public_help)
    p.add_argument("--clicks", action="store_true", help=clicks_help)


def language_arguments(p: Parser) -> None:
    """The letter in each other language a reader may have: ``--subject-en``,
    ``--body-en`` or ``--body-file-en``, ``--html-file-en`` (and ``-ru``)."""
    for language in LANGUAGES:
        p.add_argument(f"--subject-{language}", metavar="SUBJECT",
                       help=f"the subject for readers whose language is {language} "
                            "(docs/using/services.md#letter-languages)")
        p.add_argument(f"--body-{language}", metavar="TEXT", help=f"its text in {language}")
        p.add_argument(f"--body-file-{language}", metavar="FILE",
                       help=f"a UTF-8 file with its text in {language}")
        p.add_argument(f"--html-file-{language}", metavar="FILE",
                       help=f"a UTF-8 file with its HTML version in {language} (optional)")


def language_versions(args: argparse.Namespace) -> dict[str, tuple[str, str, str | None]]:
    """(subject, text, html) by language of what :func:`language_arguments` gave."""
    found = {}
    for language in LANGUAGES:
        subject, body = getattr(args, f"subject_{language}"), getattr(args, f"body_{language}")
        body_file, html_file = (getattr(args, f"body_file_{language}"),
                                getattr(args, f"html_file_{language}"))
        if subject is None and body is None and body_file is None and html_file is None:
            continue
        if subject is None or (body is None) == (body_file is None):
            raise BadInput(f"the letter in {language}: give --subject-{language} and one of "
                           f"--body-{language} or --body-file-{language}")
        text = body if body is not None else read_file(body_file, f"--body-file-{language}")
        html = read_file(html_file, f"--html-file-{language}") if html_file else None
        found[language] = (subject, text, html)
    return found


def letter_body(args: argparse.Namespace) -> str:
    """A letter's text: ``--body``, or the file ``--body-file`` names."""
    return args.body if args.body is not None else read_file(args.body_file, "--body-file")


def warn_unknown(*sources: str | None) -> None:
    """A warning on stderr for each variable no letter is given ({{ nmae }}):
    saved all the same, it renders as nothing."""
    from vykhukhol import render  # Jinja2: only for a command that draws a template

    for name in sorted({n for source in sources for n in render.unknown_variables(source or "")}):
        print(f"warning: {{{{ {name} }}}} is not a variable letters are given; it stays empty "
              "in every letter", file=sys.stderr)


def resume(ctx: Context, kind: str, name: str) -> None:
    """``service resume`` / ``newsletter resume``: a braked target goes on."""
    if not brakes.resume(ctx.data, ctx.settings(), kind, name):
        raise BadInput("{target} is not braked: nothing to resume",
                       target=brakes.target(kind, name))
    print(f"{brakes.target(kind, name)} resumed: it sends again with the next run; "
          "its complaints and addresses gone so far are forgotten")


def progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)


@overload
def read_secret(given: str | None, what: str, env: str, required: Literal[True] = True) -> str: ...
@overload
def read_secret(given: str | None, what: str, env: str, required: bool) -> str | None: ...
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
