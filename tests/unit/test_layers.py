"""Every package imports only from its own layer or a lower one, and no two
packages import each other, however indirectly.

The layer table below is the order the package is built in, bottom first: a
health check that reads a CLI guide, or an idle tick that builds an HTTP
answer, would point up and show here. The test reads every module under
lib/vykhukhol with :mod:`ast` (nothing is imported, so no module runs) and
takes each import at the top and inside functions; imports under ``if
TYPE_CHECKING:`` are left out, they never run. A top-level module
(``vykhukhol/errors.py``) is a package of its own for this table.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.importscan import LIB, PACKAGE
from support.importscan import imports as _imports
from support.importscan import modules as _modules

# Bottom first: a package may import from its own row and the rows above it.
LAYERS: list[set[str]] = [
    {"vykhukhol", "errors", "i18n", "timeutil", "states", "addresses", "tokens", "returntag",
     "records"},  # 0 base
    {"files", "datadir", "settings"},  # 1
    {"render"},  # 2
    {"services"},  # 3
    {"archive"},  # 4
    {"mail"},  # 5
    {"newsletters"},  # 6
    {"members"},  # 7
    {"bounces"},  # 8
    {"watch"},  # 9 the watchers around the run
    {"webhooks"},  # 10 the events told to the rest of the site
    {"sender"},  # 11 the run itself
    {"web", "cli", "__main__"},  # 12 top (cli may import web, web never imports cli)
]
ABOVE: set[tuple[str, str]] = {("cli", "web")}  # (importer, imported) allowed within one row

# Edges allowed for a while, (importer, imported), each a module or a package
# that covers the modules under it: none, an edge found is an edge to undo.
PENDING: set[tuple[str, str]] = set()


def _targets(name: str, is_package: bool, node: ast.Import | ast.ImportFrom,
             modules) -> set[str]:
    """The modules an import names: ``from x import y`` names x.y when y is a
    module, else x (that x's face is loaded too changes no package)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return {f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
            for alias in node.names}


def package_of(module: str) -> str | None:
    """``vykhukhol.sender.pace`` -> ``sender``; ``vykhukhol`` -> ``vykhukhol``; outside -> None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else PACKAGE


def layer_of(package: str) -> int:
    for number, row in enumerate(LAYERS):
        if package in row:
            return number
    raise AssertionError(f"package {package!r} has no row in LAYERS: give it one")


def edges() -> list[tuple[Path, int, str, str]]:
    """(file, line, importing module, imported module) for every import between two packages."""
    modules = _modules()
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _imports(tree):
            for target in _targets(name, path.name == "__init__.py", node, modules):
                if target not in modules:
                    continue
                if package_of(target) != package_of(name):
                    found.append((path, node.lineno, name, target))
    return found


def points_up(importer: str, imported: str) -> bool:
    low, high = layer_of(importer), layer_of(imported)
    return high > low or (high == low and (imported, importer) in ABOVE)


def package_circles(pairs: set[tuple[str, str]]) -> list[list[str]]:
    """Each circle of packages, as the list of packages round it (first repeated last)."""
    graph: dict[str, set[str]] = {}
    for a, b in pairs:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    found = []
    for start in sorted(graph):
        paths = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            for w in sorted(graph[v]):
                if w == start:
                    circle = paths[v] + [start]
                    if min(circle) == start:  # each circle once, from its first package
                        found.append(circle)
                    queue = []
                    break
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
    return found


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def pending(importer: str, imported: str) -> bool:
    return any(_within(importer, a) and _within(imported, b) for a, b in PENDING)


def _live_edges():
    return [e for e in edges() if not pending(e[2], e[3])]


def test_the_table_places_every_package():
    for name in _modules():
        layer_of(package_of(name))


def test_no_package_imports_from_a_higher_layer():
    wrong = [
        f"{path.relative_to(LIB.parent)}:{line}: {package_of(importer)} (layer {layer_of(package_of(importer))})"
        f" imports {imported} of {package_of(imported)} (layer {layer_of(package_of(imported))})"
        for path, line, importer, imported in _live_edges()
        if points_up(package_of(importer), package_of(imported))
    ]
    assert not wrong, "imports that point up:\n" + "\n".join(wrong)


def test_no_packages_import_each_other():
    pairs = {(package_of(a), package_of(b)) for _, _, a, b in _live_edges()}
    found = package_circles(pairs)
    where = {}
    for path, line, a, b in _live_edges():
        where.setdefault((package_of(a), package_of(b)), f"{path.relative_to(LIB.parent)}:{line}")
    described = "\n".join(
        " -> ".join(circle) + "  (" + ", ".join(where[(x, y)] for x, y in zip(circle, circle[1:], strict=False)) + ")"
        for circle in found
    )
    assert not found, f"package circles:\n{described}"


def test_every_pending_edge_still_exists():
    """PENDING names only edges that are there: one removed leaves its line to delete."""
    there = edges()
    gone = {(a, b) for a, b in PENDING
            if not any(_within(x, a) and _within(y, b) for _, _, x, y in there)}
    assert not gone, f"gone, delete from PENDING: {sorted(gone)}"


def test_an_upward_import_and_a_circle_are_found():
    assert points_up("files", "sender") and not points_up("sender", "files")
    assert points_up("web", "cli") and not points_up("cli", "web")
    assert package_circles({("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")}) == [["a", "b", "c", "a"]]
    modules = {"vykhukhol.files", "vykhukhol.files.runlog"}
    node = ast.parse("from ..files import runlog, append_line").body[0]
    assert _targets("vykhukhol.watch.pace", False, node, modules) == modules
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\ndef f():\n    import b\n"
    assert [n.names[0].name for n in _imports(ast.parse(source)) if isinstance(n, ast.Import)] == ["b"]
