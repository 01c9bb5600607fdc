"""No test asserts that something took less than some time: on a busy machine (CI's, a
contributor's laptop) such an assertion fails a correct change. Tests assert behaviour (what
happened, in which order, what the records say); how long it took is a benchmark's figure
(benchmarks/ prints it). This scans tests/ with `ast` for an assertion that bounds a measured
time from above:

- an expression that reads a clock (time.monotonic(), perf_counter(), time.time(), ...),
- a name assigned from one (in the same function, or returned by a helper of the same file),
  or named like one (wall, elapsed, took),
- a measured time from a run's records: a key ending in `_ns` (history nanoseconds) or one of
  MEASURED_KEYS (e.g. `after_main_start_s`).

A lower bound (`elapsed >= timeout`) stays allowed: load only makes things slower, so it cannot
fail a correct change. A bounded wait (a loop or `_wait(..., timeout)`) is not an assertion."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = {
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "time",
    "time_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
}
TIME_NAMES = {"wall", "elapsed", "took"}
# Durations a run's records hold (measured, so load lengthens them).
MEASURED_KEYS = {"after_main_start_s", "up_seconds", "elapsed_s", "wall_s"}
WRAPPERS = {"round", "abs", "float", "int"}
INSTANT, DURATION = "instant", "duration"


class Kinds:
    """What the names of one function hold: an instant (a clock reading, a record's `*_ns`) or
    a duration (a difference of instants); and the file's helpers that return a duration."""

    def __init__(self, helpers: dict[str, object]) -> None:
        self.names: dict[str, str] = {}
        self.helpers = helpers

    def of(self, e: ast.AST) -> str | None:
        if isinstance(e, ast.Call):
            f = e.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in CLOCKS and not e.args:
                return INSTANT
            if name in WRAPPERS and e.args:
                return self.of(e.args[0])
            return DURATION if self.helpers.get(name) is True else None
        if isinstance(e, ast.Name):
            return DURATION if e.id in TIME_NAMES else self.names.get(e.id)
        if isinstance(e, ast.Attribute):
            return DURATION if e.attr in MEASURED_KEYS else None
        if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant):
            key = e.slice.value
            if isinstance(key, str) and key.endswith("_ns"):
                return INSTANT
            return DURATION if key in MEASURED_KEYS else None
        if isinstance(e, ast.IfExp):
            return self.of(e.body) or self.of(e.orelse)
        if isinstance(e, ast.BinOp):
            left, right = self.of(e.left), self.of(e.right)
            if isinstance(e.op, ast.Sub) and right == INSTANT:
                return DURATION  # later - earlier
            if isinstance(e.op, ast.Add | ast.Sub) and INSTANT in (left, right):
                return INSTANT  # an instant moved by a constant
            return DURATION if DURATION in (left, right) else None
        return None

    def learn(self, fn: ast.AST) -> None:
        """Kinds of the names assigned in `fn`, to a fixed point (t = now(); d = now() - t)."""
        assigns = [n for n in ast.walk(fn) if isinstance(n, ast.Assign | ast.AnnAssign)]
        for _ in range(len(assigns) + 1):
            before = dict(self.names)
            for a in assigns:
                if a.value is not None:
                    for t in a.targets if isinstance(a, ast.Assign) else [a.target]:
                        self._assign(t, a.value)
            if before == self.names:
                return

    def _assign(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            kind = self.of(value)
            if kind:
                self.names[target.id] = kind
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            for t, v in zip(target.elts, value.elts, strict=False):
                self._assign(t, v)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Call):
            f = value.func
            positions = self.helpers.get(getattr(f, "id", None) or getattr(f, "attr", None))
            if isinstance(positions, set):  # a helper returning a tuple with a duration in it
                for i, t in enumerate(target.elts):
                    if i in positions and isinstance(t, ast.Name):
                        self.names[t.id] = DURATION


def _helpers(tree: ast.Module) -> dict[str, object]:
    """Functions of the file that return a duration: name -> True, or the set of the returned
    tuple's positions that hold one."""
    out: dict[str, object] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        kinds = Kinds({})
        kinds.learn(fn)
        for r in ast.walk(fn):
            if not isinstance(r, ast.Return) or r.value is None:
                continue
            if isinstance(r.value, ast.Tuple):
                pos = {i for i, e in enumerate(r.value.elts) if kinds.of(e) == DURATION}
                if pos:
                    out[fn.name] = pos
            elif kinds.of(r.value) == DURATION:
                out[fn.name] = True
    return out


def _upper_bounded(cmp: ast.Compare) -> list[ast.AST]:
    """The operands a comparison bounds from above (x in `x < y`, `y > x`)."""
    operands = [cmp.left, *cmp.comparators]
    out = []
    for i, op in enumerate(cmp.ops):
        if isinstance(op, ast.Lt | ast.LtE):
            out.append(operands[i])
        elif isinstance(op, ast.Gt | ast.GtE):
            out.append(operands[i + 1])
    return out


def timed_asserts(source: str) -> list[int]:
    """Line numbers of the assertions in `source` that bound a measured duration from above."""
    tree = ast.parse(source)
    helpers = _helpers(tree)
    found = set()
    for fn in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]:
        kinds = Kinds(helpers)
        if fn is not tree:
            kinds.learn(fn)
        for stmt in (n for s in fn.body for n in ast.walk(s)):
            if not isinstance(stmt, ast.Assert):
                continue
            for cmp in (n for n in ast.walk(stmt.test) if isinstance(n, ast.Compare)):
                if any(kinds.of(x) == DURATION for x in _upper_bounded(cmp)):
                    found.add(stmt.lineno)
    return sorted(found)


def test_no_test_asserts_a_measured_time_from_above():
    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        for line in timed_asserts(path.read_text()):
            bad.append(f"{path.relative_to(TESTS.parent)}:{line}")
    assert bad == [], f"timed assertions (assert the behaviour; time it in benchmarks/): {bad}"


def test_the_scan_finds_each_shape_of_a_timed_assertion():
    shapes = {
        "clock": "def t():\n    t0 = time.monotonic()\n    f()\n"
        "    assert time.monotonic() - t0 < 3\n",
        "name": "def t():\n    s = time.perf_counter()\n    d = time.perf_counter() - s\n"
        "    assert d <= 1.0\n",
        "chained": "def t(a, b):\n    assert -1 < b['start_ns'] - a['start_ns'] < 3e9\n",
        "record": "def t(r):\n    assert 25 > r['after_main_start_s']\n",
        "named": "def t():\n    wall = run()\n    assert wall < 60\n",
        "helper": "def h():\n    t = time.monotonic()\n    return 1, time.monotonic() - t\n"
        "def t():\n    recs, x = h()\n    assert recs and x < 6.5\n",
    }
    for name, src in shapes.items():
        assert timed_asserts(src), name


def test_a_lower_bound_and_a_bounded_wait_are_allowed():
    ok = (
        "def t():\n    t0 = time.monotonic()\n    zk.get('/')\n"
        "    assert time.monotonic() - t0 >= 0.95\n"
        "    while time.monotonic() - t0 < 10:\n        pass\n"
        "    assert _wait(lambda: done, 30)\n"
    )
    assert timed_asserts(ok) == []
