"""The compiled search alone (checker/linear/_fastwgl.h) on one once_twice.py history (issue 54):
its walk steps, CPU and peak RSS, with the pinned ops' list and dead-configuration test or
without them (`--no-pins`: search_valid's pinned_call None, the walk before 2026-11-29), with
the domination among crashed ops or without; and variants of the partition that say where the
cost is: `late-start` (the pinned write called just before its read returned: what it costs
when the plant spans nothing), `no-crashed` (the crashed ops left out). Prints figures,
asserts nothing.

`--ab`: the first attempt's cost (wgl.FIRST_STEPS_PER_OP, as engine's) and a whole check's,
with the pinned list and without, interleaved rounds of the same build, on vs_porcupine.py's
generated CAS groups, a crash_cliff 150 k history (unique values: many pinned writes) and
once_twice.py's 5x10k seed 1: CPU medians.

    .venv/bin/python benchmarks/once_twice_search.py --case 5x10k --seed 2 --budget 30000000
    .venv/bin/python benchmarks/once_twice_search.py --ab
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crash_cliff  # noqa: E402
import histories  # noqa: E402
import once_twice  # noqa: E402

from zkjepsen.checker.linear import Linearizable, make_model, wgl  # noqa: E402
from zkjepsen.checker.linear.partitions import builder, group  # noqa: E402
from zkjepsen.checker.linear.pinned import pin  # noqa: E402
from zkjepsen.checker.linear.wgl import LinOp  # noqa: E402
from zkjepsen.history import History  # noqa: E402

MODEL = make_model("etcd-cas-register")


def partition(h: History) -> list[LinOp]:
    """The history's one partition (the register), pinned as a check pins it."""
    (calls,) = group(h, MODEL, []).values()
    ops = builder(MODEL)(calls)
    pin(ops, MODEL.init())
    return ops


def variant(ops: list[LinOp], name: str) -> list[LinOp]:
    if name == "late-start":  # each pinned op called one time unit before its end
        return [
            LinOp(op.call, op.action, op.end - 1, op.end) if wgl.is_pinned(op) else op for op in ops
        ]
    if name == "no-crashed":
        return [op for op in ops if op.end is not None]
    return ops


def probe(args: argparse.Namespace) -> None:
    clients, n = once_twice.CASES[args.case]
    h, _ = once_twice.history(n, clients, args.seed, args.kind == "invalid", args.late)
    ops = variant(partition(h), args.variant)
    pinned = [(op.action.text, op.start, op.end) for op in ops if wgl.is_pinned(op)]
    crashed = sum(op.end is None for op in ops)
    print(f"{len(ops)} ops, {crashed} crashed, pinned {pinned}")
    deadline = time.monotonic() + args.limit
    call = None if args.no_pins else wgl.PinnedCall
    t0 = time.process_time()
    dom = not args.no_dominate
    out = wgl._search_valid(ops, MODEL.init(), args.budget, deadline, dom, call, args.max_bytes)  # noqa: SLF001
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.case} {args.kind} seed {args.seed} late {args.late} {args.variant}, pins "
        f"{not args.no_pins}, dominate {not args.no_dominate}: found {out[0]}, steps "
        f"{out[1]:,}, cpu {cpu:.2f} s, peak {peak:.0f} MiB"
    )


def ab(rounds: int) -> None:
    cases: dict[str, History] = {
        "cas-crash-5x10k": histories.cas_history(10_000, 5, crash=0.1),
        "cas-unique-5x10k": histories.cas_history(10_000, 5, unique=True),
        "cas-5x10k": histories.cas_history(10_000, 5),
        "cliff-late-150k-s1": crash_cliff.history(150_000, 5, 0, False, seed=1)[0],
        "once-5x10k-s1": once_twice.history(10_000, 5, 1, False)[0],
    }
    fast = wgl._search_valid  # noqa: SLF001
    for name, h in cases.items():
        ops = partition(h)
        cpu: dict[str, list[float]] = {"A": [], "B": [], "A check": [], "B check": []}
        got: dict[str, Any] = {}
        for _ in range(rounds):
            for tag, call in (("A", None), ("B", wgl.PinnedCall)):
                budget = wgl.FAST_STEPS + wgl.FIRST_STEPS_PER_OP * len(ops)
                t0 = time.process_time()
                got[tag] = fast(ops, MODEL.init(), budget, None, False, call)
                cpu[tag].append(time.process_time() - t0)
                wgl._search_valid = (lambda *a: fast(*a[:5])) if call is None else fast  # type: ignore[assignment]  # noqa: SLF001
                t0 = time.process_time()
                r = Linearizable(MODEL, time_limit=120).check(h)
                cpu[tag + " check"].append(time.process_time() - t0)
                wgl._search_valid = fast  # noqa: SLF001
                got[tag + " check"] = (r.valid, r.details.get("decided_by"))
        ms = {k: statistics.median(v) * 1000 for k, v in cpu.items()}
        print(
            f"{name}: {len(ops)} ops, {len(wgl.pinned_ops(ops))} pinned; first attempt without "
            f"the pinned list {got['A']} {ms['A']:.1f} ms, with {got['B']} {ms['B']:.1f} ms; "
            f"whole check without {got['A check']} {ms['A check']:.1f} ms, with "
            f"{got['B check']} {ms['B check']:.1f} ms",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=sorted(once_twice.CASES), default="5x10k")
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--kind", choices=["valid", "invalid"], default="valid")
    ap.add_argument("--late", type=int, default=once_twice.LATE)
    ap.add_argument("--variant", choices=["as-is", "late-start", "no-crashed"], default="as-is")
    ap.add_argument("--budget", type=int, default=30_000_000, help="walk steps")
    ap.add_argument(
        "--max-bytes", type=int, default=None, help="the search's tables' bound (none: none)"
    )
    ap.add_argument("--limit", type=float, default=200.0, help="wall seconds")
    ap.add_argument("--no-pins", action="store_true")
    ap.add_argument("--no-dominate", action="store_true")
    ap.add_argument("--ab", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.ab:
        ab(args.rounds)
    else:
        probe(args)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
