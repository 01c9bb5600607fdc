"""Imports inside functions, outside cli/: each one says why it is
not at the top (a heavy or optional library, the start-up of `zkjepsen check`...) in a comment
on its line or the line above. cli/ imports each command's modules when that command runs, on
purpose (cli/__init__.py), and is not counted."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "zkjepsen"
# issue 32 brought these from about 215 to 60; issue 49 dropped the cap of 62: a count made
# modules import where the counter said rather than where the cost is. What stays is the rule
# that protects something: each lazy import names its reason (below), and the start-up time of
# `list` and `--help` is measured (benchmarks/startup.py) and its imports tested
# (test_startup_imports.py).


def imports_in_functions(source: str) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement inside a function body, nested functions and methods included."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                found.append(child)
            walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    walk(ast.parse(source), False)
    return found


def counted() -> dict[str, list[tuple[int, str]]]:
    """module path -> (line, source line) of each import inside a function, cli/ left out."""
    out: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "cli":
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in imports_in_functions(text):
            out.setdefault(str(rel), []).append((node.lineno, lines[node.lineno - 1]))
    return out


def test_the_counter_sees_nested_functions_and_methods_not_module_level():
    src = (
        "import os\n"
        "try:\n    import json\nexcept ImportError:\n    json = None\n"
        "def f():\n    import a\n    def g():\n        from b import c\n"
        "class K:\n    def m(self):\n        if x:\n            import d\n"
    )
    names = [
        n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
        for n in imports_in_functions(src)
    ]
    assert names == ["a", "b", "d"]


def test_each_import_left_inside_a_function_says_why():
    silent = []
    for rel, hits in counted().items():
        lines = (PACKAGE / rel).read_text().splitlines()
        for lineno, line in hits:
            above = lines[lineno - 2].strip() if lineno >= 2 else ""
            # a comment on it, or on the line above it (the first of a group of imports
            # carries it for the group)
            group_start = lineno
            while group_start >= 2 and lines[group_start - 2].strip().startswith(
                ("import ", "from ")
            ):
                group_start -= 1
            first_above = lines[group_start - 2].strip() if group_start >= 2 else ""
            if "#" not in line and not above.startswith("#") and not first_above.startswith("#"):
                silent.append(f"{rel}:{lineno}: {line.strip()}")
    assert not silent, "\n".join(silent)
