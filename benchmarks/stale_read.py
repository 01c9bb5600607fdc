"""Long CAS-register histories with crashed ops and one planted stale read: what zkjepsen and
Porcupine decide, how fast, in how much memory. Prints figures, asserts nothing.

Each history is `clients` clients calling read, write and cas on one register (etcd's model:
a failed cas asserts the register did not hold `old`), each call with a random interval and a
linearization point inside it; its outcome is what the register gives in point order. A
`--crash` fraction of the calls end `info` (timed out): half of those took effect, half did
not. Written values are unique (each write or cas writes a fresh number), or drawn from 0..4
(`--values 5`, as in Porcupine's etcd logs). One stale read is planted late: a read whose
call started after some cas(old, new) had returned ok now returns `old`, which that cas
replaced for good (the history is then not linearizable, whatever the crashed calls did).

Every case is written as a Jepsen log (Porcupine's etcd format) and checked from that file
by a fresh zkjepsen process (CPU time of the check alone, process peak RSS, verdict, which
path decided, and whether the counterexample's op that cannot be placed is the planted read),
then by Porcupine's `porcbench` (see vs_porcupine.py) under a wall-clock timeout.

    .venv/bin/python benchmarks/stale_read.py --porcupine /work/porcupine/porcbench --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from histories import call_spans, write_jepsen_log  # noqa: E402

from zkjepsen.history import History, Op  # noqa: E402

CASES = [  # name, clients, ops, values (0: unique), plant a stale read
    ("unique-5x10k", 5, 10_000, 0, True),
    ("unique-5x100k", 5, 100_000, 0, True),
    ("unique-20x1k", 20, 1_000, 0, True),
    ("small-5x10k", 5, 10_000, 5, True),
    ("small-5x100k", 5, 100_000, 5, True),
    ("small-20x1k", 20, 1_000, 5, True),
    ("unique-5x1M-valid", 5, 1_000_000, 0, False),
]


def history(
    n: int, clients: int, values: int, stale: bool, crash: float = 0.1, seed: int = 1
) -> tuple[History, int | None]:
    """The history and the index of the planted stale read's completion (None if none)."""
    rng = random.Random(seed)
    spans = call_spans(n, clients, rng)
    fresh = iter(range(1, 1 << 62))
    reg: int | None = None
    recent: list[int | None] = [None]
    out: list[list] = [[]] * n  # f, invoke value, completion value, type
    took = [True] * n
    for _, k, _, _, _ in sorted(spans):
        f = rng.choice(("read", "write", "cas", "cas"))
        crashed = rng.random() < crash
        took[k] = not crashed or rng.random() < 0.5
        new = next(fresh) if not values else rng.randrange(values)
        if f == "read":
            out[k] = ["read", None, reg, "ok"]
        elif f == "write":
            out[k] = ["write", new, new, "ok"]
        else:
            old = reg if rng.random() < 0.5 else rng.choice(recent)
            old = 0 if old is None else old  # (Porcupine's etcd parser: cas takes numbers)
            out[k] = ["cas", [old, new], [old, new], "ok" if reg == old else "fail"]
            if reg != old:
                new = reg
        if f != "read" and took[k]:
            reg = new
            recent = (recent + [new])[-8:]
        if crashed:
            out[k][2:] = [out[k][1], "info"]
    planted = _plant(spans, out) if stale else None
    events = []
    process = list(range(clients))
    for _, k, c, start, end in spans:
        f, arg, val, typ = out[k]
        p = process[c]
        if typ == "info":
            process[c] += clients  # an info op retires its process
        events.append((start, 0, k, Op(0, start, p, "invoke", f, None, arg, c)))
        events.append((end, 1, k, Op(0, end, p, typ, f, None, val, c)))
    events.sort(key=lambda e: (e[0], e[1]))
    ops = [e[3] for e in events]
    index = None
    for i, (op, e) in enumerate(zip(ops, events, strict=True)):
        op.index = i
        if e[2] == planted and e[1] == 1:
            index = i
    return History(ops), index


def _plant(spans: list, out: list[list]) -> int | None:
    """Turn the last read at or after 90 % of the calls into a stale one: it returns the old
    value of the latest cas that returned ok before the read was called. Its call index."""
    by_start = sorted(spans, key=lambda s: s[3])
    done_cas: tuple[int, object] | None = None  # (end, old) of the latest ok cas seen ended
    ended = sorted((s[4], s[1]) for s in spans)
    j = 0
    target = None
    for _, k, _, start, _ in by_start[int(0.9 * len(by_start)) :]:
        while j < len(ended) and ended[j][0] < start:
            kk = ended[j][1]
            if out[kk][0] == "cas" and out[kk][3] == "ok" and out[kk][1][0] != out[kk][1][1]:
                done_cas = (ended[j][0], out[kk][1][0])
            j += 1
        if out[k][0] == "read" and out[k][3] == "ok" and done_cas and out[k][2] != done_cas[1]:
            target = (k, done_cas[1])
    if target is None:
        return None
    out[target[0]][2] = target[1]
    return target[0]


def check_one(path: str, planted: int | None) -> dict:
    """In this (fresh) process: read the file, check it, report figures as one JSON line."""
    from zkjepsen.checker.linear import Linearizable, make_model
    from zkjepsen.history.formats import read_history

    h = read_history(path)
    h.ops  # noqa: B018 - loaded before the clock starts
    loaded = _peak_rss_mib()
    c0, w0 = time.process_time(), time.perf_counter()
    r = Linearizable(make_model("etcd-cas-register"), time_limit=60).check(h)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    stuck = r.details.get("cannot_place") or {}
    return {
        "verdict": r.valid,
        "cpu": cpu,
        "wall": wall,
        "peak_mib": _peak_rss_mib(),
        "loaded_mib": loaded,
        "decided_by": r.details.get("decided_by"),
        "reason": r.details.get("reason"),
        "core_ops": len(r.outcome.ops) if r.outcome is not None else None,
        "names_stale_read": stuck.get("complete_index") == planted if planted and stuck else None,
        "cannot_place": stuck.get("op"),
    }


def _peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not carried over from the parent
    across exec)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def porcupine(binary: str, path: str, timeout: float) -> dict:
    t0 = time.perf_counter()
    try:
        res = subprocess.run(
            [binary, "-min", "0", f"g=etcd:{path}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return {"verdict": "timeout", "wall": time.perf_counter() - t0}
    d = json.loads(res.stdout)
    return {"verdict": d["valid"] == 1, "cpu": d["cpu"], "wall": d["wall"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--porcupine", help="Porcupine's porcbench (see vs_porcupine.py)")
    ap.add_argument("--porcupine-timeout", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=3, help="zkjepsen runs per case (median)")
    ap.add_argument("--case", action="append", help="only these cases (repeatable)")
    ap.add_argument("--check", nargs=2, metavar=("FILE", "PLANTED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.check:
        planted = None if args.check[1] == "-" else int(args.check[1])
        print(json.dumps(check_one(args.check[0], planted)))
        return 0
    cases = [c for c in CASES if not args.case or c[0] in args.case]
    if not cases:
        print(f"no such case; choose from {', '.join(c[0] for c in CASES)}", file=sys.stderr)
        return 254
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, clients, n, values, stale in cases:
            h, planted = history(n, clients, values, stale)
            path = str(Path(tmp) / f"{name}.log")
            write_jepsen_log(h, path)
            runs = []
            for _ in range(args.rounds):
                out = subprocess.run(
                    [sys.executable, __file__, "--check", path, str(planted or "-")],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                runs.append(json.loads(out))
            last = runs[-1]
            print(
                f"{name}: {len(h.ops)} records, zkjepsen {last['verdict']} by "
                f"{last['decided_by']} in cpu median "
                f"{statistics.median(r['cpu'] for r in runs):.3f} s (wall "
                f"{statistics.median(r['wall'] for r in runs):.3f} s), peak "
                f"{max(r['peak_mib'] for r in runs):.0f} MiB ({last['loaded_mib']:.0f} MiB "
                f"once the history was read); core {last['core_ops']} ops, "
                f"cannot place {last['cannot_place']!r}, planted read named: "
                f"{last['names_stale_read']}; reason: {last['reason']}"
            )
            if args.porcupine:
                p = porcupine(args.porcupine, path, args.porcupine_timeout)
                print(f"    porcupine: {p}")
            sys.stdout.flush()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
