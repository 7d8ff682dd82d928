"""The bounds of a render (see :mod:`vykhukhol.render`): the time
:class:`Budget` a letter's parts share, and what one step would build,
estimated *before* it runs.

Everything here is plain Python over plain values; Jinja2 appears only as
the :class:`~jinja2.sandbox.SecurityError` a bound raises inside the sandbox.
:mod:`.sandbox` calls these at every step; nothing else should.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from typing import Any

from jinja2.sandbox import SecurityError
from jinja2.utils import Namespace

TIME_BUDGET = 0.5        # seconds (wall clock) one letter's parts may take to render, together
MAX_OUTPUT = 1_000_000   # characters one rendered part (subject, text, HTML) may have
MAX_SIZE = MAX_OUTPUT    # characters one value (a string, a list as printed) may stand for
MAX_DIGITS = 3000        # decimal digits of the largest integer a template may make
MAX_EXPONENT = 100       # largest exponent of `**`
MAX_RANGE = 100_000      # numbers in one range() (Jinja's own sandbox bound), rows of batch/slice
MAX_LIPSUM_WORDS = 10_000  # words one lipsum() may make (its default makes at most 500)

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
    times = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]  # old: text's type
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


