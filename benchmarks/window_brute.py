"""A brute force on a window around crash_cliff.py's planted stale read: is the read explained
by anything? Written from an etcd register's semantics, not from the checker's code. Prints
its verdicts, asserts nothing (issue 39).

A long history with crashed ops is out of any brute force's reach, but a window [a, b] of it
decides a refutation: were the history linearizable, so would be the window, read as follows.
b is the read's return; a is some time before it.
- Ops that returned before a, and ops called after b, are left out.
- Ops called before a (crashed ones, and those still running at a) may be placed anywhere in
  the window, any number of times ("free": a crashed write called long ago may land at any
  moment); reads among them are left out. The register holds at a nothing yet, or a value
  that an op called before a writes (any such value: the last op placed before the window
  was called before a, and so was every op before it).
- Ops called in the window that crashed or were still running at b may happen once, or not.
- The others (called at or after a, returned by b) happen, in an order that respects real
  time.
Take a linearization of the history, keep from it the ops after the last one that returned
before a, up to the last one that returned by b: that sequence is such an order (ops called
after b cannot come before an op that returned by b; ops that returned before a come before
every op called after a). So "no order of the window" means the history is not linearizable;
each loosening only makes the window easier to linearize. Without the planted read the
window should come out linearizable (the generated history is).

    .venv/bin/python benchmarks/window_brute.py --case small-stale-5x10k --seeds 5
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crash_cliff  # noqa: E402

from zkjepsen.history import History  # noqa: E402

NO = object()  # an op that cannot take effect in that state


def calls(h: History) -> list[tuple[str, Any, str, Any, Any, Any, Any]]:
    """(f, invoke value, status, completion value, start, end or None, process) per call."""
    pending: dict[Any, Any] = {}
    out = []
    for op in h.ops:
        if op.type == "invoke":
            pending[op.process] = op
            continue
        inv = pending.pop(op.process)
        end = None if op.type == "info" else op.time
        out.append((inv.f, inv.value, op.type, op.value, inv.time, end, op.process))
    out.extend((o.f, o.value, "info", None, o.time, None, o.process) for o in pending.values())
    return out


def step(f: str, arg: Any, status: str, got: Any, s: Any) -> Any:
    """The register after the op, or NO."""
    if f == "read":
        return s if s == got else NO
    if f == "write":
        return arg
    old, new = arg
    if status == "fail":
        return s if s != old else NO  # etcd: a failed cas says the register did not hold old
    return new if s == old else NO


def window_ops(
    cs: list, r: int, a: Any, drop_read: bool
) -> tuple[set[tuple[str, Any]], list[tuple[Any, ...]]]:
    """The window [a, the read's return] (module docstring): its free ops as (f, arg), and its
    ops as (f, arg, status, got, start, end or None, must)."""
    b = cs[r][5]
    free, ops = set(), []
    for k, (f, arg, status, got, start, end, _) in enumerate(cs):
        if (end is not None and end < a) or start > b or (drop_read and k == r):
            continue
        if f == "read" and status != "ok":
            continue  # a crashed read says nothing
        if start < a:
            if f != "read" and status != "fail":
                free.add((f, tuple(arg) if f == "cas" else arg))
            continue
        must = status != "info" and end is not None and end <= b
        ops.append((f, arg, status, got, start, end if must else None, must))
    return free, ops


def closure(free: set[tuple[str, Any]]) -> Callable[[Any], frozenset]:
    """The states the free ops reach from a state, any of them any number of times."""

    @cache
    def reach(s: Any) -> frozenset:
        seen, todo = {s}, [s]
        while todo:
            x = todo.pop()
            for f, arg in free:
                y = step(f, list(arg) if f == "cas" else arg, "ok", None, x)
                if y is not NO and y not in seen:
                    seen.add(y)
                    todo.append(y)
        return frozenset(seen)

    return reach


def window(
    cs: list, r: int, a: Any, domain: list[Any], drop_read: bool, reduced: bool = False
) -> tuple[bool, int, int]:
    """Whether the window [a, the read's return] has an order (module docstring); the
    number of its ops, and of the distinct free ones. `reduced`: the same answer by
    `_reduced` (fewer configurations), else by the plain search over every order."""
    free, ops = window_ops(cs, r, a, drop_read)
    before = {_makes((f, arg, status)) for f, arg, status, *_, start, _, _ in cs if start < a}
    domain = [v for v in domain if v in before]  # what the register may hold at a
    search = _reduced if reduced else _plain
    sys.setrecursionlimit(10_000)
    return search(ops, free, domain), len(ops), len(free)


def _plain(ops: list[tuple[Any, ...]], free: set[tuple[str, Any]], domain: list) -> bool:
    """Every order: an op is placed when no must op left unplaced returned before its call."""
    reach = closure(free)
    musts = frozenset(i for i, o in enumerate(ops) if o[6])
    failed: set = set()

    def go(placed: frozenset, s: Any) -> bool:
        if musts <= placed:
            return True
        if (placed, s) in failed:
            return False
        first_end = min((ops[m][5] for m in musts - placed), default=None)
        for s2 in reach(s):
            for i, (f, arg, status, got, start, _, _) in enumerate(ops):
                if i in placed or (first_end is not None and first_end < start):
                    continue
                ns = step(f, arg, status, got, s2)
                if ns is not NO and go(placed | {i}, ns):
                    return True
        failed.add((placed, s))
        return False

    return any(go(frozenset(), s) for s in [None, *domain])


def _changes(op: tuple[Any, ...]) -> bool:
    """Whether the op can change the register (a read or a failed cas never does)."""
    return op[0] != "read" and op[2] != "fail"


def _needs(op: tuple[Any, ...]) -> Any:
    """The value the register must hold for a completed op to be placed (a read's, an ok
    cas's old value), else NO."""
    if op[0] == "read":
        return op[3]
    return op[1][0] if op[0] == "cas" and op[2] == "ok" else NO


def _makes(op: tuple[Any, ...]) -> Any:
    """The value an op may leave in the register (a write's, a cas's new one), else NO."""
    if op[0] == "write":
        return op[1]
    return op[1][1] if op[0] == "cas" and op[2] != "fail" else NO


def _reduced(ops: list[tuple[Any, ...]], free: set[tuple[str, Any]], domain: list) -> bool:
    """`_plain`'s answer over fewer configurations, by four reductions of the orders, each
    keeping an order wherever there was one (why, below); held to `_plain` by
    tests/unit/test_window_brute.py.
    1. Optional ops that cannot change the register (a read running at the window's end, a
       failed cas) are left out: placing one changes no state and no other op's constraint.
    2. Optional ops of the same (f, arg, status) are one class: a configuration is its placed
       musts, the COUNT placed of each class, and the state. The one placed next is the
       class's earliest call: it may be placed whenever a later one may, so an order that
       places a later one has a twin that places the earlier one there.
    3. A must op that leaves the state as it is (a read of the current value, a failed cas
       whose old value is not it), once it may be placed, is placed at once, without a
       branch: moving it earlier in an order keeps every state the others see, and it only
       ever relaxes the real-time constraints of the ops after it.
    4. A configuration is dead when a must op left needs a value (a read's, an ok cas's old
       one) that is not the state and that no op left, optional op left or free op can
       write: the register holds a value only after an op wrote it.
    """
    reach = closure(free)
    free_makes = {_makes((f, list(arg) if f == "cas" else arg, "ok")) for f, arg in free}
    musts = [i for i, o in enumerate(ops) if o[6]]
    classes: dict[tuple, list[tuple[Any, ...]]] = {}
    for o in ops:
        if not o[6] and _changes(o):
            key = (o[0], tuple(o[1]) if o[0] == "cas" else o[1], o[2])
            classes.setdefault(key, []).append(o)
    members = [sorted(v, key=lambda o: o[4]) for v in classes.values()]
    ends = {m: ops[m][5] for m in musts}
    failed: set = set()

    def _can_make(left: frozenset, counts: tuple[int, ...]) -> set[Any]:
        made = free_makes | {_makes(ops[m]) for m in left}
        return made | {_makes(g[0]) for c, g in enumerate(members) if counts[c] < len(g)}

    def go(left: frozenset, counts: tuple[int, ...], s: Any) -> bool:
        first_end = min((ends[m] for m in left), default=None)
        ready = [m for m in left if first_end is None or ops[m][4] <= first_end]
        for m in ready:
            f, arg, status, got = ops[m][:4]
            if not _changes(ops[m]) and step(f, arg, status, got, s) is s:
                return go(left - {m}, counts, s)  # 3.
        if not left:
            return True
        if (left, counts, s) in failed:
            return False
        needed = {_needs(ops[m]) for m in left} - {s, NO}
        if needed and not needed <= _can_make(left, counts):  # 4.
            failed.add((left, counts, s))
            return False
        for s2 in reach(s):
            for m in ready:
                ns = step(*ops[m][:4], s2)
                if ns is not NO and go(left - {m}, counts, ns):
                    return True
            for c, group in enumerate(members):
                if counts[c] == len(group):
                    continue
                o = group[counts[c]]
                if first_end is not None and first_end < o[4]:
                    continue
                ns = step(*o[:4], s2)
                if ns is not NO and go(left, (*counts[:c], counts[c] + 1, *counts[c + 1 :]), ns):
                    return True
        failed.add((left, counts, s))
        return False

    start = (frozenset(musts), (0,) * len(members))
    return any(go(*start, s) for s in [None, *domain])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", help="crash_cliff's small-stale cases")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument(
        "--before", type=int, default=40, help="a: this long before the read's call (then 2x, 3x)"
    )
    args = ap.parse_args()
    names = args.case or [c[0] for c in crash_cliff.CASES if c[0].startswith("small-stale")]
    for name in names:
        _, clients, n, values, _ = next(c for c in crash_cliff.CASES if c[0] == name)
        for seed in range(args.seed, args.seed + args.seeds):
            h, planted = crash_cliff.history(n, clients, values, True, seed=seed)
            cs = calls(h)
            done = h.ops[planted]  # the read's completion: its call
            r = next(k for k, c in enumerate(cs) if c[6] == done.process and c[5] == done.time)
            domain = list(range(values))
            for before in (args.before, 2 * args.before, 3 * args.before):
                a = cs[r][4] - before  # wider and wider until the overwrite is in it
                with_read, size, free = window(cs, r, a, domain, False)
                if not with_read:
                    break
            without = window(cs, r, a, domain, True)[0]
            print(
                f"{name} seed {seed}: window [{a}, {cs[r][5]}] ({size} ops, {free} free ones "
                f"called before it), the read of {cs[r][3]!r} by process {cs[r][6]}: "
                f"linearizable with the read: {with_read}, without it: {without}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
