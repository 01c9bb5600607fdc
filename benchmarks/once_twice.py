"""A crashed write that explains a stale read once but not twice (issue 54), planted into
crash_cliff.py's small-domain etcd CAS-register histories (values 0..4, 10 % crashed ops):
what `zkjepsen check` decides, by which path, in how much CPU. Prints figures, asserts nothing.

The plant, in a stretch where no op of the generated history takes effect (`_gap`), just
before a completed blind write j of the generated history:
- a crashed `write 9` (9 is written by nothing else), called LATE time units before the read;
- `valid`: a read r1 returning 9 that returned before j was called (and, with `--twin`, a
  second read of 9 overlapping r1): 9 lands just before r1 and j overwrites it, so the
  history is linearizable (the rest is generated valid);
- `invalid`: the same, and a read r2 returning 9 called after j returned. The crashed write
  can be linearized at most once: before r1, which returned before j was called, so it is not
  the last write before r2, and nothing else wrote 9. Not linearizable.
`--brute` confirms each verdict by window_brute.py's brute force on the window from the
crashed write's call to the last planted read's return (needs a short `--late`; its memo
stays in this process, so the peak RSS of the checks forked after it counts it too): its
reduced search, checked against the plain one by tests/unit/test_window_brute.py (`--plain`:
the plain one, out of reach on 20x1k's windows).

    .venv/bin/python benchmarks/once_twice.py --case 5x10k --case 20x1k --seeds 20
    .venv/bin/python benchmarks/once_twice.py --case 5x10k --seeds 5 --late 40 --brute
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cliff_seeds  # noqa: E402
import crash_cliff  # noqa: E402
import window_brute  # noqa: E402

from zkjepsen.history import History, Op  # noqa: E402

CASES = {"5x10k": (5, 10_000), "20x1k": (20, 1_000), "5x100k": (5, 100_000)}
VALUES = 5  # the generated ops' domain: 0..4
PLANTED = 9  # the crashed write's value: nothing else writes it
LATE = 3000  # time units from the crashed write's call to the first read of its value


def history(
    n: int, clients: int, seed: int, invalid: bool, late: int = LATE, twin: bool = False
) -> tuple[History, list[int]]:
    """The history and the indices (into its ops) of the planted ops' invocations: the crashed
    write, then the reads of 9 in time order."""
    rng = random.Random(seed)
    calls = crash_cliff._calls(n, clients, rng, 0.1, crash_cliff.CRASH_SHARE)
    out = _values(calls, rng)
    late = min(late, int(calls[-1][3] / 4))  # (20 x 1 k ops span ~1300 time units)
    j, a, d = _gap(calls, out, rng, late)
    # The planted ops: (client, start, end, f, invoke value, completion value, type)
    extra = [(clients, a - late, a - late + 30, "write", PLANTED, PLANTED, "info")]
    extra.append((clients + 1, a, a + d, "read", None, PLANTED, "ok"))
    if twin:
        extra.append((clients + 2, a, a + d, "read", None, PLANTED, "ok"))
    if invalid:
        end = calls[j][4]
        extra.append((clients + 3, end + 0.5, end + 1, "read", None, PLANTED, "ok"))
    return _events(calls, out, clients, extra)


def _values(calls: list[list], rng: random.Random) -> list[list]:
    """Per call [f, invoke value, completion value, type]: crash_cliff.history's register,
    values 0..4, linearized at each call's point (a valid history)."""
    reg, out = None, [[]] * len(calls)
    for _, k, _, _, _, f, crashed, took, _ in sorted(calls):
        new = rng.randrange(VALUES)
        old = reg if rng.random() < crash_cliff.HIT else rng.randrange(VALUES)
        old = 0 if old is None else old
        if f == "read":
            out[k] = ["read", None, reg, "ok" if took else "info"]
        elif f == "write":
            out[k] = ["write", new, new, "ok"]
        else:
            out[k] = ["cas", [old, new], [old, new], "ok" if reg == old else "fail"]
        if took and f != "read" and out[k][3] == "ok":
            reg = new
        if crashed:
            out[k][2:] = [out[k][1], "info"]
    return out


def _gap(
    calls: list[list], out: list[list], rng: random.Random, late: int
) -> tuple[int, float, float]:
    """(j, a, d): a completed blind write j in the second half, and a time a such that no op
    takes effect between a - d and j's point, with a + d < j's call: a read [a, a + d] of
    what was written just before it then returns before j is called. (A Jepsen log keeps
    only the order of the events: times need not be whole.)"""
    took = sorted((c[0], c[1]) for c in calls if c[7])
    lo = max(late + 40, calls[-1][3] * rng.uniform(0.5, 0.9))
    for prev, (point, j) in zip(took, took[1:], strict=False):
        c = calls[j]
        if point < lo or out[j][0] != "write" or c[6]:
            continue
        if prev[0] < c[3]:
            d = (c[3] - prev[0]) / 3
            return j, prev[0] + d, d
    raise SystemExit("no quiet stretch before a blind write: another seed")


def _events(
    calls: list[list], out: list[list], clients: int, extra: list[tuple]
) -> tuple[History, list[int]]:
    rows = [(c[3], c[4], c[2], *out[c[1]]) for c in calls]
    rows += [(s, e, c, f, arg, val, typ) for c, s, e, f, arg, val, typ in extra]
    # Integer times, as a log's are (a float time sends a partition past the compiled sweep
    # and search): each time its rank among the history's times, which keeps every order and
    # every tie (the plant's times are thirds of gaps between the generated ops' points).
    rank = {t: k for k, t in enumerate(sorted({t for row in rows for t in row[:2]}))}
    rows = [(rank[s], rank[e], *rest) for s, e, *rest in rows]
    planted = set(range(len(calls), len(rows)))
    events = []
    retired = Counter[int]()
    for k, (start, end, c, f, arg, val, typ) in enumerate(rows):
        p = c + retired[c] * (clients + 4)
        if typ == "info":
            retired[c] += 1  # an info op retires its process
        events.append((start, 0, k, Op(0, start, p, "invoke", f, None, arg, c)))
        events.append((end, 1, k, Op(0, end, p, typ, f, None, val, c)))
    events.sort(key=lambda e: (e[0], e[1]))
    ops = [e[3] for e in events]
    marks = []
    for i, (op, e) in enumerate(zip(ops, events, strict=True)):
        op.index = i
        if e[2] in planted and e[1] == 0:
            marks.append(i)
    return History(ops), marks


def brute(h: History, marks: list[int], reduced: bool = True) -> bool:
    """window_brute.py's verdict on the window [the crashed write's call, the last planted
    read's return]: False means no order of the window, so the history is not linearizable.
    `reduced`: by its reduced search (20x1k's windows are out of the plain one's reach)."""
    cs = window_brute.calls(h)
    last = h.ops[marks[-1]]
    r = next(
        k for k, c in enumerate(cs) if c[6] == last.process and c[4] == last.time and c[0] == "read"
    )
    a = h.ops[marks[0]].time
    return window_brute.window(cs, r, a, [*range(VALUES), PLANTED], False, reduced)[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1, help="the first seed")
    ap.add_argument("--late", type=int, default=LATE)
    ap.add_argument("--twin", action="store_true", help="two overlapping reads of 9 before j")
    ap.add_argument("--kind", action="append", choices=["valid", "invalid"])
    ap.add_argument("--brute", action="store_true", help="and the window's brute force")
    ap.add_argument(
        "--plain", action="store_true", help="the brute force's plain search, not its reduced one"
    )
    ap.add_argument("--time-limit", type=float, default=60.0, help="the check's (wall) limit")
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tally: Counter[tuple[str, str, object]] = Counter()
    for name in args.case or sorted(CASES):
        clients, n = CASES[name]
        for seed in range(args.seed, args.seed + args.seeds):
            for kind in args.kind or ["valid", "invalid"]:
                h, marks = history(n, clients, seed, kind == "invalid", args.late, args.twin)
                got = cliff_seeds._check_in_child(h, args.time_limit)
                expect = kind == "valid"
                tally[(name, kind, got.get("valid"))] += 1
                line = (
                    f"{name} {kind} seed {seed}: {got.get('valid')} "
                    f"({'right' if got.get('valid') == expect else 'NOT ' + str(expect)}) "
                    f"by {got.get('decided_by')}, check cpu {got.get('cpu', 0):.2f} s, "
                    f"peak {got.get('peak_mib', 0):.0f} MiB"
                )
                if got.get("valid") == "unknown":
                    line += f"; k {got['k']}: {got['reason']}"
                if args.brute:
                    t0 = time.process_time()
                    verdict = brute(h, marks, not args.plain)
                    line += (
                        f"; brute force on the window: {verdict} "
                        f"({'plain' if args.plain else 'reduced'}, "
                        f"{time.process_time() - t0:.2f} CPU-s, this process's peak "
                        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)"
                    )
                print(line, flush=True)
    for (name, kind, verdict), count in sorted(tally.items(), key=str):
        print(f"{name} {kind}: {verdict} x{count}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
