"""The manual's vendoring step (label apache-step-1) offline: what `pip install --target lib …` leaves in a
folder, copied from the distributions installed for this test run (tests must
not reach the package index), and the requirements that step installs.

Shared by the Apache deployment test and the host-dependencies test.
"""

from __future__ import annotations

import configparser
import importlib.metadata
import re
import shlex
import shutil
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def _copy_bytes(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)  # no mode, no owner: as an FTP upload


def vendor(requirements: tuple[str, ...], target: Path) -> list[str]:
    """Step 1, offline: what `pip install --target lib …` leaves there, copied
    from the distributions installed for this test run. A requirement whose
    environment marker does not hold for this Python is skipped, as pip
    skips it."""
    from packaging.requirements import Requirement

    todo, seen = list(requirements), []
    while todo:
        requirement = Requirement(todo.pop())
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # behind a marker (another Python's version, an extra): not needed here
        name = requirement.name
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise AssertionError(f"{name} is not installed for the tests; "
                                 "`pip install -e '.[test]'` installs it") from None
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.append(key)
        for file in dist.files or []:
            if file.parts[0] == ".." or "__pycache__" in file.parts:
                continue  # console scripts land outside site-packages
            _copy_bytes(Path(dist.locate_file(file)), target / file)
        todo += list(dist.requires or [])
    return seen


def declared() -> list[str]:
    """setup.cfg's install_requires, one requirement a line, as written."""
    config = configparser.ConfigParser()
    config.read(CHECKOUT / "setup.cfg", encoding="utf-8")
    return [line.strip() for line in config["options"]["install_requires"].splitlines()
            if line.strip()]


def readme_vendoring_commands(label: str = "deploy-apache") -> list[list[str]]:
    """The requirements of each `pip install --target lib` command of the
    manual's Apache page (label deploy-apache, or the page the label names),
    read as the shell reads them (quotes, continued lines)."""
    from support import docskit

    section = docskit.section(label)
    commands = []
    for match in re.finditer(r"^ *python3 -m pip install --target lib (?:[^\n]*\\\n)*[^\n]*$",
                             section, re.MULTILINE):
        words = shlex.split(match.group().replace("\\\n", " "))
        commands.append([w for w in words[words.index("lib") + 1:] if not w.startswith("-")
                         and not re.fullmatch(r"[0-9.]+", w)])
    return commands
