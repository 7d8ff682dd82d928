"""The sandbox a letter template runs in (see :mod:`vykhukhol.render`): Jinja2's
:class:`~jinja2.sandbox.ImmutableSandboxedEnvironment`, made strict where the
stock one is silent or generous, with every step checked against
:mod:`.budget`.

Only Jinja2's public API is used to reach the steps the stock sandbox does
not see: the parsed template is rewritten (:class:`_Bounded`, a
:class:`~jinja2.visitor.NodeTransformer`) so that every ``a ~ b`` and every
``{% for %}`` iterable passes through a filter of ours before the template
is compiled (``Environment.from_string`` takes the rewritten tree).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.runtime import LoopContext
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
    SecurityError,
)
from jinja2.utils import generate_lorem_ipsum, pass_context, pass_environment
from jinja2.visitor import NodeTransformer
from markupsafe import Markup, soft_str

from vykhukhol.render.budget import (
    MAX_DIGITS,
    MAX_EXPONENT,
    MAX_LIPSUM_WORDS,
    MAX_RANGE,
    MAX_SIZE,
    _capped_join,
    _check,
    _digits,
    _joined_size,
    _method_size,
    _number,
    _percent_size,
    _product_size,
    _refuse_over,
    _replaced_size,
    _size,
    _tick,
    _TooCostly,
    _whole,
)

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
        if estimate is not None and signature is not None:
            bound = signature.bind(*args[first:], **kwargs)
            bound.apply_defaults()
            _refuse_over(estimate(bound.arguments))
            args, kwargs = args[:first] + bound.args, bound.kwargs
        return _check(func(*args, **kwargs))

    return functools.update_wrapper(guarded, func)  # keeps Jinja's pass-argument mark


# --- str.format ----------------------------------------------------------------------

class _CountingFormatter(SandboxedFormatter):
    """``str.format`` with each field's width and precision, and the total, bounded."""

    _made = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._made = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        _check(value)  # !r of a big list
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        _tick()
        self._made += _size(value) + sum(_number(d) for d in re.findall(r"\d+", format_spec))
        _refuse_over(self._made)
        return super().format_field(value, format_spec)


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


# The filters the rewritten tree calls. Each passes the context, so Jinja's
# optimizer never runs it at compile time (a constant ``"a" ~ "b"`` too goes
# through the sandbox, as every other ``~`` does).
_CONCAT = "_bounded_concat"
_LOOP = "_bounded_loop"


class _Bounded(NodeTransformer):
    """Every ``a ~ b`` becomes ``(a, b)|_bounded_concat`` and every loop's
    iterable ``iterable|_bounded_loop``: the steps the stock sandbox never
    sees pass through it."""

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        items = nodes.Tuple(node.nodes, "load", lineno=node.lineno)
        return nodes.Filter(items, _CONCAT, [], [], None, None, lineno=node.lineno)

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, _LOOP, [], [], None, None, lineno=node.iter.lineno)
        return node


def bounded(environment: jinja2.Environment, source: str) -> nodes.Template:
    """``source`` parsed, with every ``~`` and loop routed through the sandbox."""
    tree = _Bounded().visit(environment.parse(source))
    tree.set_environment(environment)
    return tree


@pass_context
def _concat(context: Any, items: tuple) -> str:
    """``a ~ b``: sized before it is built; as Jinja joins, Markup-aware when
    the output is escaped."""
    _tick()
    _refuse_over(sum(_size(item) for item in items))
    if context.eval_ctx.autoescape:
        pieces = [soft_str(item) for item in items]
        if any(hasattr(piece, "__html__") for piece in pieces):
            return Markup("").join(pieces)
        return "".join(pieces)
    return "".join(map(str, items))


@pass_context
def _loop(context: Any, iterable: Any) -> _Guarded:
    """A ``{% for %}`` loop's iterable."""
    return _Guarded(iterable)


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, made strict where the stock one is silent or generous."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=self.printed, **options)
        # Only our bounded functions and namespace (a loop's state needs it):
        # Jinja2's dict, cycler and joiner are no letter's business.
        self.globals = {"range": _range, "lipsum": _lipsum, "namespace": self.globals["namespace"]}
        self.filters["sum"] = _sum
        self.filters = {name: _guard_filter(name, func) for name, func in self.filters.items()}
        self.filters[_CONCAT] = _concat
        self.filters[_LOOP] = _loop

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
                kwargs, args = args[0], ()
            return type(owner)(formatter.vformat(owner, args, kwargs))

        return functools.update_wrapper(wrapper, value)

    # -- used by Jinja's generated code -----------------------------------------
    def concat(self, pieces: Iterable[str]) -> str:
        """The output of a macro, a ``{% set %}`` block or a filter block."""
        return _capped_join(pieces)

    @staticmethod
    def printed(value: Any) -> Any:
        """Each ``{{ value }}``, before it becomes text. A function, a method or
        a class prints as nothing, as an unknown name does: it would print as
        ``<function … at 0x…>``, a memory address in a letter or an archive page."""
        _tick()
        if callable(value) and not isinstance(value, (str, Markup, jinja2.Undefined)):
            return ""
        return _check(value)


