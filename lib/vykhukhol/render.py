"""Letter templates: Jinja2 in its sandbox, bounded in size and time, errors
as sentences with a line number.

A service's letters (series letters, confirmation requests, newsletters) are
templates written by the people who run the service and treated as untrusted
code (SPEC 13). They are rendered in an
:class:`~jinja2.sandbox.ImmutableSandboxedEnvironment`: no attribute starting
with ``_``, no unsafe callables, no changing the context. Here each render is
also bounded:

- **time**: a render shares a :class:`Budget` of :data:`TIME_BUDGET` seconds
  (wall clock) with the other parts of its letter. The clock is read inside
  the sandbox, at every call, attribute, operator, filter, printed value and
  every step of every ``{% for %}`` loop (the code generator wraps each loop's
  iterable), so even empty nested loops stop. No signals: it is safe in
  serve's threads.
- **size**: a rendered part may be at most :data:`MAX_OUTPUT` characters, and
  no value may stand for more than :data:`MAX_SIZE` characters. What could
  build a big value in one step is estimated *before* it runs and refused:
  ``*``, ``+``, ``~``, ``%`` and ``**`` (integers of at most
  :data:`MAX_DIGITS` digits), ``str.format`` widths and precisions, the
  padding and joining methods of strings, the filters that pad, wrap, join
  or repeat (``center``, ``indent``, ``wordwrap``, ``format``, ``join``,
  ``replace``, ``sum``, ``batch``, ``slice``, ``urlize``), ``range()`` and
  ``lipsum()``. Every other filter and call is checked on what it is given
  and what it returns.

Going over a bound is :class:`~vykhukhol.errors.OverBudget` (a
:class:`~vykhukhol.errors.BadInput`), so :func:`check_template` refuses such a
template when it is saved and a run skips its letter with an alert. The
numbers are in README section 4; a normal letter renders in well under a
millisecond and a few kilobytes.

Variables that are not given render as nothing (``{{ nmae }}`` is empty,
``{{ a.b.c }}`` too) — a typo must not stop a mailing. Any other mistake
becomes :class:`~vykhukhol.errors.BadInput` with ``"<what>: line N: <reason>"``.

The context the project passes is ``name``, ``email``, ``service``,
``unsubscribe_url`` and ``date`` (and ``confirm_url`` in confirmation
requests); this module does not insist on it.

It deliberately does not load templates from files (no ``{% include %}`` or
``{% extends %}``: there is no loader) and does not decide which template a
letter uses.
"""

from __future__ import annotations

import functools
import inspect
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import LoopContext
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
    SecurityError,
)
from jinja2.utils import Namespace, generate_lorem_ipsum, pass_environment
from markupsafe import Markup

from vykhukhol.errors import BadInput, OverBudget, Term

#: The parts of a letter a template error names (``what``), translated on a page.
PARTS = ("subject", "text", "body", "HTML", "template")

__all__ = ["Budget", "check_syntax", "check_template", "one_line_values", "render", "render_html"]

TIME_BUDGET = 0.5        # seconds (wall clock) one letter's parts may take to render, together
MAX_OUTPUT = 1_000_000   # characters one rendered part (subject, text, HTML) may have
MAX_SIZE = MAX_OUTPUT    # characters one value (a string, a list as printed) may stand for
MAX_DIGITS = 3000        # decimal digits of the largest integer a template may make
MAX_EXPONENT = 100       # largest exponent of `**`
MAX_RANGE = 100_000      # numbers in one range() (Jinja's own sandbox bound), rows of batch/slice
MAX_LIPSUM_WORDS = 10_000  # words one lipsum() may make (its default makes at most 500)

#: What a template is tried with when it is saved (README section 4).
SAMPLE_CONTEXT = {
    "name": "Ivan Petrov", "email": "ivan@example.org", "service": "Sample service",
    "unsubscribe_url": "https://example.org/cgi/unsubscribe.py?s=sample&e=ivan%40example.org&t=x",
    "confirm_url": "https://example.org/cgi/confirm.py?s=sample&e=ivan%40example.org&t=x",
    "date": "2026-01-31",
}

_TEMPLATE_FILE = "<template>"  # the file name Jinja gives templates made from strings


# --- the budget --------------------------------------------------------------------

class Budget:
    """The time one letter may spend rendering; its parts share one budget."""

    def __init__(self, seconds: float = TIME_BUDGET) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds


class _TooCostly(SecurityError):
    """Raised inside the sandbox; :func:`_render` turns it into OverBudget."""

    def __init__(self, reason: str, **values: object) -> None:
        super().__init__(reason.format(**values))
        self.reason = reason
        self.values = values


_active = threading.local()  # the budget of the render running on this thread


def _tick() -> None:
    """Stop the render once its budget's time is spent."""
    budget = getattr(_active, "budget", None)
    if budget is not None and time.monotonic() > budget.deadline:
        raise _TooCostly("the template took longer than {seconds} s to render",
                         seconds=budget.seconds)


def _digits(number: int) -> int:
    return int(number.bit_length() * 0.30103) + 1


def _size(value: Any, limit: int = MAX_SIZE) -> int:
    """About how many characters ``value`` stands for when printed (containers
    count each item as often as it occurs); counting stops past ``limit``."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, int):
        return _digits(value)
    if not isinstance(value, (list, tuple, set, frozenset, dict, Namespace)):
        return 1
    total, steps, stack = 0, 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        total += 1
        steps += 1
        if isinstance(item, (str, bytes, bytearray)):
            total += len(item)
        elif isinstance(item, int):
            total += _digits(item)
        elif isinstance(item, Namespace):
            stack.append(object.__getattribute__(item, "_Namespace__attrs"))
        elif isinstance(item, dict):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += len(item)
            stack.extend(item)
        if steps % 4096 == 0:
            _tick()
    return total


def _capped_join(pieces: Iterable[str]) -> str:
    """The pieces joined, refused as soon as they pass :data:`MAX_OUTPUT`."""
    parts, total = [], 0
    for piece in pieces:
        total += len(piece)
        if total > MAX_OUTPUT:
            raise _TooCostly("the template would write more than {limit} characters",
                             limit=MAX_OUTPUT)
        parts.append(piece)
    return "".join(parts)


def _refuse_over(estimate: int) -> None:
    if estimate > MAX_SIZE:
        raise _TooCostly("a value would be longer than {limit} characters", limit=MAX_SIZE)


def _check(value: Any) -> Any:
    """``value`` itself, if it is not too big."""
    _refuse_over(_size(value))
    return value


def _whole(value: Any) -> int:
    """A width or count given to a padding function (what is not an int fails there)."""
    return value if isinstance(value, int) else 0


# --- what one step would build ------------------------------------------------------

_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?.", re.S)


def _number(text: str) -> int:
    return int(text) if len(text) < 10 else MAX_SIZE + 1


def _percent_size(fmt: str | bytes, args: Any) -> int:
    """Characters ``fmt % args`` can make: each conversion may print any
    argument, padded to its width and precision (``*`` takes them from args)."""
    text = fmt if isinstance(fmt, str) else fmt.decode("latin-1")
    conversions, widths, star = 0, 0, False
    for match in _PERCENT.finditer(text):
        conversions += 1
        for part in match.groups():
            if part == "*":
                star = True
            elif part:
                widths += _number(part)
    if star:
        values = args if isinstance(args, tuple) else (args,)
        widths += sum(abs(v) for v in values if isinstance(v, int))
    return len(text) + widths + conversions * _size(args)


def _joined_size(separator: Any, items: list) -> int:
    total = max(len(items) - 1, 0) * _size(separator)
    for item in items:
        total += _size(item)
        if total > MAX_SIZE:
            break
    return total


def _replaced_size(text: Any, old: Any, new: Any, count: Any) -> int:
    if not isinstance(text, (str, bytes, bytearray)) or not isinstance(old, type(text)):
        return _size(text)
    times = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    return len(text) + times * _size(new)


def _method_size(owner: Any, name: str, args: tuple, kwargs: dict) -> tuple[int, tuple]:
    """(characters a string method would make, the arguments to call it with),
    for the methods that can make much more than they are given."""
    if name in ("center", "ljust", "rjust", "zfill") and args:
        return max(len(owner), _whole(args[0])), args
    if name == "expandtabs":
        size = _whole(args[0] if args else kwargs.get("tabsize", 8))
        return len(owner) + owner.count("\t" if isinstance(owner, str) else b"\t") * size, args
    if name == "replace" and len(args) >= 2:
        return _replaced_size(owner, args[0], args[1], args[2] if len(args) > 2 else -1), args
    if name == "join" and args:
        items = list(args[0])
        return _joined_size(owner, items), (items,) + args[1:]
    if name == "translate" and args and isinstance(args[0], dict):
        widest = max((_size(v) for v in args[0].values()), default=1)
        return len(owner) * max(widest, 1), args
    return 0, args


def _product_size(left: Any, right: Any) -> int:
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(times, int):
            return _size(seq) * max(times, 0)
    return 0


# --- bounded globals and filters ---------------------------------------------------

def _range(*args: int) -> range:
    numbers = range(*args)
    try:
        too_many = len(numbers) > MAX_RANGE
    except OverflowError:  # longer than a C integer can count
        too_many = True
    if too_many:
        raise _TooCostly("range() of more than {limit} numbers", limit=MAX_RANGE)
    return numbers


_builtin_max = max


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
    if _whole(n) * _whole(_builtin_max(min, max)) > MAX_LIPSUM_WORDS:
        raise _TooCostly("lipsum() of more than {limit} words", limit=MAX_LIPSUM_WORDS)
    return generate_lorem_ipsum(n, html, min, max)


@pass_environment
def _sum(environment: _Sandbox, iterable: Iterable, attribute: Any = None, start: Any = 0) -> Any:
    """Jinja's ``sum``, one checked ``+`` at a time (the builtin adds lists in one
    C loop, quadratic and deaf to the clock)."""
    from jinja2.filters import make_attrgetter

    if attribute is not None:
        iterable = map(make_attrgetter(environment, attribute), iterable)
    total = start
    for item in iterable:
        total = environment.call_binop(None, "+", total, item)
    return total


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


#: Filters that can make much more than they are given: what they would make.
#: Each takes the call's arguments by name (defaults applied) and may change
#: them (``join`` reads its iterable once, here).
_FILTER_SIZES: dict[str, Callable[[dict], int]] = {
    "center": lambda a: _builtin_max(len(_text(a["value"])), _whole(a["width"])),
    "indent": lambda a: len(_text(a["s"])) + (_text(a["s"]).count("\n") + 1) * (
        _whole(a["width"]) if isinstance(a["width"], int) else len(_text(a["width"]))),
    "wordwrap": lambda a: len(_text(a["s"])) * (1 + len(_text(a["wrapstring"] or "\n"))),
    "format": lambda a: _percent_size(_text(a["value"]), a["kwargs"] or a["args"]),
    "replace": lambda a: _replaced_size(_text(a["s"]), a["old"], a["new"], a["count"]),
    "urlize": lambda a: 6 * len(_text(a["value"])) + (_text(a["value"]).count(" ") + 1) * (
        60 + len(_text(a["target"] or "")) + len(_text(a["rel"] or ""))),
    "batch": lambda a: _whole(a["linecount"]) * MAX_SIZE // MAX_RANGE,
    "slice": lambda a: _whole(a["slices"]) * MAX_SIZE // MAX_RANGE,
}


def _join_arguments(a: dict) -> int:
    a["value"] = list(a["value"])
    return _joined_size(a["d"], a["value"])


_FILTER_SIZES["join"] = _join_arguments


def _guard_filter(name: str, func: Callable) -> Callable:
    """``func`` checked: the clock, what it is given, what it would make, what it makes."""
    from jinja2.utils import _PassArg

    first = 0 if _PassArg.from_obj(func) is None else 1  # after the context it is passed
    estimate = _FILTER_SIZES.get(name)
    signature = inspect.signature(func) if estimate else None
    if signature is not None and first:
        # The passed argument is in the signature, unless Jinja's async
        # wrapper added it (its signature is the plain filter's).
        params = list(signature.parameters.values())
        if params and params[0].name in ("eval_ctx", "environment", "context"):
            signature = signature.replace(parameters=params[1:])

    def guarded(*args: Any, **kwargs: Any) -> Any:
        _tick()
        if len(args) > first:
            _check(args[first])
        if signature is not None:
            bound = signature.bind(*args[first:], **kwargs)
            bound.apply_defaults()
            _refuse_over(estimate(bound.arguments))
            args, kwargs = args[:first] + bound.args, bound.kwargs
        return _check(func(*args, **kwargs))

    return functools.update_wrapper(guarded, func)  # keeps Jinja's pass-argument mark


# --- str.format ----------------------------------------------------------------------

class _CountingFormatter:
    """``str.format`` with each field's width and precision, and the total, bounded."""

    _made = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._made = len(format_string)
        return super().vformat(format_string, args, kwargs)  # type: ignore[misc]

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        _check(value)  # !r of a big list
        return super().convert_field(value, conversion)  # type: ignore[misc]

    def format_field(self, value: Any, format_spec: str) -> Any:
        _tick()
        self._made += _size(value) + sum(_number(d) for d in re.findall(r"\d+", format_spec))
        _refuse_over(self._made)
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _Formatter(_CountingFormatter, SandboxedFormatter):
    pass


class _EscapeFormatter(_CountingFormatter, SandboxedEscapeFormatter):
    pass


# --- the sandbox ---------------------------------------------------------------------

class _Guarded:
    """An iterable that reads the clock at every step (and keeps its length)."""

    def __init__(self, iterable: Any) -> None:
        self.iterable = iterable

    def __iter__(self) -> Any:
        for item in self.iterable:
            _tick()
            yield item

    def __len__(self) -> int:
        return len(self.iterable)


class _Generator(CodeGenerator):
    """Jinja's code generator, with loops and ``~`` routed through the sandbox."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loop_iterables: set[int] = set()  # ids of the nodes each loop iterates over

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        self._loop_iterables.add(id(node.iter))
        super().visit_For(node, frame)

    def visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        if id(node) not in self._loop_iterables:
            return super().visit(node, *args, **kwargs)
        self.write("environment.guarded(")
        super().visit(node, *args, **kwargs)
        self.write(")")
        return None

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            join = "(markup_join if context.eval_ctx.volatile else str_join)"
        elif frame.eval_ctx.autoescape:
            join = "markup_join"
        else:
            join = "str_join"
        self.write(f"environment.joined({join}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, made strict where the stock one is silent or generous."""

    code_generator_class = _Generator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=self.printed, **options)
        self.globals["range"] = _range
        self.globals["lipsum"] = _lipsum
        self.filters["sum"] = _sum
        self.filters = {name: _guard_filter(name, func) for name, func in self.filters.items()}

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The stock sandbox returns an Undefined, which our lenient Undefined
        # would print as nothing; an attempt to escape must be an error instead.
        raise SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        if operator == "*":
            if isinstance(left, int) and isinstance(right, int):
                self._refuse_digits(_digits(left) + _digits(right))
            else:
                _refuse_over(_product_size(left, right))
        elif operator == "+":
            if not isinstance(left, (int, float)) or not isinstance(right, (int, float)):
                _refuse_over(_size(left) + _size(right))
        elif operator == "**":
            if isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise _TooCostly("exponents above {limit} are not allowed", limit=MAX_EXPONENT)
            if isinstance(left, int) and isinstance(right, int) and right > 0:
                self._refuse_digits(_digits(left) * right)
        elif operator == "%" and isinstance(left, (str, bytes)):
            _refuse_over(_percent_size(left, right))
        return super().call_binop(context, operator, left, right)

    @staticmethod
    def _refuse_digits(digits: int) -> None:
        if digits > MAX_DIGITS:
            raise _TooCostly("a number would have more than {limit} digits", limit=MAX_DIGITS)

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        _tick()
        if isinstance(obj, LoopContext) and args:  # loop(children) of a recursive loop
            args = (_Guarded(args[0]),) + args[1:]
        else:
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, (str, bytes, bytearray)):
                estimate, args = _method_size(owner, getattr(obj, "__name__", ""), args, kwargs)
                _refuse_over(estimate)
            elif isinstance(owner, int) and getattr(obj, "__name__", "") == "to_bytes":
                _refuse_over(_whole(args[0] if args else kwargs.get("length", 1)))
        return _check(super().call(context, obj, *args, **kwargs))

    def getattr(self, obj: Any, attribute: str) -> Any:
        _tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _tick()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """The stock wrapper of ``str.format``/``format_map``, with a formatter
        that bounds what the fields make."""
        if not inspect.isroutine(value) or getattr(value, "__name__", "") not in (
                "format", "format_map"):
            return None
        owner = getattr(value, "__self__", None)
        if not isinstance(owner, str):
            return None
        if isinstance(owner, Markup):
            formatter: SandboxedFormatter = _EscapeFormatter(self, escape=owner.escape)
        else:
            formatter = _Formatter(self)
        is_map = value.__name__ == "format_map"

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                args, kwargs = (), args[0]
            return type(owner)(formatter.vformat(owner, args, kwargs))

        return functools.update_wrapper(wrapper, value)

    # -- used by the generated code ---------------------------------------------
    def guarded(self, iterable: Any) -> _Guarded:
        """A ``{% for %}`` loop's iterable."""
        return _Guarded(iterable)

    def joined(self, join: Callable[[Iterable], str], items: tuple) -> str:
        """``a ~ b``: sized before it is built."""
        _tick()
        _refuse_over(sum(_size(item) for item in items))
        return join(items)

    def concat(self, pieces: Iterable[str]) -> str:  # type: ignore[override]
        """The output of a macro, a ``{% set %}`` block or a filter block."""
        return _capped_join(pieces)

    @staticmethod
    def printed(value: Any) -> Any:
        """Each ``{{ value }}``, before it becomes text."""
        _tick()
        return _check(value)


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
        pieces.close()
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
