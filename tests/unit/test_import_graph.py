"""No two of the project's modules import each other, however indirectly.

An import circle hidden by an import inside a function still ties two ideas
together: neither can be read, tested or moved without the other, and the
order in which they load decides what works. This test reads every module
under lib/vykhukhol with :mod:`ast` (nothing is imported, so no module runs),
takes each import at the top and inside functions — relative or absolute,
``import x`` or ``from x import y`` where ``y`` may itself be a module — and
fails on any circle, printing it. Imports under ``if TYPE_CHECKING:`` are left
out: they never run.

An edge goes to the module named, not to the packages above it: that
``mail.smtp`` loads ``mail/__init__.py`` first is how packages work, not a
circle of ours. Except one form: ``from pkg import submodule`` asks the
package itself for the name, so it ties the importer to ``pkg/__init__.py``
as well (a package face that imports the importer back is a circle through
its ``__init__``, and it is counted).
"""

from __future__ import annotations

import ast

from support.importscan import imports as _imports
from support.importscan import modules as _modules

# Circles other work is removing at the same time, as sorted module lists.
ALLOWED: set[tuple[str, ...]] = set()  # none: a circle found is a circle to undo


def _targets(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    found = set()
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        # ``from x import y``: y a name runs x; y a module runs y, and asks x
        # (its __init__, run first) for the name: both are ties.
        found.add(source)
        if sub in modules:
            found.add(sub)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        edges = set()
        for node in _imports(tree):
            for target in _targets(name, is_package, node, modules):
                if target in modules and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan), each with one path round it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                parts.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return parts


def _path_round(graph: dict[str, set[str]], part: list[str]) -> list[str]:
    """One circle through the first module of ``part``, for the message."""
    start, members = part[0], set(part)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return part


def test_relative_imports_submodules_and_type_checking_are_read_as_python_runs_them():
    source = """
from typing import TYPE_CHECKING
from . import headers
from .transport import Transport
from .. import files
import vykhukhol.errors
if TYPE_CHECKING:
    from vykhukhol.settings import Settings
def later():
    from vykhukhol.mail import dkim
"""
    modules = {"vykhukhol.mail.headers", "vykhukhol.mail.transport", "vykhukhol.files",
               "vykhukhol.errors", "vykhukhol.settings", "vykhukhol.mail.dkim", "vykhukhol.mail",
               "vykhukhol"}
    found = set()
    for node in _imports(ast.parse(source)):
        found |= _targets("vykhukhol.mail.smtp", False, node, modules)
    # "from . import headers" and "from .. import files" ask the package for the
    # module: the package's __init__ is a tie too.
    assert found - {"typing"} == {"vykhukhol.mail.headers", "vykhukhol.mail.transport",
                                  "vykhukhol.files", "vykhukhol.errors", "vykhukhol.mail.dkim",
                                  "vykhukhol.mail", "vykhukhol"}
    # In a package's __init__, "." is the package itself.
    node = ast.parse("from .config import MailConfig").body[0]
    assert _targets("vykhukhol.mail", True, node, modules) == {"vykhukhol.mail.config"}


def test_a_submodule_asked_of_its_package_ties_to_the_package_face():
    """``from pkg import sub`` runs pkg/__init__.py and asks it for ``sub``: a face
    that imports the importer back is a circle, where ``from pkg.sub import x``
    (the package only loaded as a parent) is not."""
    modules = {"p", "p.a", "p.b"}
    asked = ast.parse("from p import b").body[0]
    named = ast.parse("from p.b import thing").body[0]
    assert _targets("p.a", False, asked, modules) == {"p", "p.b"}
    assert _targets("p.a", False, named, modules) == {"p.b"}
    assert circles({"p": {"p.a"}, "p.a": {"p", "p.b"}, "p.b": set()}) == [["p", "p.a"]]


def test_a_circle_is_found_and_shown_round():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert _path_round(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    # settings -> files at the top; mail.transport -> mail.dkim inside a function.
    assert "vykhukhol.files" in graph["vykhukhol.settings"]
    assert "vykhukhol.mail.dkim" in graph["vykhukhol.mail.transport"]
    assert "vykhukhol.errors" in graph["vykhukhol.web.admin.core"]


def test_no_module_imports_itself_through_others():
    graph = import_graph()
    found = [part for part in circles(graph) if tuple(part) not in ALLOWED]
    described = "\n".join(f"{' -> '.join(_path_round(graph, part))}  (tied together: {', '.join(part)})"
                          for part in found)
    assert not found, f"import circles:\n{described}"


def test_the_settings_know_nothing_of_mail_and_the_transports_nothing_of_choosing():
    graph = import_graph()
    assert not {m for m in graph["vykhukhol.settings"] if m.startswith("vykhukhol.mail")}
    for transport in ("smtp", "sendmail", "outbox", "transport"):
        assert "vykhukhol.mail.opener" not in graph[f"vykhukhol.mail.{transport}"]
