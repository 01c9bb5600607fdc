"""How often each scenario ends as expected: every (scenario, recipe) pair run `--runs` times
(seeds 1..runs), each run its own `zkjepsen scenario run NAME --recipe R --seed S` process, at
most `--parallel` at once (a run owns its process's signal handlers, so runs in parallel need
processes of their own; `zkjepsen scenario run --runs N` does the same one run at a time).

    .venv/bin/python benchmarks/scenario_rates.py [NAME ...] [--runs 5] [--parallel 2]
        [--first-seed 1] [--recipe R ...] [--store DIR]

No NAME: every scenario. Prints every run's line and, per pair, the rate with its 95 % Wilson
interval; the last line counts the pairs that were as expected in every run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from zkjepsen.report.stats import rate_text
from zkjepsen.reproduce.scenarios import SCENARIOS

ZKJEPSEN = str(Path(sys.executable).with_name("zkjepsen"))


def one(name: str, recipe: str, seed: int, store: Path) -> tuple[bool, str]:
    cmd = [ZKJEPSEN, "scenario", "run", name, "--recipe", recipe, "--seed", str(seed)]
    proc = subprocess.run([*cmd, "--store", str(store)], capture_output=True, text=True)
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if "expected" in ln]
    verdict = next((ln for ln in lines if ln.startswith(("as expected", "NOT as"))), "")
    return proc.returncode == 0, verdict or f"exit {proc.returncode}: {proc.stderr[-300:]}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1, help="seeds FIRST..FIRST+runs-1")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--recipe", action="append", default=None, help="only these recipes")
    ap.add_argument("--store", type=Path, default=Path("store/scenario-rates"))
    a = ap.parse_args()
    names = a.names or list(SCENARIOS)
    pairs = [(n, r) for n in names for r in SCENARIOS[n].expect if not a.recipe or r in a.recipe]
    seeds = range(a.first_seed, a.first_seed + a.runs)
    jobs = [(n, r, seed) for seed in seeds for n, r in pairs]
    got: dict[tuple[str, str], list[bool]] = {p: [] for p in pairs}

    def run(job: tuple[str, str, int]) -> None:
        n, r, seed = job
        ok, line = one(n, r, seed, a.store.resolve())
        got[(n, r)].append(ok)
        print(f"{n} --recipe {r} --seed {seed}: {line}", flush=True)

    with ThreadPoolExecutor(a.parallel) as pool:
        list(pool.map(run, jobs))
    for (n, r), oks in got.items():
        print(f"{n} with {r}: as expected in {rate_text(sum(oks), len(oks))}")
    print(f"{sum(all(v) for v in got.values())}/{len(got)} pairs as expected in every run")


if __name__ == "__main__":
    main()
