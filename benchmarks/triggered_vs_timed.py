"""How often one pause of the lock holder reproduces a split holder when it fires at a time vs on
an event: the same spec and fault, `pause-client` at 4 s (aimed at the holder then) against
`pause-client` on the first acquire after 4 s (+0.1 s, or at once, aimed at the client that
acquired).

    .venv/bin/python benchmarks/triggered_vs_timed.py [--runs 5] [--store DIR]
        [--only timed|triggered|triggered-no-delay]

(runs are sequential: a run owns the process's signal handlers; start one process per variant
to run them side by side)

Prints each run and each variant's rate of `lock:belief` with its 95 % Wilson interval.
"""

from __future__ import annotations

import argparse

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.report.stats import rate_text
from zkjepsen.reproduce.replay import violation_kinds
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

VARIANTS = {
    "timed": steps(sleep(4), fault("pause-client", duration="1.5x")),
    "triggered-no-delay": steps(sleep(4), on(on_acquire(), fault("pause-client", duration="1.5x"))),
    "triggered": steps(
        sleep(4), on(on_acquire(delay_s=0.1), fault("pause-client", duration="1.5x"))
    ),
}


def spec(seed: int, hold_fixed: bool = False) -> TestSpec:
    return TestSpec(
        recipe="kazoo",
        workload="counter",
        nemesis=["pause-client"],
        nodes=3,
        clients=3,
        time_limit_s=14,
        recovery_s=4,
        session_timeout_s=3,
        seed=seed,
        name="bench-triggered-vs-timed",
        params={"resource": "unguarded", "hold_s": 0.4, "hold_fixed": hold_fixed},
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=list(VARIANTS), default=None)
    ap.add_argument("--store", default=None)
    ap.add_argument(
        "--hold-fixed",
        action="store_true",
        help="every hold exactly 0.4 s (default: random, mean 0.4 s; a hold shorter "
        "than docker pause's latency ends before any pause lands)",
    )
    a = ap.parse_args()
    variants = [a.only] if a.only else list(VARIANTS)
    jobs = [(v, i) for i in range(a.runs) for v in variants]

    def one(job):
        v, i = job
        r = run_test(
            spec(100 + i, a.hold_fixed),
            a.store and __import__("pathlib").Path(a.store),
            gen=VARIANTS[v],
        )
        hit = "lock:belief" in violation_kinds(r.results)
        print(
            f"{v:9s} run {i + 1}: {'split holder' if hit else 'no split'}  {r.store_dir}",
            flush=True,
        )
        return v, hit

    results = [one(j) for j in jobs]
    for v in variants:
        hits = [h for w, h in results if w == v]
        print(f"{v}: lock:belief in {rate_text(sum(hits), len(hits))}")


if __name__ == "__main__":
    main()
