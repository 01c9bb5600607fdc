"""Long etcd CAS-register histories with crashed ops whose effects land late, failed cas by
the thousand and, optionally, one planted stale read: what `zkjepsen check` decides, how fast,
in how much memory (issue 39). Prints figures, asserts nothing.

The generator differs from stale_read.py's where the read-from path once fell off a cliff:
- a crashed op (`info`) that took effect does so anywhere from its call to twenty times its
  length after it (LATE) (a client that timed out does not know when its write lands), so crashed
  writes overlap many later ops;
- in the "-nocw" cases, crashed calls are cas and reads only (NO_CRASHED_WRITES): no crashed
  write nobody read is around for the read-from path to explain a failed cas with;
- 90 % of the cas name one of the last 8 values (HIT), so most fail, and etcd's failed
  cas(old, new) says the register did not hold old;
- every SHAPE_EVERY calls, in a quiet moment, the shape that made `_certify` give up: two
  overlapping blind writes, and a failed cas that is the one op saying which came last
  (`_shape`). It occurs by chance too, about once per 600 k calls of this generator.
Values are unique (every write and cas writes a fresh number) or drawn from 0..4 (the
"small-" cases). A planted stale read is a late read that nothing explains, so that it alone
breaks linearizability (the rest is generated valid):
- unique values (`_plant`): it returns the value v that a write or cas j, which returned
  before the read was called, replaced, where v's writer returned before j was called (until
  2026-11-27 v's writer could still be running, or have crashed, and land after j: then the
  read was no violation, and `stale-5x10k` was rightly decided valid);
- values 0..4 (`_small_plan`): it returns v where no op called by the time it returned
  writes v if it crashed or returned after a write j (returned before the read was called)
  was called. So no crashed op before the read writes v: with five values and 10 % crashed
  ops, a crashed write of v pending since early on would otherwise explain almost any read.
  `window_brute.py` confirms these reads by a brute force on a window around them.

Each case is written as a Jepsen log and checked by a fresh `zkjepsen check --json` process
(default limits: 60 s, 2 GiB), reporting its verdict, path, wall and CPU time (the process's,
loading included), peak RSS, and whether the op named is the planted read: `blamed`, the
violation's `clients` and the headline on stderr. With `--seeds N`, N histories per case and
how many named it.

    .venv/bin/python benchmarks/crash_cliff.py --rounds 3 [--case valid-5x1M ...]
    .venv/bin/python benchmarks/crash_cliff.py --rounds 1 --seeds 20 --case stale-5x10k
"""

from __future__ import annotations

import argparse
import bisect
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

from histories import write_jepsen_log  # noqa: E402

from zkjepsen.history import History, Op  # noqa: E402

HIT = 0.1  # share of the cas that name the current value (the others: one of the last 8)
WEIGHTS = (1, 2, 2)  # read, write, cas
SHORT = 0.7  # share of the calls lasting 1..5 (the others 6..59)
CRASH_SHARE = {"read": 1.0, "write": 1.0, "cas": 1.0}  # x crash, per f ("-nocw" cases: below)
NO_CRASHED_WRITES = {"read": 1.0, "write": 0.0, "cas": 2.0}  # still 10 % of all calls
SHAPE_EVERY = 50_000  # calls between two of issue 39's shapes (see _shape)
LATE = 1.0  # share of the crashed ops that took effect whose effect may land after their end
CASES = [  # name, clients, ops, values (0: unique), plant a stale read
    ("valid-5x150k", 5, 150_000, 0, False),
    ("valid-5x200k", 5, 200_000, 0, False),
    ("valid-5x1M", 5, 1_000_000, 0, False),
    ("valid-nocw-5x20k", 5, 20_000, 0, False),
    ("valid-nocw-5x150k", 5, 150_000, 0, False),
    ("stale-20x1k", 20, 1_000, 0, True),
    ("stale-5x10k", 5, 10_000, 0, True),
    ("stale-5x100k", 5, 100_000, 0, True),
    ("small-stale-5x10k", 5, 10_000, 5, True),
    ("small-stale-20x1k", 20, 1_000, 5, True),
    ("small-stale-5x100k", 5, 100_000, 5, True),
    ("stale-5x150k", 5, 150_000, 0, True),
    ("stale-5x1M", 5, 1_000_000, 0, True),
    ("valid-5x5M", 5, 5_000_000, 0, False),
    # The second shape ("unread-"): crashed writes' values unread for long stretches (see
    # UNREAD): a crashed write that took effect lands up to UNREAD["span"] of its lengths after
    # its call, and reads are rare, so many crashed writes overlap and what they wrote is read,
    # if at all, thousands of ops later (by a cas that names it, or a rare read).
    ("unread-valid-5x150k", 5, 150_000, 0, False),
    ("unread-stale-5x150k", 5, 150_000, 0, True),
    ("unread-valid-5x1M", 5, 1_000_000, 0, False),
    ("unread-stale-5x1M", 5, 1_000_000, 0, True),
    ("unread-valid-5x5M", 5, 5_000_000, 0, False),
]
UNREAD = {"weights": (0.05, 2, 2), "span": 2000.0}


def _calls(
    n: int,
    clients: int,
    rng: random.Random,
    crash: float,
    share: dict[str, float],
    shape: dict[str, object] | None = None,
) -> list[list]:
    """Per call: [point, call, client, start, end, f, crashed, took effect, forced]."""
    weights = WEIGHTS if shape is None else shape["weights"]
    span = 20.0 if shape is None else float(shape["span"])  # type: ignore[arg-type]
    free, calls = [0] * clients, []
    for k in range(n):
        c = k % clients
        if k % SHAPE_EVERY == SHAPE_EVERY - 1 and clients >= 2:
            _shape(calls, free, k)
            continue
        start = free[c] + rng.randrange(1, 10)
        dur = rng.randrange(1, 6) if rng.random() < SHORT else rng.randrange(6, 60)
        free[c] = end = start + dur
        f = rng.choices(("read", "write", "cas"), weights)[0]  # type: ignore[arg-type]
        crashed = rng.random() < crash * share[f]
        took = not crashed or rng.random() < 0.5
        point = rng.uniform(start, end)
        if crashed and took and rng.random() < LATE:
            point = rng.uniform(start, end + span * dur)  # it landed after its client gave up
        calls.append([point, len(calls), c, start, end, f, crashed, took, False])
    return calls


def _shape(calls: list[list], free: list[int], k: int) -> None:
    """The shape of issue 39, in a quiet moment: a write of a (long) overlapping a write of b
    (short, inside it), b written first; then a failed cas(b, ...) called after b's write
    returned, which saw a. Only the failed cas says b came first. (Three calls for call k.)"""
    t = max(free) + 60  # every crashed op has landed or never will (20 lengths of 59 at most)
    shape = [  # (client, start, end, point, f, forced)
        (0, t, t + 20, t + 12, "write", False),  # a
        (1, t + 1, t + 10, t + 3, "write", False),  # b
        (len(free) - 1, t + 11, t + 14, t + 13, "cas", True),  # fails: saw a, not b
    ]
    for c, start, end, point, f, forced in shape:
        calls.append([point, len(calls), c, start, end, f, False, True, forced])
    for c in range(len(free)):
        free[c] = t + 21


def history(
    n: int,
    clients: int,
    values: int,
    stale: bool,
    seed: int = 1,
    crash: float = 0.1,
    share: dict[str, float] = CRASH_SHARE,
    shape: dict[str, object] | None = None,
) -> tuple[History, int | None]:
    """The history and the index of the planted stale read's completion (None if none)."""
    rng = random.Random(seed)
    calls = _calls(n, clients, rng, crash, share, shape)
    fresh = iter(range(1, 1 << 62))
    reg, recent = None, [None]
    out: list[list] = [[]] * len(calls)  # f, invoke value, completion value, type
    held: list[tuple[float, object]] = []  # (point, value after) of each op that took effect
    writer: dict[object, int] = {}  # value -> the call that wrote it (unique values)
    plan = _small_plan(calls, rng, values) if stale and values else None
    for point, k, _, start, end, f, crashed, took, forced in sorted(calls):
        new = next(fresh) if not values else rng.randrange(values)
        if plan and start <= plan[2] and (crashed or end >= plan[1]) and new == plan[3]:
            new = (new + 1 + rng.randrange(values - 1)) % values  # anything but the read's
        old = reg if rng.random() < HIT else rng.choice(recent)
        if forced:
            old = recent[-2]  # the value the last write replaced
        old = 0 if old is None else old  # (Porcupine's etcd parser: cas takes numbers)
        if f == "read":
            out[k] = ["read", None, reg, "ok" if took else "info"]
        elif f == "write":
            out[k] = ["write", new, new, "ok"]
        else:
            out[k] = ["cas", [old, new], [old, new], "ok" if reg == old else "fail"]
        if took and f != "read" and out[k][3] == "ok":
            reg = new
            recent = (recent + [new])[-8:]
            writer[new] = k
        if took:
            held.append((point, reg))
        if crashed:
            out[k][2:] = [out[k][1], "info"]
    planted = _plant(calls, out, held, writer) if stale and not values else None
    if plan:
        planted = plan[0]
        out[planted][2] = plan[3]
    return _events(calls, out, clients, planted)


def _small_plan(
    calls: list[list], rng: random.Random, values: int
) -> tuple[int, float, float, int] | None:
    """With values from a small domain: a late read r (ok) that will return v, and a write j
    (ok) that returned before r was called. No op called by the time r returned writes v if it
    crashed (it may land any time) or returned after j was called: every write of v that
    could come before r completed before j, which overwrote it, so nothing explains r.
    (r, j's call time, r's return time, v), or None (no such read)."""
    by_start = sorted(range(len(calls)), key=lambda k: calls[k][3])
    for r in by_start[int(0.9 * len(calls)) :]:
        if calls[r][5] != "read" or calls[r][6]:
            continue
        done = [
            j
            for j in range(max(0, r - 40), r)
            if calls[j][4] < calls[r][3] and calls[j][5] == "write" and not calls[j][6]
        ]
        if done:
            j = max(done, key=lambda j: calls[j][4])
            return r, calls[j][3], calls[r][4], rng.randrange(values)
    return None


def _plant(
    calls: list[list], out: list[list], held: list[tuple[float, object]], writer: dict
) -> int | None:
    """A late read returns a value v that a write or cas j, which returned before the read was
    called, replaced; v's writer w (unique values: the one op that wrote v) completed, and
    returned before j was called. In every linearization w < j < the read, and j wrote
    another value, so nothing explains the read (a crashed or still running w could be
    placed after j, as in this generator's first version: those reads were no violation).
    Without it the history is the valid one generated: it alone breaks linearizability.
    Its call index."""
    points = [p for p, _ in held]
    for k in sorted(range(len(calls)), key=lambda k: calls[k][3])[int(0.9 * len(calls)) :]:
        if out[k][0] != "read" or out[k][3] != "ok":
            continue
        start = calls[k][3]
        done = [
            j
            for j in range(max(0, k - 40), k)
            if calls[j][4] < start and out[j][0] != "read" and out[j][3] == "ok"
        ]
        for j in sorted(done, key=lambda j: -calls[j][4]):
            i = bisect.bisect_left(points, calls[j][0])
            before = held[i - 1][1] if i > 0 else None
            w = writer.get(before)
            if (
                w is not None
                and out[w][3] == "ok"
                and calls[w][4] < calls[j][3]
                and before != out[k][2]
            ):
                out[k][2] = before
                return k
    return None


def _events(
    calls: list[list], out: list[list], clients: int, planted: int | None
) -> tuple[History, int | None]:
    events, process, index = [], list(range(clients)), None
    for _, k, c, start, end, *_ in calls:
        f, arg, val, typ = out[k]
        p = process[c]
        if typ == "info":
            process[c] += clients  # an info op retires its process
        events.append((start, 0, k, Op(0, start, p, "invoke", f, None, arg, c)))
        events.append((end, 1, k, Op(0, end, p, typ, f, None, val, c)))
    events.sort(key=lambda e: (e[0], e[1]))
    ops = [e[3] for e in events]
    for i, (op, e) in enumerate(zip(ops, events, strict=True)):
        op.index = i
        if e[2] == planted and e[1] == 1:
            index = i
    return History(ops), index


def check(path: str) -> dict:
    """`zkjepsen check --json` on the file in a fresh process: its JSON, wall and CPU time
    and peak RSS (from wait4: this child's alone)."""
    exe = Path(sys.executable).parent / "zkjepsen"
    argv = [str(exe), "check", path, "--model", "etcd-cas-register", "--format", "jepsen-log"]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*argv, "--json"], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        doc = json.loads(out.read() or b"{}")
        err.seek(0)
        headline = err.read().decode(errors="replace").partition("\n")[0]
    return {
        "headline": headline,
        "exit": proc.returncode,
        "doc": doc,
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mib": usage.ru_maxrss / 1024,
    }


def _case(name: str, seed: int, args: argparse.Namespace, tmp: str) -> bool | None:
    """Check one case's history of this seed and print a line; whether the planted read was
    named (None: no read planted)."""
    path = str(Path(args.keep or tmp) / f"{name}-seed{seed}.log")
    # Written by another process: a check forked from one holding the history would
    # count its pages in the check's peak RSS.
    me = [sys.executable, __file__, "--seed", str(seed), "--write", name, path]
    # (".planted2": logs kept before the planted read's rule changed are written again)
    mark = Path(path + ".planted2")
    if args.keep and mark.exists():
        planted = json.loads(mark.read_text())
    else:
        planted = json.loads(subprocess.run(me, capture_output=True, check=True).stdout)
        if args.keep:
            mark.write_text(json.dumps(planted))
    runs = [check(path) for _ in range(args.rounds)]
    doc = runs[-1]["doc"]
    blamed = doc.get("blamed") or {}
    clients = [v.get("clients") for v in doc.get("violations", [])]
    named = None
    if planted is not None:  # the op and the client named: the headline's and the JSON's
        said = f"NOT linearizable: {blamed.get('op')} by process {planted[1]} "
        named = (
            blamed.get("complete_index") == planted[0]
            and clients == [[planted[1]]]
            and said in runs[-1]["headline"]
        )
    print(
        f"{name} (seed {seed}): {doc.get('valid')} by {doc.get('decided_by')} (refuted by "
        f"{doc.get('refuted_by')}), wall median "
        f"{statistics.median(r['wall'] for r in runs):.2f} s, cpu median "
        f"{statistics.median(r['cpu'] for r in runs):.2f} s, peak "
        f"{max(r['peak_mib'] for r in runs):.0f} MiB; named {blamed.get('op')!r} "
        f"({doc.get('blamed_because')}), the planted read: {named}; "
        f"reason: {doc.get('reason')}"
    )
    sys.stdout.flush()
    return named


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="checks per case (median)")
    ap.add_argument("--case", action="append", help="only these cases (repeatable)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1, help="histories per case: seeds from --seed on")
    ap.add_argument("--write", nargs=2, metavar=("CASE", "FILE"), help=argparse.SUPPRESS)
    ap.add_argument(
        "--keep",
        metavar="DIR",
        help="write the logs here and reuse those already there "
        "(A/B runs of two checkouts on the same files: a 1 M log takes a minute to write)",
    )
    args = ap.parse_args()
    if args.write:
        name, clients, n, values, stale = next(c for c in CASES if c[0] == args.write[0])
        share = NO_CRASHED_WRITES if "-nocw" in name else CRASH_SHARE
        shape = UNREAD if name.startswith("unread-") else None
        h, planted = history(n, clients, values, stale, seed=args.seed, share=share, shape=shape)
        write_jepsen_log(h, args.write[1])
        print(json.dumps(None if planted is None else [planted, h.ops[planted].process]))
        return 0
    cases = [c for c in CASES if not args.case or c[0] in args.case]
    if not cases:
        print(f"no such case; choose from {', '.join(c[0] for c in CASES)}", file=sys.stderr)
        return 254
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, *_ in cases:
            named = [
                _case(name, seed, args, tmp) for seed in range(args.seed, args.seed + args.seeds)
            ]
            if args.seeds > 1 and any(x is not None for x in named):
                print(
                    f"{name}: the planted read named (op, clients, headline) in "
                    f"{named.count(True)} of {len(named) - named.count(None)} histories with "
                    f"one (seeds {args.seed}..{args.seed + args.seeds - 1}; "
                    f"{named.count(None)} without a planted read)"
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
