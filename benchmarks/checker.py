"""Checker benchmark: prints figures, asserts nothing.

Groups (each on files given by path, never copied into the repository):
- `etcd`: every `etcd_*.log` in --etcd DIR (Porcupine's test_data/jepsen), model
  etcd-cas-register;
- `kv-c01-ok` ... `kv-c50-bad`: the kv logs in --kv DIR (Porcupine's test_data/kv), model kv
  (partitioned per key), plus `kv-c10-*-one-partition` (model kv-single);
- `knossos`: the Knossos files listed in --corpus DIR's expected.tsv;
- `cas`: a generated valid 5-client CAS history of 10 k / 30 k / 100 k calls (pure check time:
  it should grow about linearly);
- `lock`: a generated 1 M-record lock history through the lock checker, from memory.

Per group: files, min and median pure check time over --repeat runs (reading excluded, shown
apart as `read s`), the least process CPU time of those runs (`cpu s`), peak Python heap in
one extra untimed run, and the verdicts (checked against expected.tsv when the file is listed
there). Whole-process figures (the CLI reading a file) are
for an outside timer: write the inputs with benchmarks/histories.py.

    .venv/bin/python benchmarks/checker.py --corpus ../shared/corpus
    .venv/bin/python benchmarks/checker.py --etcd DIR --kv DIR --group etcd --repeat 5
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from histories import cas_history, lock_history  # noqa: E402

from zkjepsen.checker.linear import (
    Linearizable,  # noqa: E402
    make_model,  # noqa: E402
)
from zkjepsen.checker.lock import LockChecker  # noqa: E402
from zkjepsen.history.formats import read_history  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = Path(os.environ.get("ZKJEPSEN_CORPUS") or REPO.parent / "shared" / "corpus")
KV_FILES = ("c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad")
Item = tuple[Path, str, object]  # path, model, initial


def expectations(corpus: Path) -> dict[str, bool]:
    """File name (and corpus-relative path) -> expected verdict, from expected.tsv."""
    out: dict[str, bool] = {}
    tsv = corpus / "expected.tsv"
    if tsv.exists():
        with open(tsv, encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                valid = row["expected"] == "linearizable"
                out[row["path"]] = valid
                if row["path"].startswith("porcupine/"):
                    out[Path(row["path"]).name] = valid
    return out


def groups(args: argparse.Namespace) -> dict[str, list[Item]]:
    g: dict[str, list[Item]] = {}
    etcd = sorted(Path(args.etcd).glob("etcd_*.log"))
    # etcd_095 is empty ("etcd failed to start"): Porcupine has no test for it either
    etcd = [p for p in etcd if p.stat().st_size > 0]
    if etcd:
        g["etcd"] = [(p, "etcd-cas-register", None) for p in etcd]
    for name in KV_FILES:
        p = Path(args.kv) / f"{name}.txt"
        if p.exists():
            g[f"kv-{name}"] = [(p, "kv", None)]
    for name in KV_FILES[2:4]:
        p = Path(args.kv) / f"{name}.txt"
        if p.exists():
            g[f"kv-{name}-one-partition"] = [(p, "kv-single", None)]
    tsv = Path(args.corpus) / "expected.tsv"
    if tsv.exists():
        with open(tsv, encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                p = Path(args.corpus) / row["path"]
                if row["path"].startswith("knossos/") and p.exists():
                    init = 0 if row["model"] == "cas-register" else None
                    g.setdefault("knossos", []).append((p, row["model"], init))
    return g


CPU: dict[int, float] = {}  # id(runs) -> min process CPU of those runs (see row)


def timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], object]:
    """Wall times of `repeat` runs; their minimum CPU time goes to CPU (a shared machine
    stretches wall time, CPU time much less)."""
    runs, out, cpu = [], None, []
    for _ in range(repeat):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU[id(runs)] = min(cpu)
    return runs, out


def peak_mib(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def row(name: str, n: int, runs: list[float], read: float, mem: float | None, note: str) -> None:
    med = statistics.median(runs)
    mem_s = "-" if mem is None else f"{mem:7.1f}"
    cpu = CPU.get(id(runs), float("nan"))
    print(
        f"{name:28s} {n:7d} {min(runs):8.3f} {med:8.3f} {cpu:8.3f} {read:8.3f} {mem_s:>9s}  {note}"
    )
    sys.stdout.flush()


def check_all(histories: list[tuple[object, str, object]]) -> list[object]:
    return [
        Linearizable(make_model(m, init), time_limit=300).check(h).valid  # type: ignore[arg-type]
        for h, m, init in histories
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="corpus with expected.tsv")
    ap.add_argument("--etcd", help="directory of etcd_*.log (default: the corpus's)")
    ap.add_argument("--kv", help="directory of c01-ok.txt ... (default: the corpus's)")
    ap.add_argument("--group", action="append", help="only these groups (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--cas-sizes", default="10000,30000,100000")
    ap.add_argument("--lock-records", type=int, default=1_000_000)
    args = ap.parse_args()
    porcupine = Path(args.corpus) / "porcupine" / "test_data"
    args.etcd = args.etcd or str(porcupine / "jepsen")
    args.kv = args.kv or str(porcupine / "kv")
    want = set(args.group or [])
    expected = expectations(Path(args.corpus))

    def expect(p: Path) -> bool | None:
        if p.name in expected:
            return expected[p.name]
        try:
            return expected.get(str(p.relative_to(args.corpus)))
        except ValueError:
            return None

    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"{'group':28s} {'ops':>7s} {'min s':>8s} {'median s':>8s} {'cpu s':>8s} {'read s':>8s} "
        f"{'peak MiB':>9s}  verdicts"
    )
    for name, items in groups(args).items():
        if want and name not in want:
            continue
        t0 = time.perf_counter()
        histories = [(read_history(p), m, init) for p, m, init in items]
        for h, _, _ in histories:
            h.ops  # noqa: B018 - a streamed history loads here, not in the timed part
        read = time.perf_counter() - t0
        runs, verdicts = timed(lambda hs=histories: check_all(hs), args.repeat)
        mem = None if args.no_memory else peak_mib(lambda hs=histories: check_all(hs))
        known = [(v, expect(p)) for v, (p, _, _) in zip(verdicts, items, strict=True)]
        right = sum(v == e for v, e in known if e is not None)
        listed = sum(e is not None for _, e in known)
        valid = sum(v is True for v, _ in known)
        row(
            name,
            len(items),
            runs,
            read,
            mem,
            f"{valid} valid / {len(items) - valid} not; {right}/{listed} listed as expected",
        )

    if not want or "cas" in want:
        for n in (int(x) for x in args.cas_sizes.split(",")):
            t0 = time.perf_counter()
            h = cas_history(n)
            gen = time.perf_counter() - t0
            model = make_model("etcd-cas-register")
            runs, result = timed(
                lambda h=h, m=model: Linearizable(m, time_limit=300).check(h), args.repeat
            )
            mem = (
                None
                if args.no_memory
                else peak_mib(lambda h=h, m=model: Linearizable(m, time_limit=300).check(h))
            )
            row(
                f"cas 5 clients ({n // 1000}k calls)",
                n,
                runs,
                gen,
                mem,
                f"{result.valid} (read = generation)",
            )  # type: ignore[attr-defined]

    if not want or "lock" in want:
        t0 = time.perf_counter()
        ops = lock_history(args.lock_records)
        gen = time.perf_counter() - t0
        checker = LockChecker()
        runs, result = timed(lambda: checker.check(ops), args.repeat)
        mem = None if args.no_memory else peak_mib(lambda: checker.check(ops))
        d = result.details  # type: ignore[attr-defined]
        row(
            "lock (records, from memory)",
            len(ops),
            runs,
            gen,
            mem,
            f"{d['holds']} holds, {d['belief_overlap_count']} belief / "
            f"{d['effect_overlap_count']} effect overlaps (read = generation)",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
