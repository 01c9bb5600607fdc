"""Room-level import graph of a `zkjepsen` source tree, computed with `ast` (no import is run).

A room is a top-level module or subpackage of the package directory (`runner.py` -> `runner`,
`harness/ensemble.py` -> `harness`, `run/harness/inside.py` -> `run`). The package's own
`__init__.py` is the room `__init__`; it is a room only if it imports another room (today it
holds `__version__` only). `import zkjepsen` to read `__file__`/`__version__` is evidence, listed
under `root_refs`, but not an arrow (as in issue 24's count: 18 rooms, 91 arrows on 2cf9faa).
An arrow is a distinct room -> room import, module-level and function-level (any depth) alike;
imports inside `if TYPE_CHECKING:` are included too (they are still a dependency of the design)
and marked as such in the evidence.

String references of the registries (`"zkjepsen.recipes.kazoo_lock:KazooLock"`, literals of the
form `zkjepsen.a.b` or `zkjepsen.a.b:Name` that name a module of the tree) are lazy imports that
`ast` cannot see as imports; they are listed separately (`--strings` counts them as arrows too).

Usable as a script:
    python room_graph.py SRC/zkjepsen [--strings] [--evidence] [--json]
and as a library (e.g. from tests/unit/test_layout.py):
    g = room_graph(Path(zkjepsen.__file__).parent)
    assert not g.mutual_pairs() and not g.cycles()
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT_ROOM = "__init__"
_STRING_REF = re.compile(r"^(zkjepsen(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?::[A-Za-z_][A-Za-z0-9_.]*)?$")


@dataclass(frozen=True)
class Import:
    """One import statement's edge: where it is, what it names, and how it is written."""

    source: str  # importing module, dotted
    target: str  # imported module (the longest module prefix that exists), dotted
    line: int
    level: str  # "module", "function", "type-checking" or "string"

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target} [{self.level}]"


@dataclass
class RoomGraph:
    package: str
    modules: dict[str, Path]
    imports: list[Import]
    count_strings: bool = False
    arrows: dict[tuple[str, str], list[Import]] = field(default_factory=dict)
    root_refs: list[Import] = field(default_factory=list)

    def __post_init__(self) -> None:
        for imp in self.imports:
            if imp.level == "string" and not self.count_strings:
                continue
            a, b = self.room(imp.source), self.room(imp.target)
            if b == ROOT_ROOM:
                self.root_refs.append(imp)
                continue
            if a != b:
                self.arrows.setdefault((a, b), []).append(imp)

    def room(self, module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ROOT_ROOM

    def rooms(self) -> list[str]:
        rooms = {self.room(m) for m in self.modules}
        if ROOT_ROOM in rooms and not any(a == ROOT_ROOM for a, _ in self.arrows):
            rooms.discard(ROOT_ROOM)
        return sorted(rooms)

    def edges(self) -> dict[str, set[str]]:
        g: dict[str, set[str]] = {r: set() for r in self.rooms()}
        for a, b in self.arrows:
            g.setdefault(a, set()).add(b)
            g.setdefault(b, set())
        return g

    def mutual_pairs(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a, b in self.arrows if a < b and (b, a) in self.arrows)

    def sccs(self) -> list[list[str]]:
        """Strongly connected components (Tarjan), largest first; singletons included."""
        g = self.edges()
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        out: list[list[str]] = []

        def visit(v: str) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            for w in sorted(g[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))

        sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
        for v in sorted(g):
            if v not in index:
                visit(v)
        return sorted(out, key=lambda c: (-len(c), c))

    def cycles(self) -> list[list[str]]:
        """The components that make a room-level cycle (size > 1)."""
        return [c for c in self.sccs() if len(c) > 1]

    def layers(self) -> dict[str, int]:
        """Longest-path depth of each room in the condensed graph (0 = imports no room)."""
        g = self.edges()
        comp_of = {r: i for i, c in enumerate(self.sccs()) for r in c}
        memo: dict[int, int] = {}

        def depth(ci: int, seen: frozenset[int]) -> int:
            if ci in memo:
                return memo[ci]
            members = [r for r, c in comp_of.items() if c == ci]
            below = {comp_of[t] for r in members for t in g[r]} - {ci}
            d = 0 if not below else 1 + max(depth(b, seen | {ci}) for b in below if b not in seen)
            memo[ci] = d
            return d

        return {r: depth(comp_of[r], frozenset()) for r in g}

    def summary(self) -> dict:
        function_level = sum(1 for i in self.imports if i.level == "function")
        internal = sum(1 for i in self.imports if i.level != "string")
        return {
            "rooms": len(self.rooms()),
            "arrows": len(self.arrows),
            "mutual_pairs": [list(p) for p in self.mutual_pairs()],
            "cycles": self.cycles(),
            "internal_imports": internal,
            "function_level_imports": function_level,
            "string_refs": sum(1 for i in self.imports if i.level == "string"),
        }


def module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `target` that is a module of the tree."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    def __init__(self, me: str, is_pkg: bool, package: str, modules: dict[str, Path]):
        self.me, self.package, self.modules = me, package, modules
        self.pkg_of_me = me if is_pkg else me.rpartition(".")[0]
        self.depth = 0  # > 0 inside a function
        self.tc = 0  # > 0 inside `if TYPE_CHECKING:`
        self.out: list[Import] = []

    def _level(self) -> str:
        return "type-checking" if self.tc else ("function" if self.depth else "module")

    def _add(self, target: str, line: int, level: str | None = None) -> None:
        found = _resolve(target, self.modules)
        if found and found != self.me:
            self.out.append(Import(self.me, found, line, level or self._level()))

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.tc += 1
            for n in node.body:
                self.visit(n)
            self.tc -= 1
            for n in node.orelse:
                self.visit(n)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name.split(".")[0] == self.package:
                self._add(a.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.pkg_of_me.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        if base.split(".")[0] != self.package:
            return
        for a in node.names:
            sub = f"{base}.{a.name}"
            self._add(sub if sub in self.modules else base, node.lineno)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            m = _STRING_REF.match(node.value)
            if m and m.group(1).split(".")[0] == self.package:
                found = _resolve(m.group(1), self.modules)
                # only references that name a module (not labels such as "zkjepsen.run")
                if found and found != self.package and found == m.group(1):
                    self._add(found, node.lineno, "string")


def collect(root: Path) -> tuple[dict[str, Path], list[Import]]:
    root = root.resolve()
    package = root.name
    modules = {module_name(root, p): p for p in sorted(root.rglob("*.py"))}
    imports: list[Import] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        c = _Collector(name, path.name == "__init__.py", package, modules)
        c.visit(tree)
        imports += dict.fromkeys(c.out)  # one per (module, target, line, kind), in order
    return modules, imports


def room_graph(root: Path, count_strings: bool = False) -> RoomGraph:
    modules, imports = collect(Path(root))
    return RoomGraph(Path(root).resolve().name, modules, imports, count_strings)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="the package directory, e.g. src/zkjepsen")
    ap.add_argument("--strings", action="store_true", help="count registry strings as arrows")
    ap.add_argument("--evidence", action="store_true", help="list the imports behind each arrow")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not (args.root / "__init__.py").is_file():
        print(f"{args.root} is not a package directory; pass e.g. src/zkjepsen", file=sys.stderr)
        return 254
    g = room_graph(args.root, args.strings)
    if args.json:
        data = g.summary() | {
            "arrows_list": {
                f"{a} -> {b}": [str(i) for i in v] for (a, b), v in sorted(g.arrows.items())
            },
            "sccs": g.sccs(),
            "layers": g.layers(),
        }
        print(json.dumps(data, indent=1))
        return 0
    s = g.summary()
    print(
        f"rooms {s['rooms']}  arrows {s['arrows']}  mutual pairs {len(s['mutual_pairs'])}  "
        f"internal imports {s['internal_imports']} ({s['function_level_imports']} in functions)  "
        f"registry strings {s['string_refs']}{' (counted)' if args.strings else ''}"
    )
    print("rooms:", " ".join(g.rooms()))
    if g.root_refs:
        print("root refs (not arrows):", ", ".join(f"{i.source}:{i.line}" for i in g.root_refs))
    print("mutual:", ", ".join(f"{a}<->{b}" for a, b in g.mutual_pairs()) or "none")
    for c in g.cycles():
        print(f"cycle (SCC of {len(c)}):", " ".join(c))
    if not g.cycles():
        print("no room-level cycle")
    layers = g.layers()
    print(
        "depth:",
        ", ".join(f"{r}={layers[r]}" for r in sorted(layers, key=lambda r: (layers[r], r))),
    )
    for (a, b), v in sorted(g.arrows.items()):
        kinds = {
            k: sum(1 for i in v if i.level == k)
            for k in ("module", "function", "type-checking", "string")
        }
        tag = " ".join(f"{k}={n}" for k, n in kinds.items() if n)
        mark = "  <-> MUTUAL" if (b, a) in g.arrows else ""
        print(f"  {a} -> {b}  ({tag}){mark}")
        if args.evidence:
            for i in v:
                print(f"      {i}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
