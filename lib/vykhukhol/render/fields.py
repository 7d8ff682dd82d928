"""``fields`` in a letter's template: the reader's values of the site's fields
(docs/using/fields.md#fields-templates).

``{{ fields.city }}`` is the reader's city, and nothing when they have none,
so ``{{ fields.city | default("друг") }}`` gives a word of the owner's
instead. A value is text, escaped in an HTML part as every value is, and made
one line (:func:`vykhukhol.render.one_line_values`): a value read from a file
a person edits never ends a line of the letter, a header least of all.

Not a dict: ``fields.items`` or ``fields.keys`` would then be the dict's
methods, not the values of fields named so. Nothing but the values can be
reached through it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from vykhukhol.render.engine import one_line_values


class FieldValues:
    """A reader's field values by name; a missing one is Jinja2's undefined
    (printed as nothing, replaced by ``default``)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {name: value for name, value in
                        one_line_values(dict(values)).items() if value}

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldValues):
            return NotImplemented
        return self._values == other._values

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:  # ``{{ fields }}`` alone says nothing
        return ""

    def __repr__(self) -> str:
        return f"FieldValues({self._values!r})"


def fields_context(values: Mapping[str, str] | None) -> FieldValues:
    """What a template sees as ``fields`` for a reader with these values
    (``Subscriber.fields``, or a newsletter's snapshot of them)."""
    return FieldValues(values or {})
