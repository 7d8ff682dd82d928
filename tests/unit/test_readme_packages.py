"""The two deployment pages of the manual (labels deploy-apache and
deploy-passenger) name the packages a host needs from one list, setup.cfg's
install_requires: the Apache page's two vendoring commands and the Passenger
page's requirements.txt are copies of it, held to it here; neither page
counts the packages in words ("the five packages above" once left out three),
and each keeps its notes on how it was tested apart from its steps."""

from __future__ import annotations

import re

from packaging.requirements import Requirement

from support import docskit, vendorkit

SECTION_14 = docskit.section("deploy-apache")
SECTION_15 = docskit.section("deploy-passenger")
COUNTED = re.compile(r"\b(?:two|three|four|five|six|seven|eight|nine|ten|\d+) (?:runtime )?"
                     r"(?:packages|dependencies)\b", re.IGNORECASE)


def _normal(requirement: str) -> str:
    parsed = Requirement(requirement)
    marker = f"; {parsed.marker}" if parsed.marker else ""
    return f"{parsed.name.lower()}{parsed.specifier}{marker}"


def requirements_block(section: str) -> list[str]:
    """The lines of the code block after "add a requirements.txt" on the Passenger page."""
    after = section[section.index("add a requirements.txt"):]
    blocks = docskit.fenced_blocks(after)
    assert blocks, "the Passenger page lists the requirements.txt lines as a code block"
    return [line.strip() for line in blocks[0].splitlines() if line.strip()]


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
        notes = section.index("\n## How these steps were tested\n")
        last_step = max(m.start() for m in re.finditer(r"\n## Step \d+\. ", section))
        assert notes > last_step, "the notes follow the last step"
        # The long accounts of a test run live in the notes, not in a step.
        assert "run by hand with Debian 12" not in section[:notes]


def test_the_russian_deployment_page_copies_the_same_lists():
    """docs/ru/deploying.md repeats the vendoring commands and requirements.txt:
    they must say what the English pages say."""
    assert vendorkit.readme_vendoring_commands("ru-deploying") == vendorkit.readme_vendoring_commands()
    russian = docskit.section("ru-passenger-step-3")
    blocks = [b for b in docskit.fenced_blocks(russian) if "Jinja2" in b]
    assert blocks, "the Russian Passenger step 3 lists the requirements.txt lines"
    lines = [line.strip() for line in blocks[0].splitlines() if line.strip()]
    assert sorted(map(_normal, lines)) == sorted(map(_normal, vendorkit.declared()))
