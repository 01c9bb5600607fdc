"""Issue 17's figures, on real Docker: the half-done state of the paper lock and the barrier.

1. `holder-dies-mid-update` (the paper lock, kill-client aimed at the holder between its two
   writes) and `holder-dies-mid-update-ready` (the same with the ready-file protocol), `--runs`
   each: per run the atomicity verdict, the half-done reads, the reads the ready-file protocol
   flagged, and the kills (how many landed on a holder).
2. The `barrier` workload (double barrier): `--runs` runs without faults, and `--fault-runs`
   runs each under `pause-client` and `kill-client`: verdicts, rounds, passes, early passes,
   stuck members.

Prints figures only (no assertions):

    .venv/bin/python benchmarks/multistep_barrier.py [--runs 5] [--fault-runs 3] \\
        [--only plain ready barrier]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from zkjepsen.errors import EnvironmentProblem
from zkjepsen.reproduce.scenarios import get_scenario
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

PARTS = ("plain", "ready", "barrier")
SCENARIOS = ("holder-dies-mid-update", "holder-dies-mid-update-ready")


def kills(store_dir: Path) -> tuple[int, int]:
    """(kill-client faults, of which landed while the target held the lock)."""
    n = hit = 0
    for line in (store_dir / "history.jsonl").read_text().splitlines():
        r = json.loads(line)
        v = r.get("value") if isinstance(r.get("value"), dict) else {}
        if r.get("f") == "kill-client" and v.get("phase") == "end":
            n += 1
            hit += bool((v.get("detail") or {}).get("holding_when_hit"))
    return n, hit


def run_once(spec: TestSpec, store: Path, tries: int = 3):
    """One run; an ensemble that does not come up (a loaded machine) is retried, not counted."""
    for i in range(tries):
        try:
            return run_test(spec, store)
        except EnvironmentProblem as e:
            print(f"  (run did not start, try {i + 1}/{tries}: {str(e)[:100]})", flush=True)
    raise SystemExit("the ensemble did not come up; is the machine overloaded?")


def scenario_runs(runs: int, store: Path, names: list[str]) -> None:
    for name in names:
        s = get_scenario(name)
        shown = 0
        for seed in range(1, runs + 1):
            run = run_once(s.spec("paper", seed), store)
            a = run.results.get("atomicity", {})
            k, hit = kills(run.store_dir)
            ok, why = s.expect["paper"].judge(run.valid, run.results)
            shown += a.get("valid") is False
            print(
                f"{name} seed {seed}: atomicity {a.get('valid')}, half-done reads "
                f"{a.get('half_done_read_count')}, flagged by ready file "
                f"{a.get('detected_by_ready_file_count')}, reads {a.get('reads')}, kills {k} "
                f"({hit} on a holder); as expected: {ok} ({why})",
                flush=True,
            )
        print(f"==> {name}: half-done violation in {shown}/{runs} runs", flush=True)


def barrier_spec(nemesis: str, seed: int) -> TestSpec:
    return TestSpec(
        recipe="double-barrier",
        workload="barrier",
        nemesis=[nemesis],
        nodes=3,
        clients=3,
        time_limit_s=20.0,
        recovery_s=25.0,
        session_timeout_s=3.0,
        interval_s=5.0,
        fault_duration_s=2.0,
        seed=seed,
        name=f"bench-barrier-{nemesis}",
        params={"pass_timeout_s": 30.0},
    )


def barrier_runs(runs: int, fault_runs: int, store: Path) -> None:
    # 25 s of recovery: a member stuck since a fault is judged only after 1.5x the session
    # timeout plus 5 s of healthy waiting once the LAST fault has ended.
    for nemesis, n in (("none", runs), ("pause-client", fault_runs), ("kill-client", fault_runs)):
        valid = 0
        for seed in range(1, n + 1):
            run = run_once(barrier_spec(nemesis, seed), store)
            b = run.results.get("barrier", {})
            valid += run.valid is True
            stuck = [
                (s["f"], s["client"], round(s["healthy_wait_s"], 1)) for s in b.get("stuck", [])
            ]
            early = [
                (e["client"], e["entered"], e["n"], e.get("count_seen"))
                for e in b.get("early_passes", [])
            ]
            print(
                f"barrier {nemesis} seed {seed}: {run.valid}; rounds {b.get('rounds')}, "
                f"passes {b.get('passes')}, early passes {b.get('early_pass_count')} {early}, "
                f"stuck {b.get('stuck_count')} {stuck}, cut short {b.get('cut_short')}",
                flush=True,
            )
        print(f"==> barrier {nemesis}: valid in {valid}/{n} runs", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--fault-runs", type=int, default=3)
    ap.add_argument("--only", choices=PARTS, nargs="+", default=list(PARTS))
    ap.add_argument("--store", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zkj-bench-") as d:
        store = args.store or Path(d)
        names = [n for p, n in zip(PARTS, SCENARIOS, strict=False) if p in args.only]
        scenario_runs(args.runs, store, names)
        if "barrier" in args.only:
            barrier_runs(args.runs, args.fault_runs, store)


if __name__ == "__main__":
    main()
