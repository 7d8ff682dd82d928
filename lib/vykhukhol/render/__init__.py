"""Letter templates: Jinja2 in its sandbox, bounded in size and time, errors
as sentences with a line number.

A service's letters (series letters, confirmation requests, newsletters) are
templates written by the people who run the service and treated as untrusted
code (docs/reference/security.md#security-templates). They are rendered in an
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
numbers are in docs/using/services.md#template-bounds; a normal letter renders in well under a
millisecond and a few kilobytes.

Variables that are not given render as nothing (``{{ nmae }}`` is empty,
``{{ a.b.c }}`` too) — a typo must not stop a mailing. Any other mistake
becomes :class:`~vykhukhol.errors.BadInput` with ``"<what>: line N: <reason>"``.

The context the project passes is ``name``, ``email``, ``service``,
``unsubscribe_url``, ``manage_url``, ``web_url`` and ``date`` (and ``confirm_url`` in
confirmation requests); this module does not insist on it.

What is where: :mod:`.budget` holds the bounds and the estimates of what
one step would build; :mod:`.sandbox` the environment that checks every
step against them; :mod:`.engine` compiles, renders and turns errors into sentences.

It deliberately does not load templates from files (no ``{% include %}`` or
``{% extends %}``: there is no loader) and does not decide which template a
letter uses.
"""

from vykhukhol.render.budget import TIME_BUDGET, Budget
from vykhukhol.render.engine import (
    KNOWN_VARIABLES,
    PARTS,
    SAMPLE_CONTEXT,
    check_syntax,
    check_template,
    one_line_values,
    render,
    render_html,
    unknown_variables,
    uses,
    variables,
)
from vykhukhol.render.fields import FieldValues, fields_context

__all__ = [
    "KNOWN_VARIABLES", "PARTS", "SAMPLE_CONTEXT", "TIME_BUDGET", "Budget", "FieldValues",
    "check_syntax", "check_template", "fields_context", "one_line_values", "render", "render_html", "unknown_variables", "uses",
    "variables",
]
