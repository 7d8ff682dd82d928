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

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.services.subscribers import FIELD, FIELDS, LANGUAGE, Subscriber, unescape_value
from vykhukhol.settings import fields
from vykhukhol.settings.fields import Field

MAX_LENGTH = 2000  # characters of a condition
MAX_DEPTH = 20  # nested parentheses and "not"
BUILT_IN = {"language": "text", "joined": "date", "service": "text", "reached": "number"}
KEYWORDS = frozenset({"and", "or", "not", "in", "contains", "is", "empty", "yes", "no"})
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
_EXTRA = len(FIELDS)  # the trailing fields of a split line begin here
_JOINED = FIELDS.index("subscribed")
_SENT = FIELDS.index("sent")

Line = list[str]  # a subscriber line split at its tabs
Test = Callable[[Line, str], bool]


@dataclass(frozen=True)
class Token:
    kind: str  # word, text, number, date, op, "(", ")", ",", end
    text: str
    column: int  # 1-based


def _error(column: int, reason: BadInput) -> BadInput:
    return BadInput("column {column}: {reason}", column=column, reason=reason)


def tokens(source: str) -> list[Token]:
    """The condition's tokens, ending with one of kind ``end``."""
    found: list[Token] = []
    at, size = 0, len(source)
    while at < size:
        char = source[at]
        column = at + 1
        if char.isspace():
            at += 1
        elif char in "(),":
            found.append(Token(char, char, column))
            at += 1
        elif char in "=!<>":
            two = source[at:at + 2]
            if two in ("!=", "<=", ">=", "=="):
                found.append(Token("op", "=" if two == "==" else two, column))
                at += 2
            elif two == "<>":
                found.append(Token("op", "!=", column))
                at += 2
            elif char == "!":
                raise _error(column, BadInput('an operator: {operators}', operators=" ".join(OPERATORS)))
            else:
                found.append(Token("op", char, column))
                at += 1
        elif char == '"':
            text, at = _text(source, at)
            found.append(Token("text", text, column))
        elif char.isdigit() or (char == "-" and source[at + 1:at + 2].isdigit()):
            end = at + 1
            while end < size and (source[end].isdigit() or source[end] in ".-"):
                end += 1
            found.append(_literal(source[at:end], column))
            at = end
        elif char.isalpha() or char == "_":
            end = at + 1
            while end < size and (source[end].isalnum() or source[end] in "_."):
                end += 1
            found.append(Token("word", source[at:end], column))
            at = end
        else:
            raise _error(column, BadInput("a condition cannot hold {char}", char=repr(char)))
    found.append(Token("end", "", size + 1))
    return found


def _text(source: str, start: int) -> tuple[str, int]:
    """The text in quotes beginning at ``start`` (``\\"`` and ``\\\\`` escaped), and where it ends."""
    out: list[str] = []
    at = start + 1
    while at < len(source):
        char = source[at]
        if char == '"':
            return "".join(out), at + 1
        if char == "\\" and source[at + 1:at + 2] in ('"', "\\"):
            out.append(source[at + 1])
            at += 2
            continue
        if not char.isprintable():
            raise _error(at + 1, BadInput("control characters are not allowed"))
        out.append(char)
        at += 1
    raise _error(start + 1, BadInput('a text that is not closed: end it with "'))


def _literal(word: str, column: int) -> Token:
    """A run of digits, dots and dashes: a date or a number."""
    if len(word) == 10 and word[4] == word[7] == "-" and word.replace("-", "").isdigit():
        try:
            return Token("date", date.fromisoformat(word).isoformat(), column)
        except ValueError:
            raise _error(column, BadInput("a date such as 2026-01-01")) from None
    digits = word[1:] if word.startswith("-") else word
    whole, dot, part = digits.partition(".")
    if whole.isdigit() and whole.isascii() and (not dot or (part.isdigit() and part.isascii())) \
            and len(digits) <= 30:
        return Token("number", word, column)
    if "-" in digits:
        raise _error(column, BadInput("a date such as 2026-01-01"))
    raise _error(column, BadInput("a number such as 42 or 12.5"))


@dataclass(frozen=True)
class Compare:
    """``name op value(s)``; op is one of OPERATORS, ``in``, ``contains``,
    ``empty`` or ``not empty``."""

    name: str
    kind: str
    op: str
    values: tuple[str, ...]

    def shown(self) -> str:
        if self.op in ("empty", "not empty"):
            return f"{self.name} is {self.op}"
        values = [_shown_value(v, self.kind) for v in self.values]
        if self.op == "in":
            return f"{self.name} in ({', '.join(values)})"
        return f"{self.name} {self.op} {values[0]}"


@dataclass(frozen=True)
class Not:
    node: Node

    def shown(self) -> str:
        inner = self.node.shown()
        return f"not ({inner})" if isinstance(self.node, (Both, Either)) else f"not {inner}"


@dataclass(frozen=True)
class Both:
    nodes: tuple[Node, ...]

    def shown(self) -> str:
        return " and ".join(f"({n.shown()})" if isinstance(n, Either) else n.shown()
                            for n in self.nodes)


@dataclass(frozen=True)
class Either:
    nodes: tuple[Node, ...]

    def shown(self) -> str:
        return " or ".join(n.shown() for n in self.nodes)


Node = Compare | Not | Both | Either


def _shown_value(value: str, kind: str) -> str:
    if kind in ("text", "choice"):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


class _Parser:
    def __init__(self, source: str, fields: Iterable[Field]) -> None:
        self.tokens = tokens(source)
        self.at = 0
        self.fields = {f.name: f for f in fields}

    def peek(self) -> Token:
        return self.tokens[self.at]

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def word(self, *words: str) -> bool:
        token = self.peek()
        if token.kind == "word" and token.text.lower() in words:
            self.at += 1
            return True
        return False

    def either(self, depth: int) -> Node:
        nodes = [self.both(depth)]
        while self.word("or"):
            nodes.append(self.both(depth))
        return nodes[0] if len(nodes) == 1 else Either(tuple(nodes))

    def both(self, depth: int) -> Node:
        nodes = [self.single(depth)]
        while self.word("and"):
            nodes.append(self.single(depth))
        return nodes[0] if len(nodes) == 1 else Both(tuple(nodes))

    def single(self, depth: int) -> Node:
        token = self.peek()
        if depth >= MAX_DEPTH:
            raise _error(token.column, BadInput("nested deeper than {n} parentheses or nots", n=MAX_DEPTH))
        if self.word("not"):
            return Not(self.single(depth + 1))
        if token.kind == "(":
            self.take()
            node = self.either(depth + 1)
            closing = self.take()
            if closing.kind != ")":
                raise _error(closing.column, BadInput("a closing parenthesis )"))
            return node
        return self.test()

    def test(self) -> Compare:
        token = self.take()
        if token.kind != "word" or token.text.lower() in KEYWORDS:
            raise _error(token.column, BadInput("a name such as {example} or joined",
                         example=next(iter(self.fields), "language")))
        name, kind, choices = self.name(token)
        at = self.peek()
        if self.word("is"):
            negated = self.word("not")
            if not self.word("empty"):
                raise _error(self.peek().column, BadInput("empty (is empty, is not empty)"))
            return Compare(name, kind, "not empty" if negated else "empty", ())
        if self.word("in"):
            if self.take().kind != "(":
                raise _error(at.column, BadInput('a list in parentheses: in ("a", "b")'))
            values = [self.value(name, kind, choices)]
            while self.peek().kind == ",":
                self.take()
                values.append(self.value(name, kind, choices))
            closing = self.take()
            if closing.kind != ")":
                raise _error(closing.column, BadInput("a closing parenthesis )"))
            return Compare(name, kind, "in", tuple(values))
        if self.word("contains"):
            if kind not in ("text", "choice"):
                raise _error(at.column, BadInput("contains compares text; {name} is not text", name=name))
            return Compare(name, kind, "contains", (self.value(name, "text", ()),))
        if at.kind != "op":
            raise _error(at.column, BadInput("an operator: {operators}",
                         operators=" ".join((*OPERATORS, "in", "contains", "is"))))
        self.take()
        if kind == "yesno" and at.text not in ("=", "!="):
            raise _error(at.column, BadInput("{name} is yes or no: compare it with = or !=", name=name))
        return Compare(name, kind, at.text, (self.value(name, kind, choices),))

    def name(self, token: Token) -> tuple[str, str, tuple[str, ...]]:
        """The name's canonical spelling, its kind and its choices."""
        word = token.text.lower()
        if word in BUILT_IN:
            return word, BUILT_IN[word], ()
        bare = word[len("fields."):] if word.startswith("fields.") else word
        field = self.fields.get(bare)
        if field is None:
            raise _error(token.column, BadInput('unknown field "{name}" (fields: {names})', name=token.text,
                         names=", ".join([*self.fields, *BUILT_IN])))
        return field.name, field.kind, field.choices

    def value(self, name: str, kind: str, choices: tuple[str, ...]) -> str:
        token = self.take()
        if kind in ("text", "choice"):
            if token.kind != "text":
                raise _error(token.column, BadInput('a text in quotes such as "Тверь"'))
            if choices and not any(c.casefold() == token.text.casefold() for c in choices):
                raise _error(token.column, BadInput("{name} is one of {choices}", name=name,
                             choices=", ".join(choices)))
            return token.text
        if kind == "number" and token.kind != "number":
            raise _error(token.column, BadInput("a number such as 42 or 12.5"))
        if kind == "date" and token.kind != "date":
            raise _error(token.column, BadInput("a date such as 2026-01-01"))
        if kind == "yesno":
            if token.kind != "word" or token.text.lower() not in ("yes", "no"):
                raise _error(token.column, BadInput("yes or no"))
            return token.text.lower()
        return token.text


class Condition:
    """A parsed condition: ``text`` (written back in one canonical line, as
    the history keeps it), and the test of a subscriber."""

    def __init__(self, tree: Node, default_language: str) -> None:
        self.tree = tree
        self.text = tree.shown()
        self.test: Test = _compile(tree, default_language)

    def __repr__(self) -> str:
        return f"Condition({self.text!r})"

    def matches(self, subscriber: Subscriber, service: str) -> bool:
        """Whether ``subscriber`` of ``service`` is one it chooses."""
        return self.test(subscriber.to_line().split("\t"), service)


def parse(source: str, fields: Iterable[Field], default_language: str = "ru") -> Condition:
    """``source`` read against the site's ``fields``; BadInput naming the column
    of the first thing wrong. ``default_language``: the site's, for a reader
    who has none of their own."""
    if len(source) > MAX_LENGTH:
        raise _error(MAX_LENGTH + 1, BadInput("a condition is at most {n} characters", n=MAX_LENGTH))
    parser = _Parser(source, fields)
    if parser.peek().kind == "end":
        raise BadInput("the condition is empty")
    tree = parser.either(0)
    rest = parser.peek()
    if rest.kind != "end":
        raise _error(rest.column, BadInput("and, or, or the end of the condition"))
    return Condition(tree, default_language)


def of_site(data: DataDir, source: str, default_language: str) -> Condition | None:
    """``source`` read against the fields ``data`` defines (None when it is
    blank: a newsletter to all)."""
    if not source.strip():
        return None
    return parse(source, fields.load(data.root), default_language)


def must_choose(count: int, condition: Condition) -> None:
    """BadInput when ``condition`` chose nobody: said before anything is made."""
    if not count:
        raise BadInput("no subscriber matches the condition {condition}", condition=condition.text)


# Compiling: each name becomes a getter of its value (None: missing) in a
# form that compares, each test a closure over it.

def _getter(name: str, kind: str, default_language: str) -> Callable[[Line, str], object]:
    convert = _CONVERT[kind]
    if name == "service":
        return lambda parts, service: service.casefold()
    if name == "reached":
        return lambda parts, service: Decimal(parts[_SENT])
    if name == "joined":
        return lambda parts, service: None if parts[_JOINED] == "-" else parts[_JOINED][:10]
    prefix = LANGUAGE if name == "language" else f"{FIELD}{name}="
    fallback = default_language.casefold() if name == "language" else None

    def get(parts: Line, service: str) -> object:
        for value in parts[_EXTRA:]:
            if value.startswith(prefix):
                return convert(unescape_value(value[len(prefix):])) or fallback
        return fallback
    return get


def _as_number(value: str) -> Decimal | None:
    try:
        return Decimal(value) if value and value.isascii() and len(value) <= 40 else None
    except InvalidOperation:
        return None


def _as_date(value: str) -> str | None:
    try:
        return date.fromisoformat(value).isoformat() if len(value) == 10 else None
    except ValueError:
        return None


_CONVERT: dict[str, Callable[[str], object]] = {
    "text": lambda v: v.casefold() or None, "choice": lambda v: v.casefold() or None,
    "number": _as_number, "date": _as_date, "yesno": lambda v: v.lower() or None,
}


def _compile(node: Node, default_language: str) -> Test:
    if isinstance(node, Not):
        inner = _compile(node.node, default_language)
        return lambda parts, service: not inner(parts, service)
    if isinstance(node, Both):
        each = [_compile(n, default_language) for n in node.nodes]
        return lambda parts, service: all(t(parts, service) for t in each)
    if isinstance(node, Either):
        each = [_compile(n, default_language) for n in node.nodes]
        return lambda parts, service: any(t(parts, service) for t in each)
    get = _getter(node.name, node.kind, default_language)
    convert = _CONVERT[node.kind]
    wanted = [convert(v) for v in node.values]
    op = node.op
    if op == "empty":
        return lambda parts, service: get(parts, service) is None
    if op == "not empty":
        return lambda parts, service: get(parts, service) is not None
    if op == "in":
        return lambda parts, service: get(parts, service) in wanted
    one = wanted[0]
    if op == "contains":
        return lambda parts, service: (v := get(parts, service)) is not None and one in v  # type: ignore[operator]
    if op == "!=":
        return lambda parts, service: get(parts, service) != one
    compare = _ORDER[op]
    return lambda parts, service: (v := get(parts, service)) is not None and compare(v, one)


_ORDER: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,  # type: ignore[operator]
}
