"""A light reader of the plain ini files we write (settings.ini, service.ini),
for the pages that must start fast (docs/design/startup.md#startup-boundary).

:mod:`configparser` costs a public page's CGI process a millisecond and
more to import (with ``re`` and ``collections`` behind it). The files our
writers make, and most edited by hand, are the simple part of its format:
``[section]`` lines, ``key = value`` lines starting at the line's start, full
line comments (``#``, ``;``) and blank lines. :func:`read_ini` reads exactly
that part, with configparser's results (keys lower-cased, values stripped,
the first ``=`` or ``:`` the delimiter, no inline comments), and returns None
for anything else: an indented line (a continuation, in configparser), a
duplicate section or key, ``[DEFAULT]``, a line that is neither. The caller
then reads the file with configparser, whose answer (its errors included)
stays the rule: :func:`read_sections` does both, for every reader of
settings.ini and service.ini. tests/unit/test_ini_reader.py holds the two to
each other on generated and hostile files.
"""

from __future__ import annotations


def read_ini(text: str) -> dict[str, dict[str, str]] | None:
    """``{section: {key: value}}`` of ``text``, as configparser reads it with
    ``interpolation=None``; None when ``text`` is outside the simple part."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            if stripped and line[0] != stripped[0]:
                return None  # an indented comment: configparser's indentation rules apply
            continue
        if line[0] != stripped[0]:
            return None  # indented: a continuation line, or worse
        if stripped[0] == "[":
            header = stripped[1:-1]
            if stripped[-1] != "]" or not header or "]" in header or "[" in header \
                    or header == "DEFAULT" or header in sections:
                return None
            current = sections[header] = {}
            continue
        cut = min((at for at in (stripped.find("="), stripped.find(":")) if at >= 0), default=-1)
        if cut <= 0 or current is None:
            return None
        key = stripped[:cut].rstrip().lower()
        if not key or key in current or not key.isprintable():
            return None
        current[key] = stripped[cut + 1:].strip()
    return sections


def read_sections(text: str) -> tuple[dict[str, dict[str, str]], str | None]:
    """The sections of ``text`` as ``configparser.ConfigParser(interpolation=None)``
    reads them (each with its ``[DEFAULT]`` keys), and the first line of its
    error, or None when it read the whole text. On an error the sections are
    what configparser had read by then. :func:`read_ini` answers where it can,
    so configparser is imported only for a file outside its part."""
    sections = read_ini(text)
    if sections is not None:
        return sections, None
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    problem = None
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        problem = exc.message.splitlines()[0]
    return {name: dict(parser.items(name, raw=True)) for name in parser.sections()}, problem
