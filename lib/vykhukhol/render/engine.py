"""The engine under :mod:`vykhukhol.render`: the two sandboxed Jinja2
environments (text and HTML), compiling and checking a template, rendering it
inside a budget, and every error turned into a sentence with its line
number. The package's face says what the bounds are and why.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jinja2

from vykhukhol.errors import BadInput, OverBudget, Term
from vykhukhol.render.budget import (
    MAX_DIGITS,
    MAX_EXPONENT,
    MAX_LIPSUM_WORDS,
    MAX_OUTPUT,
    MAX_RANGE,
    MAX_SIZE,
    TIME_BUDGET,
    Budget,
    _active,
    _capped_join,
    _TooCostly,
)
from vykhukhol.render.sandbox import _Sandbox, bounded

#: The parts of a letter a template error names (``what``), translated on a page.
PARTS = ("subject", "text", "body", "HTML", "template", "footer")

__all__ = ["MAX_DIGITS", "MAX_EXPONENT", "MAX_LIPSUM_WORDS", "MAX_OUTPUT", "MAX_RANGE", "MAX_SIZE",
           "TIME_BUDGET", "Budget", "check_syntax", "check_template", "one_line_values", "render",
           "render_html"]


#: What a template is tried with when it is saved (docs/using/services.md#template-bounds).
SAMPLE_CONTEXT = {
    "name": "Ivan Petrov", "email": "ivan@example.org", "service": "Sample service",
    "unsubscribe_url": "https://example.org/cgi/unsubscribe.py?s=sample&e=ivan%40example.org&t=x",
    "confirm_url": "https://example.org/cgi/confirm.py?s=sample&e=ivan%40example.org&t=x",
    "manage_url": "https://example.org/cgi/manage.py?e=ivan%40example.org&t=x",
    "web_url": "https://example.org/archive/sample/letter-001.html",
    "date": "2026-01-31",
}

#: Every name a letter's template is given (docs/using/services.md#services-letters), the footer's too;
#: Jinja2's own globals (``range``, ``loop``…) are not context and never reported.
KNOWN_VARIABLES = frozenset({*SAMPLE_CONTEXT, "footer", "postal_address", "fields", "range", "lipsum",
                             "dict", "cycler", "joiner", "namespace"})

_TEMPLATE_FILE = "<template>"  # the file name Jinja gives templates made from strings

def one_line_values(context: dict[str, Any]) -> dict[str, Any]:
    """``context`` with each text value made one line, before a template sees it.

    A line of a letter ends only where its template ends one: in a value
    (a subscriber's name, a service title) every control character — CR, LF,
    NUL, tab, VT, FF, NEL U+0085 — and the separators U+2028 and U+2029, all
    that some reader could take for the end of a line, become a space.
    """
    return {key: _LINE_ENDS.sub(" ", value) if isinstance(value, str) else value
            for key, value in context.items()}


#: The characters of Unicode's categories Cc (C0, DEL, C1), Zl and Zp: a
#: fixed set (Unicode never adds control characters), spelled out because
#: asking ``unicodedata.category`` of each character of each value cost
#: ~37 us a letter; a test holds it to the categories.
_LINE_ENDS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


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
    environment = _HTML if html else _TEXT
    return environment.from_string(bounded(environment, source))


def _bad_syntax(exc: jinja2.TemplateSyntaxError, what: str) -> BadInput:
    # Jinja's own sentence stays as Jinja wrote it (English); ours around it is translated.
    return BadInput("{what}: line {line}: {reason}", what=Term(what), line=exc.lineno,
                    reason=exc.message or Term("syntax error"))


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


def variables(source: str) -> frozenset[str]:
    """The names ``source`` reads from its context (``{{ nmae }}`` → ``nmae``);
    empty when it does not compile (:func:`check_syntax` says why)."""
    return _variables(source)


@functools.lru_cache(maxsize=256)
def _variables(source: str) -> frozenset[str]:
    from jinja2 import meta

    try:
        return frozenset(meta.find_undeclared_variables(_TEXT.parse(source)))
    except jinja2.TemplateSyntaxError:
        return frozenset()


def uses(source: str, name: str) -> bool:
    """Whether the template ``source`` reads the variable ``name`` anywhere."""
    return name in variables(source)


def unknown_variables(source: str, known: frozenset[str] | set[str] | None = None) -> list[str]:
    """The variables ``source`` reads that no letter is given (sorted): a typo
    such as ``{{ nmae }}`` renders as nothing, so the editor warns of it."""
    known = KNOWN_VARIABLES if known is None else known
    return sorted(variables(source) - set(known))


def check_syntax(source: str, what: str = "template") -> None:
    """Raise :class:`BadInput` (``"<what>: line N: <reason>"``) unless ``source`` compiles."""
    try:
        _compile(source, False)
    except jinja2.TemplateSyntaxError as exc:
        raise _bad_syntax(exc, what) from None


def check_template(source: str, what: str = "template", html: bool = False,
                   budget: Budget | None = None) -> None:
    """Refuse ``source`` (:class:`BadInput`) unless it compiles and renders for
    the sample subscriber inside the bounds (:class:`OverBudget` if not).

    Other errors of the trial (``{{ 1/0 }}``) are left for the preview: they
    may depend on who the letter is for."""
    check_syntax(source, what)
    try:
        _render(source, dict(SAMPLE_CONTEXT), what, html, budget)
    except OverBudget:
        raise
    except BadInput:
        pass


def _render(source: str, context: dict[str, Any], what: str, html: bool,
            budget: Budget | None) -> str:
    try:
        template = _compile(source, html)
    except jinja2.TemplateSyntaxError as exc:
        raise _bad_syntax(exc, what) from None
    outer = getattr(_active, "budget", None)
    _active.budget = budget or Budget()
    pieces = template.generate(context)
    try:
        return _capped_join(pieces)
    except _TooCostly as exc:
        line = _template_line(exc)
        raise OverBudget(what, line, exc.reason, **exc.values) from None
    except Exception as exc:  # SecurityError, UndefinedError, 1/0, bad filter arguments…
        line = _template_line(exc)
        reason = str(exc) or type(exc).__name__
        if not isinstance(exc, jinja2.TemplateError):
            reason = f"{type(exc).__name__}: {reason}"
        if line is None:
            raise BadInput("{what}: {reason}", what=Term(what), reason=reason) from exc
        raise BadInput("{what}: line {line}: {reason}", what=Term(what), line=line,
                       reason=reason) from exc
    finally:
        pieces.close()  # type: ignore[attr-defined]  # a generator, typed by Jinja as an Iterator
        _active.budget = outer


def render(source: str, context: dict[str, Any], what: str = "template",
           budget: Budget | None = None) -> str:
    """``source`` rendered with ``context`` as plain text (nothing is escaped),
    inside ``budget`` (a fresh one if not given)."""
    return _render(source, context, what, False, budget)


def render_html(source: str, context: dict[str, Any], what: str = "template",
                budget: Budget | None = None) -> str:
    """``source`` rendered with ``context`` as HTML: every value is escaped."""
    return _render(source, context, what, True, budget)

