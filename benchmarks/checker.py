"""Checker benchmark: prints, per corpus group, total check time and peak memory; and the time
for 1 M lock-history records through the lock checker. Prints figures, asserts nothing.

    .venv/bin/python benchmarks/checker.py                 # every group, 3 repeats
    .venv/bin/python benchmarks/checker.py --group etcd    # one group (for whole-process timing)
    .venv/bin/python benchmarks/checker.py --repeat 5 --no-memory

Check time excludes reading the file (shown apart as `parse`). Peak memory is the peak of the
Python heap (tracemalloc) during one extra, untimed run of the group's checks. The corpus is
`../shared/corpus` next to the repository, or $ZKJEPSEN_CORPUS.

Reference figures (Porcupine, Go, 2-core machine): etcd 102 histories ~0.62 s in total;
kv c50-ok 0.21-0.76 s; c50-bad 0.04-0.15 s; kv c10 as one partition 2.8 s (ok) / 3.6 s (bad).
Target for the lock checker: 1 M ops in under 5 s.
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from zkjepsen.checker.linearizability import Linearizable
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.models import make_model
from zkjepsen.history import History, Op
from zkjepsen.history.formats import read_history

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("ZKJEPSEN_CORPUS") or REPO.parent / "shared" / "corpus")
KV = "porcupine/test_data/kv/"


def corpus_groups() -> dict[str, list[tuple[str, str, object, bool]]]:
    """group -> [(path, model, initial, expected valid)] from expected.tsv."""
    groups: dict[str, list[tuple[str, str, object, bool]]] = {}
    with open(CORPUS / "expected.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if not (CORPUS / row["path"]).exists():
                continue
            expected = row["expected"] == "linearizable"
            p = row["path"]
            if "jepsen/etcd" in p:
                groups.setdefault("etcd", []).append((p, "etcd-cas-register", None, expected))
            elif p.startswith(KV):
                name = Path(p).stem
                groups.setdefault(f"kv-{name}", []).append((p, "kv", None, expected))
                if name.startswith("c10"):
                    groups.setdefault(f"kv-{name}-one-partition", []).append(
                        (p, "kv-single", None, expected))
            elif p.startswith("knossos/"):
                model = row["model"]
                groups.setdefault("knossos", []).append(
                    (p, model, 0 if model == "cas-register" else None, expected))
    return groups


def lock_history(records: int, clients: int = 10) -> list[Op]:
    """A lock history of `records` records: clients take turns at acquire, write, release
    (6 records a turn); every 1000th turn one client is 'paused' and overlaps the next."""
    ops: list[Op] = []
    t = 0
    token = 0
    turn = 0
    while len(ops) < records:
        c = turn % clients
        p = c
        token += 1
        late = 5 if turn % 1000 == 999 else 0  # a split holder now and then
        for typ, f, val, dt in (("invoke", "acquire", None, 1), ("ok", "acquire",
                                {"token": token, "seq": token, "node": f"/l/n{token}"}, 1),
                                ("invoke", "write", {"token": token}, 1 + late),
                                ("ok", "write", None, 1),
                                ("invoke", "release", None, 1), ("ok", "release", None, 1)):
            ops.append(Op(len(ops), t, p, typ, f, "/l" if f != "write" else "/r", val, c))
            t += dt
        if late:
            t -= late + 3
        turn += 1
    ops.sort(key=lambda o: o.time)
    return ops[:records]


def timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], object]:
    runs, out = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return runs, out


def peak_mib(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def row(name: str, n: int, runs: list[float], parse: float, mem: float | None, note: str) -> None:
    med = statistics.median(runs)
    mem_s = "-" if mem is None else f"{mem:7.1f}"
    print(f"{name:28s} {n:5d} {min(runs):8.3f} {med:8.3f} {parse:8.3f} {mem_s:>9s}  {note}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--group", action="append", help="only these groups (repeatable); 'lock' "
                    "is the 1 M-op lock history")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--lock-records", type=int, default=1_000_000)
    args = ap.parse_args()
    want = set(args.group or [])

    print(f"{'group':28s} {'files':>5s} {'min s':>8s} {'median s':>8s} {'parse s':>8s} "
          f"{'peak MiB':>9s}  verdicts")
    if not (CORPUS / "expected.tsv").exists():
        print(f"corpus not found at {CORPUS}: skipping the linearizability groups")
        groups = {}
    else:
        groups = corpus_groups()
    for name, items in groups.items():
        if want and name not in want:
            continue
        t0 = time.perf_counter()
        histories = [(read_history(CORPUS / p), m, init, exp) for p, m, init, exp in items]
        parse = time.perf_counter() - t0

        def run(histories: list[tuple[History, str, object, bool]] = histories) -> list[object]:
            return [Linearizable(make_model(m, init), time_limit=120).check(h).valid
                    for h, m, init, _ in histories]

        runs, verdicts = timed(run, args.repeat)
        right = sum(v == exp for v, (_, _, _, exp) in zip(verdicts, histories, strict=True))
        mem = None if args.no_memory else peak_mib(run)
        row(name, len(items), runs, parse, mem, f"{right}/{len(items)} as expected")

    if not want or "lock" in want:
        t0 = time.perf_counter()
        ops = lock_history(args.lock_records)
        gen = time.perf_counter() - t0
        checker = LockChecker()
        runs, result = timed(lambda: checker.check(ops), args.repeat)
        mem = None if args.no_memory else peak_mib(lambda: checker.check(ops))
        d = result.details  # type: ignore[attr-defined]
        row("lock (records)", len(ops), runs, gen, mem,
            f"{d['holds']} holds, {d['belief_overlap_count']} belief / "
            f"{d['effect_overlap_count']} effect overlaps (parse = generation)")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
