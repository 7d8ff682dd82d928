"""A segment's condition read: the tokenizer and the recursive-descent
parser (the grammar is in :mod:`vykhukhol.newsletters.segments`), into a
small tree of :class:`Compare`, :class:`Not`, :class:`Both` and
:class:`Either`, each written back by ``shown()`` in one canonical line.

Hand-written, without regular expressions: every character is looked at a
bounded number of times, and the depth is bounded, so no input runs long.
It checks names and values against the site's fields; it compiles nothing
(:mod:`.compiled` does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from vykhukhol.errors import BadInput
from vykhukhol.settings.fields import Field

MAX_LENGTH = 2000  # characters of a condition
MAX_DEPTH = 20  # nested parentheses and "not"
BUILT_IN = {"language": "text", "joined": "date", "service": "text", "reached": "number"}
KEYWORDS = frozenset({"and", "or", "not", "in", "contains", "is", "empty", "yes", "no"})
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Token:
    kind: str  # word, text, number, date, op, "(", ")", ",", end
    text: str
    column: int  # 1-based


def error(column: int, reason: BadInput) -> BadInput:
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
                raise error(column, BadInput('an operator: {operators}', operators=" ".join(OPERATORS)))
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
            raise error(column, BadInput("a condition cannot hold {char}", char=repr(char)))
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
            raise error(at + 1, BadInput("control characters are not allowed"))
        out.append(char)
        at += 1
    raise error(start + 1, BadInput('a text that is not closed: end it with "'))


def _literal(word: str, column: int) -> Token:
    """A run of digits, dots and dashes: a date or a number."""
    if len(word) == 10 and word[4] == word[7] == "-" and word.replace("-", "").isdigit():
        try:
            return Token("date", date.fromisoformat(word).isoformat(), column)
        except ValueError:
            raise error(column, BadInput("a date such as 2026-01-01")) from None
    digits = word[1:] if word.startswith("-") else word
    whole, dot, part = digits.partition(".")
    if whole.isdigit() and whole.isascii() and (not dot or (part.isdigit() and part.isascii())) \
            and len(digits) <= 30:
        return Token("number", word, column)
    if "-" in digits:
        raise error(column, BadInput("a date such as 2026-01-01"))
    raise error(column, BadInput("a number such as 42 or 12.5"))


@dataclass(frozen=True)
class Compare:
    """``name op value(s)``; op is one of OPERATORS, ``in``, ``contains``,
    ``empty`` or ``not empty``."""

    name: str
    kind: str
    op: str
    values: tuple[str, ...]

    def shown(self) -> str:
        name = f"fields.{self.name}" if self.name in KEYWORDS else self.name  # reads back
        if self.op in ("empty", "not empty"):
            return f"{name} is {self.op}"
        values = [_shown_value(v, self.kind) for v in self.values]
        if self.op == "in":
            return f"{name} in ({', '.join(values)})"
        return f"{name} {self.op} {values[0]}"


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


class Parser:
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
            raise error(token.column, BadInput("nested deeper than {n} parentheses or nots", n=MAX_DEPTH))
        if self.word("not"):
            return Not(self.single(depth + 1))
        if token.kind == "(":
            self.take()
            node = self.either(depth + 1)
            closing = self.take()
            if closing.kind != ")":
                raise error(closing.column, BadInput("a closing parenthesis )"))
            return node
        return self.test()

    def test(self) -> Compare:
        token = self.take()
        if token.kind != "word" or token.text.lower() in KEYWORDS:
            raise error(token.column, BadInput("a name such as {example} or joined",
                         example=next(iter(self.fields), "language")))
        name, kind, choices = self.name(token)
        at = self.peek()
        if self.word("is"):
            negated = self.word("not")
            if not self.word("empty"):
                raise error(self.peek().column, BadInput("empty (is empty, is not empty)"))
            return Compare(name, kind, "not empty" if negated else "empty", ())
        if self.word("in"):
            if self.take().kind != "(":
                raise error(at.column, BadInput('a list in parentheses: in ("a", "b")'))
            values = [self.value(name, kind, choices)]
            while self.peek().kind == ",":
                self.take()
                values.append(self.value(name, kind, choices))
            closing = self.take()
            if closing.kind != ")":
                raise error(closing.column, BadInput("a closing parenthesis )"))
            return Compare(name, kind, "in", tuple(values))
        if self.word("contains"):
            if kind not in ("text", "choice"):
                raise error(at.column, BadInput("contains compares text; {name} is not text", name=name))
            return Compare(name, kind, "contains", (self.value(name, "text", ()),))
        if at.kind != "op":
            raise error(at.column, BadInput("an operator: {operators}",
                         operators=" ".join((*OPERATORS, "in", "contains", "is"))))
        self.take()
        if kind == "yesno" and at.text not in ("=", "!="):
            raise error(at.column, BadInput("{name} is yes or no: compare it with = or !=", name=name))
        return Compare(name, kind, at.text, (self.value(name, kind, choices),))

    def name(self, token: Token) -> tuple[str, str, tuple[str, ...]]:
        """The name's canonical spelling, its kind and its choices."""
        word = token.text.lower()
        if word in BUILT_IN:
            return word, BUILT_IN[word], ()
        bare = word[len("fields."):] if word.startswith("fields.") else word
        field = self.fields.get(bare)
        if field is None:
            raise error(token.column, BadInput('unknown field "{name}" (fields: {names})', name=token.text,
                         names=", ".join([*self.fields, *BUILT_IN])))
        return field.name, field.kind, field.choices

    def value(self, name: str, kind: str, choices: tuple[str, ...]) -> str:
        token = self.take()
        if kind in ("text", "choice"):
            if token.kind != "text":
                raise error(token.column, BadInput('a text in quotes such as "Тверь"'))
            if choices and not any(c.casefold() == token.text.casefold() for c in choices):
                raise error(token.column, BadInput("{name} is one of {choices}", name=name,
                             choices=", ".join(choices)))
            return token.text
        if kind == "number" and token.kind != "number":
            raise error(token.column, BadInput("a number such as 42 or 12.5"))
        if kind == "date" and token.kind != "date":
            raise error(token.column, BadInput("a date such as 2026-01-01"))
        if kind == "yesno":
            if token.kind != "word" or token.text.lower() not in ("yes", "no"):
                raise error(token.column, BadInput("the word yes or no"))
            return token.text.lower()
        return token.text
