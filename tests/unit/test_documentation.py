"""What the user reads must match what the code has: settings, texts, commands."""

from __future__ import annotations

import re
from pathlib import Path

from vykhukhol import i18n
from vykhukhol.cli import build_parser
from vykhukhol.settings import KEYS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.txt").read_text(encoding="utf-8")
TEMPLATES = ROOT / "lib" / "vykhukhol" / "templates"


def test_every_setting_in_the_code_is_documented_in_the_readme_with_its_default():
    """Each key of settings.KEYS appears in README.txt's settings table with its default."""
    for name, spec in KEYS.items():
        rows = [line for line in README.splitlines() if re.match(rf"\s*{re.escape(name)}\s", line)]
        assert rows, f"setting {name} is not documented in README.txt"
        if spec.default and name != "security.secret":
            assert any(spec.default in row for row in rows), f"{name}: default {spec.default!r} not in README"


def test_every_public_page_text_exists_in_russian_and_english():
    """Every message key has both languages, and the same {placeholders} in each."""
    for key, (ru, en) in i18n.MESSAGES.items():
        assert ru.strip() and en.strip(), key
        assert set(re.findall(r"{(\w+)}", ru)) == set(re.findall(r"{(\w+)}", en)), key


def _admin_texts() -> set[str]:
    found = set()
    pages = sorted((ROOT / "lib/vykhukhol/web/admin").glob("*.py"))
    assert len(pages) > 1, "the admin pages are no longer in web/admin/: scan where they are"
    for path in list((TEMPLATES / "admin").glob("*.html")) + pages + [ROOT / "lib/vykhukhol/health.py"]:
        source = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'_\(\s*"((?:[^"\\]|\\.)+)"', source))
        found |= set(re.findall(r'\(\s*"/[a-z/]*",\s*"([^"]+)"\)', source))  # the menu
    found |= {spec.help for spec in KEYS.values()}
    found |= set(i18n.SETTING_LABELS.values())
    return found


def test_every_admin_text_has_its_russian_translation():
    """Every _("…") of the admin pages and every setting's help has a Russian entry."""
    missing = sorted(text for text in _admin_texts() if text not in i18n.RU)
    assert not missing, f"no Russian for: {missing}"


def test_translations_keep_their_placeholders():
    """A Russian text has exactly the {placeholders} of its English key."""
    for english, russian in i18n.RU.items():
        assert set(re.findall(r"{(\w+)}", english)) == set(re.findall(r"{(\w+)}", russian)), english


def test_every_cli_command_is_in_the_readme():
    """Each top-level command of the parser is named in README.txt's command list."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    section = README.split("2. The command line\n---", 1)[1].split("3. Settings\n---", 1)[0]
    for command in commands:
        assert re.search(rf"(^\s+|\| ){command}\b", section, re.M), f"{command} is not in README.txt"


def test_every_setting_has_a_human_label_on_the_settings_page():
    assert set(i18n.SETTING_LABELS) == set(KEYS)
