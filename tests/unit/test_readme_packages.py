"""README 14 and 15 name the packages a host needs from one list, setup.cfg's
install_requires (issue 27 item 13): section 14's two vendoring commands and
section 15's requirements.txt are copies of it, held to it here; neither
section counts the packages in words ("the five packages above" once left
out three), and each keeps its notes on how it was tested apart from its
steps."""

from __future__ import annotations

import re

from packaging.requirements import Requirement

from support import vendorkit

README = (vendorkit.CHECKOUT / "README.txt").read_text(encoding="utf-8")
SECTION_14 = README[README.index("\n14. "):README.index("\n15. ")]
SECTION_15 = README[README.index("\n15. "):README.index("\n16. ")]
COUNTED = re.compile(r"\b(?:two|three|four|five|six|seven|eight|nine|ten|\d+) (?:runtime )?"
                     r"(?:packages|dependencies)\b", re.IGNORECASE)


def _normal(requirement: str) -> str:
    parsed = Requirement(requirement)
    marker = f"; {parsed.marker}" if parsed.marker else ""
    return f"{parsed.name.lower()}{parsed.specifier}{marker}"


def requirements_block(section: str) -> list[str]:
    """The indented lines after "add a requirements.txt" in section 15."""
    after = section[section.index("add a requirements.txt"):]
    block = re.search(r"\n\n((?: {4}\S[^\n]*\n)+)", after)
    assert block, "section 15 lists the requirements.txt lines as an indented block"
    return [line.strip() for line in block.group(1).splitlines()]


def test_section_15s_requirements_txt_is_exactly_setup_cfgs_list():
    assert sorted(map(_normal, requirements_block(SECTION_15))) == \
        sorted(map(_normal, vendorkit.declared()))


def test_section_14s_first_command_is_exactly_setup_cfgs_list():
    commands = vendorkit.readme_vendoring_commands()
    assert sorted(map(_normal, commands[0])) == sorted(map(_normal, vendorkit.declared()))


def test_neither_section_counts_the_packages_in_words():
    for number, section in (("14", SECTION_14), ("15", SECTION_15)):
        assert not COUNTED.findall(section), (number, COUNTED.findall(section))


def test_both_sections_keep_their_notes_on_testing_apart_from_the_steps():
    for section in (SECTION_14, SECTION_15):
        notes = section.index("\nHow these steps were tested\n")
        last_step = max(m.start() for m in re.finditer(r"\nStep \d+\. ", section))
        assert notes > last_step, "the notes follow the last step"
        # The long accounts of a test run live in the notes, not in a step.
        assert "run by hand with Debian 12" not in section[:notes]
