"""A brute force on a window around crash_cliff.py's planted stale read: is the read explained
by anything? Written from an etcd register's semantics, not from the checker's code. Prints
its verdicts, asserts nothing (issue 39).

A long history with crashed ops is out of any brute force's reach, but a window [a, b] of it
decides a refutation: were the history linearizable, so would be the window, read as follows.
b is the read's return; a is some time before it.
- Ops that returned before a, and ops called after b, are left out.
- Ops called before a (crashed ones, and those still running at a) may be placed anywhere in
  the window, any number of times ("free": a crashed write called long ago may land at any
  moment); reads among them are left out. The register holds any value at a.
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


def window(cs: list, r: int, a: Any, domain: list[Any], drop_read: bool) -> tuple[bool, int, int]:
    """Whether the window [a, the read's return] has an order (module docstring); the
    number of its ops, and of the distinct free ones."""
    b = cs[r][5]
    free, ops = set(), []  # ops: (f, arg, status, got, start, end or None, must)
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
    musts = frozenset(i for i, o in enumerate(ops) if o[6])

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

    sys.setrecursionlimit(10_000)
    return any(go(frozenset(), s) for s in [None, *domain]), len(ops), len(free)


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
