"""A newsletter to part of its services: the condition language of
``newsletter create --where`` and the admin's condition box
(docs/using/newsletters.md#newsletter-segments).

A condition such as ``city = "Тверь" and joined > 2026-01-01`` is read by a
hand-written tokenizer and a recursive-descent parser into a small tree,
checked against the site's fields (:mod:`vykhukhol.settings.fields`), and
compiled into a predicate over a subscriber line. It is never evaluated as
code, holds no regular expression, and is bounded (:data:`MAX_LENGTH`
characters, :data:`MAX_DEPTH` nested parentheses or ``not``), so no input
makes it raise anything but :class:`BadInput` or run long. An error names
the column it found at.

Grammar (keywords in any case)::

    condition  := either
    either     := both ("or" both)*
    both       := single ("and" single)*
    single     := "not" single | "(" either ")" | test
    test       := name ( op value | "in" "(" value ("," value)* ")"
                       | "contains" value | "is" ["not"] "empty" )
    op         := "=" | "!=" | "<" | "<=" | ">" | ">="
    value      := "text with \\" escapes" | 42 | -12.5 | 2026-01-01 | yes | no

Names: a defined field (``city`` or ``fields.city``), ``language`` (the
reader's own, else the site's), ``joined`` (the date they subscribed, UTC),
``service`` and ``reached`` (series letters they have had). Each compares by
its kind: a number field as numbers, a date field as dates, text without
regard to case (Тверь = тверь). A missing value matches only ``is empty``
and ``!=``; a value a hand edit spoiled counts as missing.

It does not choose who is confirmed: :func:`recipients.confirmed_recipients`
does, and asks the condition of each confirmed line.
"""

from __future__ import annotations

from collections.abc import Iterable

from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.newsletters.segments.compiled import Test, bare_verdict, compile_tree
from vykhukhol.newsletters.segments.grammar import MAX_LENGTH, Node, Parser, error
from vykhukhol.services.confirmed import trailing_at
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import fields as site_fields
from vykhukhol.settings.fields import Field

__all__ = ["Condition", "must_choose", "of_site", "parse"]


class Condition:
    """A parsed condition: ``text`` (written back in one canonical line, as
    the history keeps it), and the test of a subscriber."""

    def __init__(self, tree: Node, default_language: str) -> None:
        self.tree = tree
        self.text = tree.shown()
        self.test: Test = compile_tree(tree, default_language)
        # Its verdict on every line without trailing fields, when one (None: ask each).
        self.bare: bool | None = bare_verdict(tree, self.test)

    def __repr__(self) -> str:
        return f"Condition({self.text!r})"

    def matches(self, subscriber: Subscriber, service: str) -> bool:
        """Whether ``subscriber`` of ``service`` is one it chooses."""
        line = subscriber.to_line()
        return self.test(line, trailing_at(line), service)


def parse(source: str, fields: Iterable[Field], default_language: str = "ru") -> Condition:
    """``source`` read against the site's ``fields``; BadInput naming the column
    of the first thing wrong. ``default_language``: the site's, for a reader
    who has none of their own."""
    if len(source) > MAX_LENGTH:
        raise error(MAX_LENGTH + 1, BadInput("a condition is at most {n} characters", n=MAX_LENGTH))
    parser = Parser(source, fields)
    if parser.peek().kind == "end":
        raise BadInput("the condition is empty")
    tree = parser.either(0)
    rest = parser.peek()
    if rest.kind != "end":
        raise error(rest.column, BadInput("and, or, or the end of the condition"))
    return Condition(tree, default_language)


def of_site(data: DataDir, source: str, default_language: str) -> Condition | None:
    """``source`` read against the fields ``data`` defines (None when it is
    blank: a newsletter to all)."""
    if not source.strip():
        return None
    return parse(source, site_fields.load(data.root), default_language)


def must_choose(count: int, condition: Condition) -> None:
    """BadInput when ``condition`` chose nobody: said before anything is made."""
    if not count:
        raise BadInput("no subscriber matches the condition {condition}", condition=condition.text)
