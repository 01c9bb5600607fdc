"""zkjepsen's checker against Porcupine's, on Porcupine's own benchmark: prints figures, asserts
nothing.

Porcupine is the reference: built from its public source with Go (nothing of it lives in this
repository). `--porcupine BIN` is a small Go program the user builds next to a Porcupine
checkout: it takes `GROUP=MODEL:FILE[,FILE...]` arguments (MODEL `etcd` or `kv`, Porcupine's
`etcdModel` and `kvModel` with the parsers of its porcupine_test.go), parses the files, then
calls `porcupine.CheckEvents` on them pass after pass until `-min` seconds of process CPU are
spent, and prints one JSON object per group: {"group", "files", "passes", "valid", "cpu",
"wall"} (seconds per pass, CPU from getrusage(RUSAGE_SELF): every goroutine counts).

zkjepsen does the same in this process: the files are read first (not timed, as Porcupine's
parse is not), then `Linearizable(model).check(history)` on each, pass after pass until as
much CPU is spent (`time.process_time`). Rounds alternate who goes first (A/B, B/A, ...); the
table shows the median per-pass time over the rounds, CPU and wall, and the ratio
zkjepsen / Porcupine (below 1: zkjepsen is faster). CPU is the figure to trust on a shared
machine; the load average is printed before and after.

Groups: `etcd` (every non-empty etcd_*.log of DATA/jepsen, model etcd-cas-register; etcd_095
is empty and Porcupine has no test for it either), `kv-c01-ok` ... `kv-c50-bad` (DATA/kv,
model kv, partitioned per key like Porcupine's kvModel), and with `--cas` the generated valid
CAS-register histories of benchmarks/histories.py (values 0..4, no crashed ops) as Jepsen logs
in a temporary directory: `cas-5x10k`, `cas-5x100k` (5 clients) and `cas-20x1k` (20 clients);
`cas-crash-5x10k` (values 0..4, 10 % of the writes and cas crashed) and `cas-unique-5x10k`
(every write and cas writes a fresh number).

`--porcupine-verbose`: Porcupine checks with CheckEventsVerbose, which also returns the partial
linearizations its counterexamples are drawn from; CheckEvents returns a verdict alone, while
zkjepsen's check always returns its counterexample (the longest prefix, the op that cannot be
placed, the op to blame), which is most of a short refutation's cost (issue 54, kv c01-bad).

    .venv/bin/python benchmarks/vs_porcupine.py --porcupine /tmp/porcbench \\
        --data /tmp/porcupine/test_data --rounds 5 --cas
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zkjepsen.checker.linear import Linearizable, make_model
from zkjepsen.history.formats import read_history

KV = ("c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad")
Group = tuple[str, str, list[Path]]  # name, model (Porcupine's name), files


CAS = {  # name: ops, clients, share of crashed writes and cas, unique values
    "cas-5x10k": (10_000, 5, 0.0, False),
    "cas-5x100k": (100_000, 5, 0.0, False),
    "cas-20x1k": (1_000, 20, 0.0, False),
    "cas-crash-5x10k": (10_000, 5, 0.1, False),  # values 0..4, 10 % crashed
    "cas-unique-5x10k": (10_000, 5, 0.0, True),
}


def groups(data: Path, want: set[str], cas_dir: Path | None = None) -> list[Group]:
    out: list[Group] = []
    if cas_dir is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from histories import cas_history, write_jepsen_log

        for name, (n, clients, crash, unique) in CAS.items():
            if not want or name in want:
                path = cas_dir / f"{name}.log"
                h = cas_history(n, clients=clients, crash=crash, unique=unique)
                write_jepsen_log(h, str(path))
                out.append((name, "etcd", [path]))
    etcd = [p for p in sorted((data / "jepsen").glob("etcd_*.log")) if p.stat().st_size > 0]
    if etcd:
        out.append(("etcd", "etcd", etcd))
    for name in KV:
        p = data / "kv" / f"{name}.txt"
        if p.exists():
            out.append((f"kv-{name}", "kv", [p]))
    return [g for g in out if not want or g[0] in want]


ZK_MODEL = {"etcd": "etcd-cas-register", "kv": "kv"}


def porcupine_round(
    binary: str, gs: list[Group], min_cpu: float, verbose: bool = False
) -> dict[str, dict]:
    specs = [f"{name}={model}:{','.join(map(str, files))}" for name, model, files in gs]
    flags = ["-verbose"] if verbose else []
    out = subprocess.run(
        [binary, "-min", str(min_cpu), *flags, *specs], capture_output=True, text=True, check=True
    ).stdout
    return {d["group"]: d for d in map(json.loads, out.splitlines())}


def zkjepsen_round(loaded: dict[str, list], gs: list[Group], min_cpu: float) -> dict[str, dict]:
    res = {}
    for name, model, _ in gs:
        m = make_model(ZK_MODEL[model])
        hs = loaded[name]
        gc.collect()
        passes = 0
        c0, w0 = time.process_time(), time.perf_counter()
        while True:
            verdicts = [Linearizable(m, time_limit=300).check(h).valid for h in hs]
            passes += 1
            if time.process_time() - c0 >= min_cpu:
                break
        c1, w1 = time.process_time(), time.perf_counter()
        res[name] = {
            "files": len(hs),
            "passes": passes,
            "valid": sum(v is True for v in verdicts),
            "unknown": sum(v == "unknown" for v in verdicts),
            "cpu": (c1 - c0) / passes,
            "wall": (w1 - w0) / passes,
        }
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--porcupine", required=True, help="the Go timing program (see above)")
    ap.add_argument("--data", required=True, help="Porcupine's test_data directory")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-cpu", type=float, default=0.2, help="CPU seconds per group and side")
    ap.add_argument("--group", action="append", help="only these groups (repeatable)")
    ap.add_argument("--cas", action="store_true", help="add the generated CAS groups")
    ap.add_argument(
        "--porcupine-verbose",
        action="store_true",
        help="Porcupine checks with CheckEventsVerbose (its partial linearizations too, as "
        "zkjepsen's check returns its counterexample) instead of CheckEvents",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        return compare(args, Path(tmp) if args.cas else None)


def compare(args: argparse.Namespace, cas_dir: Path | None) -> int:
    gs = groups(Path(args.data), set(args.group or ()), cas_dir)
    if not gs:
        print(f"no Porcupine test data under {args.data}", file=sys.stderr)
        return 254
    load0 = os.getloadavg()
    loaded = {name: [read_history(p) for p in files] for name, _, files in gs}
    for hs in loaded.values():
        for h in hs:
            h.ops  # noqa: B018 - a streamed history loads here, not in the timed part
    per_round: dict[tuple[str, str], dict[str, list[float]]] = {}
    last: dict[tuple[str, str], dict] = {}
    for r in range(args.rounds):
        sides = [("porcupine", None), ("zkjepsen", None)]
        if r % 2:
            sides.reverse()
        for side, _ in sides:
            if side == "porcupine":
                res = porcupine_round(args.porcupine, gs, args.min_cpu, args.porcupine_verbose)
            else:
                res = zkjepsen_round(loaded, gs, args.min_cpu)
            for name, d in res.items():
                b = per_round.setdefault((side, name), {"cpu": [], "wall": []})
                b["cpu"].append(d["cpu"])
                b["wall"].append(d["wall"])
                last[(side, name)] = d
    # the median per-pass time over the rounds (issue 54: the minimum flattered whichever
    # side had one quiet round on a busy machine)
    best = {k: {m: statistics.median(v) for m, v in b.items()} for k, b in per_round.items()}
    load1 = os.getloadavg()
    if args.porcupine_verbose:
        print("Porcupine side: CheckEventsVerbose (verdict and partial linearizations)")
    print(
        f"{args.rounds} rounds A/B interleaved, median per pass; load average "
        f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} before, "
        f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} after"
    )
    print(
        f"{'group':12s} {'files':>5s} {'zk cpu ms':>10s} {'porc cpu ms':>11s} {'cpu ratio':>9s} "
        f"{'zk wall ms':>10s} {'porc wall ms':>12s} {'wall ratio':>10s}  verdicts (valid/files)"
    )
    for name, _, files in gs:
        z, p = best[("zkjepsen", name)], best[("porcupine", name)]
        zl, pl = last[("zkjepsen", name)], last[("porcupine", name)]
        unknown = f", {zl['unknown']} unknown" if zl["unknown"] else ""
        print(
            f"{name:12s} {len(files):5d} {z['cpu'] * 1e3:10.3f} {p['cpu'] * 1e3:11.3f} "
            f"{z['cpu'] / p['cpu']:9.2f} {z['wall'] * 1e3:10.3f} {p['wall'] * 1e3:12.3f} "
            f"{z['wall'] / p['wall']:10.2f}  zkjepsen {zl['valid']}/{len(files)}{unknown}, "
            f"porcupine {pl['valid']}/{len(files)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
