"""The rules of the house (docs/architecture.md), checked on the source with `ast`:
no import cycles, no library module importing the CLI, no private name imported across modules,
and no module past a smoke-detector size; and, at the level of rooms (top-level modules and
subpackages, tests/rooms.py), the layers: no room imports a room that reaches back to it."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import zkjepsen

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for rooms.py
from rooms import Import, RoomGraph, room_graph  # noqa: E402

ROOT = Path(zkjepsen.__file__).resolve().parent
# A smoke detector, not a target (issue 49): a module past this has likely grown a second idea;
# split it where its concepts divide, or raise this with a reason. At 420 it was a target: at
# least 11 commits cut a module where the count said, not where the idea divides.
MAX_LINES = 800


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(path: Path, mods: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(imported module, names imported from it) for every zkjepsen import, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("zkjepsen")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([node.module] if node.module else [])
                )
            if not base.startswith("zkjepsen"):
                continue
            names = [a.name for a in node.names]
            # `from pkg import submodule` imports the submodule
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in mods]
            plain = [n for n in names if f"{base}.{n}" not in mods]
            out += [(s, []) for s in subs]
            if plain or not subs:
                out.append((base, plain))
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: {t for t, _ in imports(p, mods) if t in mods and t != m} for m, p in mods.items()}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(g.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n) :] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_only_the_cli_imports_the_cli():
    bad = [
        f"{m} imports {t}"
        for m, ts in graph().items()
        if not m.startswith("zkjepsen.cli")
        for t in ts
        if t == "zkjepsen.cli" or t.startswith("zkjepsen.cli.")
    ]
    assert not bad, bad


def test_no_private_names_across_modules():
    mods = modules()
    bad = []
    for m, p in mods.items():
        for target, names in imports(p, mods):
            if target == m:
                continue
            bad += [
                f"{m}: from {target} import {n}"
                for n in names
                if n.startswith("_") and not n.startswith("__")
            ]
    assert not bad, bad


def test_modules_are_small():
    big = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, big


# The rooms' layers (issue 24): no mutual pair, no room-level cycle. A new arrow that points up
# (or sideways into a room that reaches back) fails here. The counts of rooms and arrows were
# a ratchet until issue 49: they protected nothing the two rules below do not, and at their
# ceiling they pushed code into the wrong room to save an arrow. They are printed, not capped.
ALLOWED_MUTUAL: set[tuple[str, str]] = set()
ALLOWED_IN_CYCLES: set[str] = set()


def test_rooms_import_downward_only():
    g = room_graph(ROOT)
    print(f"{len(g.rooms())} rooms, {len(g.arrows)} arrows")
    evidence = {
        p: [str(i) for i in g.arrows[p] + g.arrows[p[::-1]]]
        for p in g.mutual_pairs()
        if p not in ALLOWED_MUTUAL
    }
    assert not evidence, f"new mutual pairs: {evidence}"
    in_cycles = {room for scc in g.cycles() for room in scc}
    assert in_cycles <= ALLOWED_IN_CYCLES, f"room-level cycles: {g.cycles()}"


def test_the_room_check_finds_a_cycle_and_a_mutual_pair():
    imps = [
        Import("zkjepsen.a.x", "zkjepsen.b.y", 1, "module"),
        Import("zkjepsen.b.y", "zkjepsen.c", 2, "function"),
        Import("zkjepsen.c", "zkjepsen.a.x", 3, "module"),
        Import("zkjepsen.c", "zkjepsen.b", 4, "module"),
    ]
    g = RoomGraph(
        "zkjepsen", {m: Path() for m in ("zkjepsen.a.x", "zkjepsen.b.y", "zkjepsen.c")}, imps
    )
    assert g.cycles() == [["a", "b", "c"]]
    assert g.mutual_pairs() == [("b", "c")]


# The store owns every file name of a run: code elsewhere asks a `store.RunDir` for a path.
# (Docstrings and comments may name the files; string constants in code may not.)
RUN_FILE_NAMES = re.compile(
    r"(history|nemesis)\.jsonl|schedule\.json|test\.json|results?\.json|run\.log"
    r"|timeline\.html|latency\.png|rate\.png"
)


def spelled_run_file_names(tree: ast.AST) -> list[tuple[int, str]]:
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docs
        and RUN_FILE_NAMES.search(n.value)
    ]


def test_only_the_store_spells_a_run_file_name():
    bad = {
        f"{m}:{line}": text
        for m, p in modules().items()
        if not (m == "zkjepsen.store" or m.startswith("zkjepsen.store."))
        for line, text in spelled_run_file_names(ast.parse(p.read_text()))
    }
    assert not bad, bad


def test_the_file_name_check_sees_code_but_not_docstrings():
    tree = ast.parse(
        '"""history.jsonl"""\ndef f():\n    """test.json"""\n    return "x/rate.png"\n'
    )
    assert spelled_run_file_names(tree) == [(4, "x/rate.png")]


def test_no_two_test_modules_share_a_name():
    """The suite's folders are not packages (no __init__.py), so pytest imports each test module
    by its file name alone: a second tests/**/test_x.py beside tests/unit/test_x.py is an
    'import file mismatch' error for whichever is collected second (a fresh clone's suite met
    it once a tests/integration/test_hunt.py joined tests/unit/test_hunt.py)."""
    tests = Path(__file__).resolve().parents[1]
    by_name: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        by_name.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert {n: p for n, p in by_name.items() if len(p) > 1} == {}


def test_no_property_test_fails_on_time():
    """Hypothesis's per-example deadline and too_slow health check are timed assertions; the
    suite's profile (tests/conftest.py) turns both off, and no test turns a deadline back on."""
    from hypothesis import HealthCheck, settings

    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
    tests = Path(__file__).resolve().parents[1]
    timed = [
        f"{p.relative_to(tests)}:{n}"
        for p in tests.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bdeadline\s*=\s*(?!None\b)(\d|timedelta)", line)
    ]
    assert timed == [], timed
