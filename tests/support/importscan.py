"""How the import tests read the package: every module under lib/vykhukhol,
and every import statement in it that can run (at the top of a module or
inside a function), read with :mod:`ast` so that nothing is imported."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "lib"
PACKAGE = "vykhukhol"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((LIB / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(LIB).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: skips the body of ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports_of(child)
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    yield from imports(node)
