"""The site's fields: what an owner keeps about a reader beyond the address
and the name (docs/using/fields.md#fields).

They are defined once per site in ``data/fields.ini``, a section per field in
the order the forms show them::

    [city]
    type = text          ; text, number, date, choice or yesno
    required = no
    label_ru = Город
    label_en = City
    choices =            ; for a choice: the values, separated by |

A reader's values ride on their subscriber line (``f.city=Тверь``,
docs/using/services.md#subscriber-details). This module knows the
definitions and whether a value fits one; it stores no reader's value.
A value is always kept as text in one canonical form: a number as written
without spaces (``-12.5``), a date as ``YYYY-MM-DD``, yes/no as ``yes`` or
``no``, a choice as one of its values exactly.

Light at import (no configparser, dataclasses or re at the top): a subscribe
form that asks for fields loads it (docs/design/startup.md#startup-boundary).
"""

from __future__ import annotations

import os

from vykhukhol import files
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files.ini import read_sections
from vykhukhol.i18n import LANGUAGES

FILE = "fields.ini"
KINDS = ("text", "number", "date", "choice", "yesno")
MAX_FIELDS = 30
MAX_VALUE = 200  # characters of a text value
MAX_CHOICES = 50
# Names a field may not take: the subscriber's own columns, the trailing
# fields and what a segment condition or a template already means by them.
BUILT_IN = frozenset({
    "email", "name", "state", "subscribed", "confirmed", "sent", "last_sent", "reminders",
    "last_reminder", "failures", "ip", "paused", "lang", "language", "joined", "service",
    "reached", "letter", "db", "fields", "and", "or", "not", "in", "is", "yes", "no",
    "true", "false", "none", "null"})
YES = ("yes", "да", "on", "true", "1")
NO = ("no", "нет", "off", "false", "0")


class Field:
    """One field as defined: its name, kind, whether a form must have it,
    its label in each language and, for a choice, its values."""

    __slots__ = ("name", "kind", "required", "labels", "choices")

    def __init__(self, name: str, kind: str = "text", required: bool = False,
                 labels: dict[str, str] | None = None, choices: tuple[str, ...] = ()) -> None:
        self.name = name
        self.kind = kind
        self.required = required
        self.labels = labels or {}
        self.choices = choices

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Field):
            return NotImplemented
        return all(getattr(self, slot) == getattr(other, slot) for slot in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.kind!r}, required={self.required})"

    def label(self, lang: str) -> str:
        """The label for a reader of ``lang``; the other language's, else the name."""
        return self.labels.get(lang) or next(iter(self.labels.values()), "") or self.name

    def value_of(self, raw: str, lang: str = "en") -> str | None:
        """``raw`` (a form's, an import's, a command's) in its canonical form,
        None for no value; BadInput saying why it does not fit, naming the
        field by its label in ``lang``."""
        return _value(self, self.label(lang), raw)


def _value(field: Field, shown: str, raw: str) -> str | None:
    text = raw.strip()
    if not text:
        return None
    if len(text) > MAX_VALUE:
        raise BadInput("{field}: at most {n} characters", field=shown, n=MAX_VALUE)
    if not text.isprintable():
        raise BadInput("{field}: control characters are not allowed", field=shown)
    if field.kind == "number":
        return _number(shown, text)
    if field.kind == "date":
        return _date(shown, text)
    if field.kind == "yesno":
        word = text.lower()
        if word in YES:
            return "yes"
        if word in NO:
            return "no"
        raise BadInput("{field}: yes or no", field=shown)
    if field.kind == "choice":
        for choice in field.choices:
            if choice.casefold() == text.casefold():
                return choice
        raise BadInput("{field}: one of {choices}", field=shown, choices=", ".join(field.choices))
    return text


def _number(name: str, text: str) -> str:
    """Digits with a sign and one decimal point or comma (``-12,5``), spaces
    between groups allowed; kept as ``-12.5``, a whole number without ``.0``."""
    cleaned = text.replace(" ", "").replace("\u00a0", "").replace(",", ".")
    digits = cleaned[1:] if cleaned[:1] in "+-" else cleaned
    whole, _, part = digits.partition(".")
    if not (whole or part) or not (whole + part).isdigit() or not (whole + part).isascii() or len(digits) > 30:
        raise BadInput("{field}: a number such as 42 or 12.5", field=name)
    sign = "-" if cleaned[:1] == "-" and (whole + part).strip("0") else ""
    part = part.rstrip("0")
    return sign + (whole.lstrip("0") or "0") + ("." + part if part else "")


def _date(name: str, text: str) -> str:
    """``2026-12-31``, or ``31.12.2026`` as Russian readers write it."""
    from datetime import date

    if len(text) == 10 and text[2] == text[5] == "." and text.replace(".", "").isdigit():
        text = f"{text[6:]}-{text[3:5]}-{text[:2]}"
    try:
        return date.fromisoformat(text).isoformat() if len(text) == 10 else _no_date(name)
    except ValueError:
        return _no_date(name)


def _no_date(name: str) -> str:
    raise BadInput("{field}: a date as 2026-12-31 or 31.12.2026", field=name)


def check_field_name(name: str) -> str:
    """A field's name, or BadInput saying what one may be."""
    if not (isinstance(name, str) and 1 <= len(name) <= 32 and name.isascii() and name[0].isalpha()
            and name.replace("_", "").isalnum() and name == name.lower()):
        raise BadInput("invalid field name {name!r}: use 1-32 characters a-z, 0-9 and _, "
                       "starting with a letter", name=str(name)[:40])
    if name in BUILT_IN:
        raise BadInput("{name!r} is a built-in name; choose another field name", name=name)
    return name


def path_of(root: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(root), FILE)


def load(root: str | os.PathLike[str]) -> list[Field]:
    """The site's fields in their order (none when there is no fields.ini),
    the first :data:`MAX_FIELDS` of them; BadInput naming the section and the
    value a hand edit broke."""
    return _every(root)[:MAX_FIELDS]


def _every(root: str | os.PathLike[str]) -> list[Field]:
    """Every field the file defines, however many: what a rewrite keeps."""
    # Notepad saves UTF-8 with a byte-order mark; it is not part of the first section.
    text = (files.read_text(path_of(root), "") or "").removeprefix("\ufeff")
    if not text.strip():
        return []
    sections, problem = read_sections(text)
    if problem is not None:
        raise BadInput("{file} cannot be read: {reason}", file=FILE, reason=problem)
    found = []
    for name, values in sections.items():
        try:
            found.append(_field(name, values))
        except BadInput as exc:
            raise BadInput("{file} [{section}]: {reason}", file=FILE, section=name, reason=exc) from exc
    return found


def _field(name: str, values: dict[str, str]) -> Field:
    check_field_name(name)
    kind = values.get("type", "text").strip().lower() or "text"
    if kind not in KINDS:
        raise BadInput("type must be one of {kinds}", kinds=", ".join(KINDS))
    required = _yes_no(values.get("required", "no"))
    labels = {lang: values[f"label_{lang}"].strip() for lang in LANGUAGES
              if values.get(f"label_{lang}", "").strip()}
    choices = tuple(c.strip() for c in values.get("choices", "").split("|") if c.strip())
    if kind == "choice" and not choices:
        raise BadInput("a choice needs its values: choices = one | two")
    if len(choices) > MAX_CHOICES or any(len(c) > MAX_VALUE for c in choices):
        raise BadInput("at most {n} choices of {m} characters", n=MAX_CHOICES, m=MAX_VALUE)
    return Field(name, kind, required, labels, choices if kind == "choice" else ())


def _yes_no(text: str) -> bool:
    word = text.strip().lower()
    if word in YES:
        return True
    if word in NO or not word:
        return False
    raise BadInput("required must be yes or no")


def save(root: str | os.PathLike[str], fields: list[Field]) -> None:
    """Write every definition (an atomic rewrite), in this order."""
    lines = ["# The site's fields: see the manual, docs/using/fields.md\n"]
    for f in fields:
        lines += [f"\n[{f.name}]\n", f"type = {f.kind}\n", f"required = {'yes' if f.required else 'no'}\n"]
        lines += [f"label_{lang} = {_one_line(label)}\n" for lang, label in sorted(f.labels.items())]
        if f.choices:
            lines.append(f"choices = {' | '.join(_one_line(c) for c in f.choices)}\n")
    files.atomic_write(path_of(root), lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def add(root: str | os.PathLike[str], field: Field) -> Field:
    """``field`` added after the others; BadInput when its name is taken,
    built in or invalid, or when its definition makes no sense."""
    check_field_name(field.name)
    field = _field(field.name, {"type": field.kind, "required": "yes" if field.required else "no",
                                **{f"label_{k}": v for k, v in field.labels.items()},
                                "choices": "|".join(field.choices)})
    with files.record_lock(path_of(root)):
        present = _every(root)
        if any(f.name == field.name for f in present):
            raise BadInput("there is a field named {name!r} already", name=field.name)
        if len(present) >= MAX_FIELDS:
            raise BadInput("at most {n} fields", n=MAX_FIELDS)
        save(root, [*present, field])
    return field


def remove(root: str | os.PathLike[str], name: str) -> Field:
    """The definition removed (readers' values stay on their lines, unused,
    until erased or the field is defined again)."""
    with files.record_lock(path_of(root)):
        present = _every(root)
        for f in present:
            if f.name == name:
                save(root, [other for other in present if other is not f])
                return f
    raise NotFound("no field named {name!r}", name=name)


def check_values(fields: list[Field], raw: dict[str, str], *, partial: bool = False,
                 lang: str = "en") -> dict[str, str | None]:
    """Each field's canonical value from ``raw`` (form or import, by name);
    a required field without a value is an error unless ``partial`` (an edit
    that leaves it as it is). BadInput for the first value that does not fit,
    naming the field by its label in ``lang``."""
    values: dict[str, str | None] = {}
    for f in fields:
        if f.name not in raw:
            if f.required and not partial:
                raise BadInput("{field} is required", field=f.label(lang))
            continue
        value = f.value_of(raw[f.name], lang)
        if value is None and f.required:
            raise BadInput("{field} is required", field=f.label(lang))
        values[f.name] = value
    return values
