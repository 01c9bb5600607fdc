"""The checker at any length (issue 54): valid and invalid etcd CAS-register histories with 10 %
crashed ops, unique values, 5 clients, over many seeds and two generator shapes, each checked
with the CLI's default limits (60 s, 2 GiB): the verdict, its path, the check's CPU time and
peak RSS, and for an unknown its reason (k and the ambiguous ops). Prints figures, asserts
nothing; the last lines count the verdicts per size, shape and kind, and the worst CPU time.

Shapes (crash_cliff.py's generator):
- `late`: a crashed op that took effect lands anywhere from its call to 20 of its lengths after
  it (crash_cliff.py's own cases);
- `unread`: crashed writes' values unread for long stretches (crash_cliff.UNREAD): reads are
  rare and a crashed write lands up to 2000 of its lengths after its call, so many overlap and
  what they wrote is read, if at all, thousands of ops later.
Kinds: `valid` (generated linearizable), `stale` (one planted stale read that nothing explains:
crash_cliff._plant; the history is then not linearizable).

Each history is generated in this process, which then forks: the child checks it and reports
getrusage(RUSAGE_SELF) CPU time of the check alone, and its peak RSS (ru_maxrss, which counts
the generated history the child inherited: an upper bound of the check's own) with its RSS at
the start (that inheritance: the peak less it is what the check added). Writing and
re-reading a 1 M-op log costs minutes on a busy machine and says nothing about the checker.

    .venv/bin/python benchmarks/cliff_seeds.py --sizes 150000 --seeds 20
    .venv/bin/python benchmarks/cliff_seeds.py --sizes 1000000 --seeds 3 --shape unread
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crash_cliff  # noqa: E402

from zkjepsen.checker.linear import Linearizable, make_model  # noqa: E402
from zkjepsen.history import History  # noqa: E402

SHAPES = {"late": None, "unread": crash_cliff.UNREAD}


def _rss_mib() -> float:
    """This process's resident set now, in MiB (pages shared with the parent count)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _check_in_child(h: History, time_limit: float = 60.0) -> dict:
    """Check `h` in a forked child; its verdict, reason, CPU seconds and peak MiB. The time
    limit is the checker's, on the wall clock: on a machine loaded by others, give it more
    (`--time-limit`) and read the CPU time."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: check, report, exit without running the parent's cleanup
        os.close(rd)
        start_mib = _rss_mib()  # the history and all the parent held, inherited
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        res = Linearizable(make_model("etcd-cas-register"), time_limit=time_limit).check(h)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
        d = res.details
        out = {
            "valid": res.valid,
            "decided_by": d.get("decided_by"),
            "reason": d.get("reason"),
            "k": [a["k"] for a in d.get("ambiguous", [])],
            "cpu": cpu,
            "peak_mib": r1.ru_maxrss / 1024,
            "start_mib": start_mib,
        }
        os.write(wr, json.dumps(out).encode())
        os._exit(0)
    os.close(wr)
    with os.fdopen(rd, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="150000", help="ops per history, comma-separated")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1, help="the first seed")
    ap.add_argument("--shape", action="append", choices=sorted(SHAPES), help="default: both")
    ap.add_argument("--kind", action="append", choices=["valid", "stale"], help="default: both")
    ap.add_argument("--time-limit", type=float, default=60.0, help="the check's (wall) limit")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = args.shape or sorted(SHAPES)
    kinds = args.kind or ["valid", "stale"]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tally: Counter[tuple[int, str, str, object]] = Counter()
    worst: dict[tuple[int, str], float] = {}
    for n in sizes:
        for seed in range(args.seed, args.seed + args.seeds):
            for shape in shapes:
                for kind in kinds:
                    t0 = time.process_time()
                    h, _ = crash_cliff.history(
                        n, 5, 0, kind == "stale", seed=seed, shape=SHAPES[shape]
                    )
                    made = time.process_time() - t0
                    gc.collect()
                    got = _check_in_child(h, args.time_limit)
                    del h
                    expect = kind == "valid"
                    tally[(n, shape, kind, got.get("valid"))] += 1
                    worst[(n, shape)] = max(worst.get((n, shape), 0.0), got.get("cpu", 0.0))
                    print(
                        f"{n} {shape} {kind} seed {seed}: {got.get('valid')} "
                        f"({'right' if got.get('valid') == expect else 'NOT ' + str(expect)}) "
                        f"by {got.get('decided_by')}, check cpu {got.get('cpu', 0):.2f} s, "
                        f"peak {got.get('peak_mib', 0):.0f} MiB, at the start "
                        f"{got.get('start_mib', 0):.0f} MiB (generated in {made:.1f} s)"
                        + (
                            f"; k {got['k']}: {got['reason']}"
                            if got.get("valid") == "unknown"
                            else ""
                        )
                    )
                    sys.stdout.flush()
    for (n, shape, kind, verdict), count in sorted(tally.items(), key=str):
        print(f"{n} {shape} {kind}: {verdict} x{count}")
    for (n, shape), cpu in sorted(worst.items()):
        print(f"{n} {shape}: worst check cpu {cpu:.2f} s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
