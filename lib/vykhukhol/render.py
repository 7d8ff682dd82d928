"""Letter templates: Jinja2 in its sandbox, errors as sentences with a line number.

A service's letters (welcome, confirmation, the newsletter itself) are
templates written by the people who run the service. They are rendered in an
:class:`~jinja2.sandbox.ImmutableSandboxedEnvironment`: no attribute starting
with ``_``, no unsafe callables, no changing the context, bounded ``range``,
and here also bounded ``*`` and ``**``, so a template cannot reach Python's
internals or build a gigabyte string. Variables that are not given render as
nothing (``{{ nmae }}`` is empty, ``{{ a.b.c }}`` too) — a typo must not stop
a mailing. Any other mistake becomes :class:`~vykhukhol.errors.BadInput` with
``"<what>: line N: <reason>"``.

The context the project passes is ``name``, ``email``, ``service``,
``unsubscribe_url`` and ``date``; this module does not insist on it.

It deliberately does not load templates from files (no ``{% include %}`` or
``{% extends %}``: there is no loader), does not decide which template a
letter uses, and does not limit CPU time — nested loops can still be slow.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from vykhukhol.errors import BadInput

__all__ = ["check_template", "one_line_values", "render", "render_html"]

MAX_BUILT_SIZE = 100_000  # longest string or list that `*` may build
MAX_EXPONENT = 100

_TEMPLATE_FILE = "<template>"  # the file name Jinja gives templates made from strings


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, made strict where the stock one is silent or generous."""

    intercepted_binops = frozenset({"*", "**"})

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The stock sandbox returns an Undefined, which our lenient Undefined
        # would print as nothing; an attempt to escape must be an error instead.
        raise SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if (
                    isinstance(seq, (str, list, tuple))
                    and isinstance(times, int)
                    and len(seq) * times > MAX_BUILT_SIZE
                ):
                    raise SecurityError(f"'*' would build more than {MAX_BUILT_SIZE} items")
        elif operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"exponents above {MAX_EXPONENT} are not allowed")
        return super().call_binop(context, operator, left, right)


def one_line_values(context: dict[str, Any]) -> dict[str, Any]:
    """``context`` with each text value made one line, before a template sees it.

    A line of a letter ends only where its template ends one: in a value
    (a subscriber's name, a service title) every control character — CR, LF,
    NUL, tab, VT, FF, NEL U+0085 — and the separators U+2028 and U+2029, all
    that some reader could take for the end of a line, become a space.
    """
    return {key: "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch
                         for ch in value) if isinstance(value, str) else value
            for key, value in context.items()}


def _environment(autoescape: bool) -> _Sandbox:
    return _Sandbox(
        autoescape=autoescape,
        undefined=jinja2.ChainableUndefined,
        keep_trailing_newline=True,  # a letter ends the way its template does
    )


_TEXT = _environment(autoescape=False)
_HTML = _environment(autoescape=True)


@functools.lru_cache(maxsize=256)
def _compile(source: str, html: bool) -> jinja2.Template:
    return (_HTML if html else _TEXT).from_string(source)


def _bad_syntax(exc: jinja2.TemplateSyntaxError, what: str) -> BadInput:
    return BadInput(f"{what}: line {exc.lineno}: {exc.message or 'syntax error'}")


def _template_line(exc: BaseException) -> int | None:
    """The template line being run when ``exc`` was raised (Jinja rewrites the
    traceback so template code appears as frames of ``<template>``)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _TEMPLATE_FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def check_template(source: str, what: str = "template") -> None:
    """Raise :class:`BadInput` (``"<what>: line N: <reason>"``) unless ``source`` compiles."""
    try:
        _compile(source, False)
    except jinja2.TemplateSyntaxError as exc:
        raise _bad_syntax(exc, what) from None


def _render(source: str, context: dict[str, Any], what: str, html: bool) -> str:
    try:
        template = _compile(source, html)
    except jinja2.TemplateSyntaxError as exc:
        raise _bad_syntax(exc, what) from None
    try:
        return str(template.render(context))
    except Exception as exc:  # SecurityError, UndefinedError, 1/0, bad filter arguments…
        line = _template_line(exc)
        reason = str(exc) or type(exc).__name__
        if not isinstance(exc, jinja2.TemplateError):
            reason = f"{type(exc).__name__}: {reason}"
        where = f"line {line}: " if line is not None else ""
        raise BadInput(f"{what}: {where}{reason}") from exc


def render(source: str, context: dict[str, Any], what: str = "template") -> str:
    """``source`` rendered with ``context`` as plain text (nothing is escaped)."""
    return _render(source, context, what, html=False)


def render_html(source: str, context: dict[str, Any], what: str = "template") -> str:
    """``source`` rendered with ``context`` as HTML: every value is escaped."""
    return _render(source, context, what, html=True)
