"""The command line helps itself: every command and action says in one line
what it does, in the list and atop its own ``--help``; ``--help`` runs
everywhere; a word that is no command gets the nearest one. A few of these
run through the real entry point, ``python -m vykhukhol``, in a subprocess."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vykhukhol import cli

LIB = Path(__file__).resolve().parents[2] / "lib"
INTERNAL = re.compile(r"\bSPEC\b|README|\bissue \d|§")


def _commands(parser: argparse.ArgumentParser, trail: tuple[str, ...] = ()
              ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every command and action: its words, its parser, the line its group lists."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield (*trail, name), child, listed.get(name)
                yield from _commands(child, (*trail, name))


TRAILS = [trail for trail, _, _ in _commands(cli.build_parser())]


def _vykhukhol(*words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(LIB), "COLUMNS": "200"}
    env.pop("VYKHUKHOL_DATA", None)
    return subprocess.run([sys.executable, "-m", "vykhukhol", *words], capture_output=True,
                          text=True, env=env, timeout=60)


def test_every_command_and_action_says_in_one_line_what_it_does() -> None:
    for trail, parser, listed in _commands(cli.build_parser()):
        what = parser.description
        assert what and "\n" not in what, f"vykhukhol {' '.join(trail)} has no one-line help"
        assert listed == what, f"vykhukhol {' '.join(trail)}: its list line is not its own"


def test_the_table_and_the_parser_hold_the_same_commands() -> None:
    listed = {trail[0] for trail in TRAILS}
    assert [command.name for command in cli.COMMANDS] == list(dict.fromkeys(
        trail[0] for trail in TRAILS))
    assert len(listed) == len(cli.COMMANDS)


@pytest.mark.parametrize("trail", TRAILS, ids=" ".join)
def test_help_of_each_command_runs_exits_0_and_names_no_internal_document(
        trail: tuple[str, ...], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exit_:
        cli.main([*trail, "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr()
    assert shown.out.startswith(f"usage: vykhukhol {' '.join(trail)}") and shown.err == ""
    assert not INTERNAL.search(shown.out), shown.out


def test_vykhukhol_help_lists_every_command_with_its_line() -> None:
    done = _vykhukhol("--help")
    assert done.returncode == 0 and done.stderr == ""
    assert not INTERNAL.search(done.stdout)
    for command in cli.COMMANDS:
        assert re.search(rf"^    {re.escape(command.name)} +{re.escape(command.what)}$",
                         done.stdout, re.M), command.name


def test_a_command_whose_arguments_are_not_obvious_shows_an_example() -> None:
    done = _vykhukhol("newsletter", "create", "--help")
    assert done.returncode == 0
    assert "examples:\n  vykhukhol newsletter create --services news " in done.stdout
    assert done.stdout.splitlines()[done.stdout.splitlines().index("") + 1] == (
        "make a job; prints its name")


def test_an_unknown_command_gets_the_nearest_on_stderr_exit_2() -> None:
    done = _vykhukhol("stauts")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "vykhukhol: no command 'stauts'; did you mean 'status'?\n"


def test_an_unknown_action_of_a_group_gets_the_nearest() -> None:
    done = _vykhukhol("--data", "/nonexistent", "service", "ad", "news")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "vykhukhol service: no command 'ad'; did you mean 'add'?\n"


@pytest.mark.parametrize(("words", "said"), [
    (["newsleter", "list"], "vykhukhol: no command 'newsleter'; did you mean 'newsletter'?"),
    (["suppress", "lsit"], "vykhukhol suppress: no command 'lsit'; did you mean 'list'?"),
    (["settings", "gte", "mode"], "vykhukhol settings: no command 'gte'; did you mean 'get'?"),
    (["xyzzy"], "vykhukhol: no command 'xyzzy'; `vykhukhol --help` lists them"),
])
def test_a_wrong_word_is_one_line_and_changes_nothing(words: list[str], said: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--data", "/nonexistent", *words]) == 2
    shown = capsys.readouterr()
    assert (shown.out, shown.err) == ("", said + "\n")


def test_a_wrong_choice_that_is_no_command_keeps_its_own_message(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["mode", "wroking"]) == 2
    assert "invalid choice: 'wroking'" in capsys.readouterr().err


# What loading the command line may not pull in: every command pays for the
# face and its groups, `vykhukhol cron` every few minutes among them; these are
# imported inside the handlers that need them.
NOT_AT_START = ["jinja2", "vykhukhol.render", "vykhukhol.web", "vykhukhol.members.membership",
                "vykhukhol.members.suppression", "vykhukhol.members.removed",
                "vykhukhol.members.importers", "vykhukhol.bounces.providers", "vykhukhol.mail.dkim",
                "vykhukhol.archive.pages", "vykhukhol.cli.hooks", "difflib", "secrets"]


def test_loading_the_command_line_leaves_the_commands_own_modules_to_them() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys, vykhukhol.cli; print(*sys.modules)"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(LIB)})
    loaded = set(done.stdout.split())
    assert "vykhukhol.cli.site" in loaded
    assert [name for name in NOT_AT_START if name in loaded] == []
