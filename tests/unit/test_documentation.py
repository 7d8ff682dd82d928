"""What the user reads must match what the code has: settings, texts, commands."""

from __future__ import annotations

import re

from support import docskit
from vykhukhol import i18n
from vykhukhol.cli import build_parser
from vykhukhol.settings import KEYS

SETTINGS = docskit.section("settings-table")  # docs/using/settings.md
COMMANDS = docskit.section("command-list")    # docs/using/command-line.md


def test_every_setting_in_the_code_is_documented_in_the_manual_with_its_default():
    """Each key of settings.KEYS appears in the manual's settings table with its default."""
    for name, spec in KEYS.items():
        rows = [line for line in SETTINGS.splitlines() if re.match(rf"\s*{re.escape(name)}\s", line)]
        assert rows, f"setting {name} is not in the settings table (docs, label settings-table)"
        if spec.default and name != "security.secret":
            assert any(spec.default in row for row in rows), f"{name}: default {spec.default!r} not in the settings table"


def test_every_cli_command_is_in_the_manual():
    """Each top-level command of the parser is named in the manual's command list."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    section = COMMANDS
    for command in commands:
        assert re.search(rf"(^\s+|\| ){command}\b", section, re.M), f"{command} is not in the command list (docs, label command-list)"


def test_every_setting_has_a_human_label_on_the_settings_page():
    assert set(i18n.SETTING_LABELS) == set(KEYS)
