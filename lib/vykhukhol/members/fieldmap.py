"""Which columns of another tool's export fill which of the site's fields
(docs/using/import.md#import-fields), and each record's values checked as a
form's.

A column maps to a field when its header, or a listmonk attribute's key, is
the field's name or one of its labels (any case; spaces, ``_`` and ``-``
alike): Mailchimp writes its merge fields by their labels ("City", not
``MMERGE3``), phpList its attributes by their names. ``--map COLUMN=FIELD``
(:meth:`Columns.parse_map`) decides instead, ``--map COLUMN=-`` leaves a
column out. A column named ``language``, ``lang`` or ``locale`` is the
reader's own language when a value says ru or en (``ru_RU``, ``en-US``,
``Russian``); any other value says nothing and refuses nothing.

What it deliberately does not do: create fields (an owner defines them,
docs/using/fields.md#fields), or change the values of a reader who is
subscribed already.

Light at import (no csv, json or the tools' readers): every command line
loads :mod:`vykhukhol.members.importing`, which uses it.
"""

from __future__ import annotations

from typing import NamedTuple

from vykhukhol.errors import BadInput
from vykhukhol.settings.fields import Field

LANGUAGE = "language"  # what --map names the reader's language by
_LANGUAGE_COLUMNS = ("language", "lang", "locale", "preferred language")
_LANGUAGES = {"ru": "ru", "rus": "ru", "russian": "ru", "русский": "ru",
              "en": "en", "eng": "en", "english": "en", "английский": "en"}
LEFT_OUT = "-"  # --map COLUMN=- : the column fills nothing


class Mapping(NamedTuple):
    """What one file's columns fill: fields by column, the language column,
    and the columns nothing reads (shown by a dry run)."""

    fields: dict[str, Field]
    language: str | None
    unused: tuple[str, ...]


class Values(NamedTuple):
    """One record's canonical field values by field name, and its language."""

    fields: dict[str, str]
    language: str | None


class BadCell(NamedTuple):
    """A value that does not fit its field: the record is refused, naming it."""

    column: str
    why: BadInput


class Columns:
    """The site's fields and the ``--map`` choices, applied to each header
    a reading meets (a Mailchimp zip has one per file); it remembers what it
    mapped for the dry run."""

    def __init__(self, defined: list[Field] | None = None, choices: dict[str, str] | None = None,
                 lang: str = "en") -> None:
        self.defined = list(defined or [])
        self.lang = lang
        by_name = {f.name: f for f in self.defined}
        self.choices: dict[str, str] = {}   # by the column's squashed spelling
        self._spelled: dict[str, str] = {}  # the column as --map wrote it
        for column, name in (choices or {}).items():
            if name not in by_name and name not in (LANGUAGE, LEFT_OUT):
                raise BadInput("--map {column}={name}: no field is named {name!r} (defined: "
                               "{names}); nothing was imported", column=column, name=name,
                               names=", ".join([*by_name, LANGUAGE]))
            self.choices[squash(column)] = name
            self._spelled[squash(column)] = column
        self._by_name = by_name
        self._met: set[str] = set()
        self.seen = Mapping({}, None, ())

    @staticmethod
    def parse_map(given: list[str] | None) -> dict[str, str]:
        """``["Town=city", "Sprache=language"]`` as {column: field}; BadInput
        for one without ``=``."""
        choices = {}
        for item in given or []:
            if not item.strip():
                continue  # a blank line of the page's box
            column, equals, name = item.partition("=")
            if not equals or not column.strip():
                raise BadInput("--map takes COLUMN=FIELD (or COLUMN=- to leave it out), not "
                               "{given!r}", given=item)
            choices[column.strip()] = name.strip().lower() or LEFT_OUT
        return choices

    def map(self, header: list[str], taken: tuple[str | None, ...] = ()) -> Mapping:
        """The mapping of one header; ``taken``: the columns the tool's reader
        uses itself (the address, the name, the status, the times)."""
        self._met.update(squash(column) for column in header if column.strip())
        # a column --map names fills what it says, even one the reader uses itself
        used = {column for column in taken if column and squash(column) not in self.choices}
        fields: dict[str, Field] = {}
        language = None
        for column in header:
            if not column.strip() or column in used:
                continue
            key = squash(column)
            chosen = self.choices.get(key) or self._matching(key)
            if chosen == LANGUAGE and language is None:
                language = column
            elif chosen in self._by_name and chosen not in {f.name for f in fields.values()}:
                fields[column] = self._by_name[chosen]
        unused = tuple(column for column in header if column.strip() and column not in used
                       and column not in fields and column != language)
        found = Mapping(fields, language, unused)
        mapped = {**self.seen.fields, **fields}
        said = self.seen.language or language
        self.seen = Mapping(mapped, said, tuple(dict.fromkeys(
            column for column in (*self.seen.unused, *unused)
            if column not in mapped and column != said)))
        return found

    def _matching(self, key: str) -> str | None:
        for f in self.defined:
            if key == squash(f.name) or any(key == squash(label) for label in f.labels.values()):
                return f.name
        return LANGUAGE if key in {squash(c) for c in _LANGUAGE_COLUMNS} else None

    def check_met(self) -> None:
        """BadInput when a ``--map`` names a column no header of the file has."""
        missing = [column for column in self.choices if column not in self._met]
        if missing:
            raise BadInput("--map: the file has no column {column}; nothing was imported",
                           column=self._spelled[missing[0]])

    def values(self, mapping: Mapping, cells: dict[str, str]) -> Values | BadCell:
        """One record's values, each checked by its field; the first that does
        not fit is a :class:`BadCell`."""
        found: dict[str, str] = {}
        for column, f in mapping.fields.items():
            try:
                value = f.value_of(cells.get(column, ""), self.lang)
            except BadInput as exc:
                return BadCell(column, exc)
            if value is not None:
                found[f.name] = value
        return Values(found, language_of(cells.get(mapping.language, "")) if mapping.language
                      else None)

    def lines(self, lang: str = "en") -> list[str]:
        """What the dry run says of the columns: each mapped one with its field,
        then those left unused."""
        from vykhukhol.i18n import tr

        seen = self.seen
        pairs = [f"{column} → {f.name}" for column, f in seen.fields.items()]
        if seen.language:
            pairs.append(seen.language + " → " + tr(lang, "the reader's language"))
        out = [tr(lang, "Columns to fields: {pairs}.", pairs="; ".join(pairs)) if pairs
               else tr(lang, "Columns to fields: none.")]
        if seen.unused:
            out.append(tr(lang, "Columns left unused: {columns}.", columns=", ".join(seen.unused)))
        return out


def squash(name: str) -> str:
    """A column's name as matching sees it: lower case, without spaces, ``_`` or ``-``."""
    return "".join(c for c in name.strip().lower() if not c.isspace() and c not in "_-")


def language_of(text: str) -> str | None:
    """``ru`` or ``en`` from a tool's language cell (``ru_RU``, ``en-US``,
    ``Russian``), else None."""
    word = text.strip().lower().replace("-", "_")
    return _LANGUAGES.get(word) or _LANGUAGES.get(word.split("_", 1)[0])
