"""Interrupted runs leave nothing behind and stay analyzable: N `zkjepsen test` runs, each sent
SIGINT or SIGTERM at a random moment (during start-up, the main phase with faults active, the
teardown, or the check and reports after it), some with a second signal 0.1-1 s after the
first; then a tally of what the engine and the host still hold of each run and how many
`zkjepsen analyze` could judge.

    .venv/bin/python benchmarks/interrupts.py [--runs 20] [--parallel 2] [--seed 1]

Only the runs this script starts are looked at (by their run id and owner pid).
"""

from __future__ import annotations

import argparse
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from zkjepsen.docker import resources

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
# Short phases so that one run takes ~15 s: the main phase, little recovery, a fault every 2 s.
CONFIG = """recovery_s = 1.0
interval_s = 1.5
fault_duration_s = 2.0
"""
MOMENTS = ("startup", "main", "teardown", "report")


@dataclass
class Outcome:
    sig: str
    moment: str
    delay_s: float
    second: str | None
    run_id: str | None = None
    returncode: int | None = None
    message: str = ""
    containers: int = 0
    networks: int = 0
    scratch: bool = False
    rules: int = 0
    analyzable: bool | None = None  # None: no run dir (interrupted before it existed)
    verdict_code: int | None = None
    notes: list[str] = field(default_factory=list)
    stderr: str = ""

    @property
    def clean(self) -> bool:
        return not (self.containers or self.networks or self.scratch or self.rules)


def _run_log(store: Path) -> str:
    logs = list(store.glob("*/latest/run.log"))
    return logs[0].read_text() if logs else ""


def _wait_for(store: Path, pattern: str, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if re.search(pattern, _run_log(store)):
            return True
        time.sleep(0.02)
    return False


def host_rules(run_id: str) -> int:
    """iptables rules on the host naming the run (the nemesis puts its own in the containers'
    namespaces, which die with them; this proves none leaked to the host)."""
    try:
        out = subprocess.run(["iptables-save"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(run_id in line for line in out.splitlines())


def interrupted_run(
    client,
    workdir: Path,
    sig: signal.Signals,
    moment: str,
    delay_s: float,
    second: signal.Signals | None,
    second_after_s: float = 0.5,
    nemesis: str = "partition-halves,pause-client",
    time_limit: float = 6,
) -> Outcome:
    """One `zkjepsen test`, interrupted at `moment` + `delay_s` (+ `second` after
    `second_after_s`); then what is left of it and whether `analyze` judges it."""
    out = Outcome(sig.name, moment, delay_s, second.name if second else None)
    workdir.mkdir(parents=True, exist_ok=True)
    store = workdir / "store"
    cfg = workdir / "test.toml"
    cfg.write_text(CONFIG)
    proc = subprocess.Popen(
        [
            *ZKJEPSEN,
            "test",
            "--recipe",
            "kazoo",
            "--workload",
            "lock",
            "--nemesis",
            nemesis,
            "--nodes",
            "3",
            "--clients",
            "2",
            "--time-limit",
            str(time_limit),
            "--session-timeout",
            "3s",
            "--config",
            str(cfg),
            "--store",
            str(store),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    anchor = {
        "startup": None,
        "main": r"clients started",
        "teardown": r"tearing down",
        "report": r"ensemble torn down",  # the check and the reports follow
    }[moment]
    if anchor and not _wait_for(store, anchor, proc, 120):
        out.notes.append(f"never reached {moment!r}")
    time.sleep(delay_s)
    if proc.poll() is None:
        proc.send_signal(sig)
        if second is not None:
            time.sleep(second_after_s)
            if proc.poll() is None:
                proc.send_signal(second)
            else:
                out.notes.append("exited before the second signal")
    else:
        out.notes.append("exited before the signal")
    try:
        _, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        out.notes.append("did not exit within 240 s of the signal")
    out.returncode = proc.returncode
    out.message = (err.strip().splitlines() or [""])[-1]
    out.stderr = err
    if "Traceback" in err:
        out.notes.append("traceback on stderr")
    m = re.search(r"run (zkj-\S+): starting", _run_log(store))
    out.run_id = m.group(1) if m else None
    # The run's resources by run id, and by owner pid (in case the log line never came).
    owner = f"{proc.pid}:"
    for c in client.api.containers(all=True, filters={"label": resources.RUN_LABEL}):
        labels = c.get("Labels") or {}
        if labels.get(resources.RUN_LABEL) == out.run_id or labels.get(
            resources.OWNER_LABEL, ""
        ).startswith(owner):
            out.containers += 1
    for n in client.networks.list(filters={"label": resources.RUN_LABEL}):
        labels = n.attrs.get("Labels") or {}
        if labels.get(resources.RUN_LABEL) == out.run_id or labels.get(
            resources.OWNER_LABEL, ""
        ).startswith(owner):
            out.networks += 1
    if out.run_id:
        out.scratch = (resources.SCRATCH_ROOT / out.run_id).exists()
        out.rules = host_rules(out.run_id)
    run_dirs = list(store.glob("*/latest"))
    if run_dirs:
        a = subprocess.run(
            [*ZKJEPSEN, "analyze", str(run_dirs[0])], capture_output=True, text=True, timeout=300
        )
        out.verdict_code = a.returncode
        out.analyzable = a.returncode in (0, 1, 2)
        if not out.analyzable:
            out.notes.append(f"analyze: {(a.stderr.strip().splitlines() or [''])[-1]}")
    return out


def plan(n: int, rng: random.Random) -> list[dict]:
    """n interrupts: every moment, both signals, every third one doubled."""
    runs = []
    for i in range(n):
        moment = MOMENTS[i % len(MOMENTS)]
        delay = {
            "startup": rng.uniform(0.5, 9.0),
            "main": rng.uniform(0.0, 6.0),
            "teardown": rng.uniform(0.0, 1.5),
            "report": rng.uniform(0.0, 0.5),
        }[moment]
        runs.append(
            {
                "sig": rng.choice([signal.SIGINT, signal.SIGTERM]),
                "moment": moment,
                "delay_s": round(delay, 2),
                "second": (rng.choice([signal.SIGINT, signal.SIGTERM]) if i % 3 != 1 else None),
                "second_after_s": round(rng.uniform(0.1, 1.0), 2),
            }
        )
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    # Started in the background (`cmd &`), this process ignores SIGINT and so would every run
    # it starts: they would rightly ignore the SIGINTs sent to them.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    client = resources.docker_client()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="zkjepsen-interrupts-"))
    runs = plan(args.runs, random.Random(args.seed))
    t0 = time.monotonic()

    def one(i: int) -> Outcome:
        return interrupted_run(client, root / f"run{i:02d}", **runs[i])

    with ThreadPoolExecutor(args.parallel) as pool:
        outcomes = list(pool.map(one, range(len(runs))))
    for i, o in enumerate(outcomes):
        second = f" + {o.second} after {runs[i]['second_after_s']:.2f}s" if o.second else ""
        print(
            f"{i:2d} {o.sig:7s} {o.moment:8s} +{o.delay_s:4.2f}s{second:28s} "
            f"exit {o.returncode}  left c{o.containers} n{o.networks} "
            f"s{int(o.scratch)} r{o.rules}  analyze {o.verdict_code}  {o.run_id or '-'}"
            + (f"  [{'; '.join(o.notes)}]" if o.notes else "")
        )
    with_dir = [o for o in outcomes if o.analyzable is not None]
    tracebacks = sum("traceback on stderr" in o.notes for o in outcomes)
    print(
        f"\n{len(outcomes)} interrupted runs in {time.monotonic() - t0:.0f} s "
        f"({sum(o.second is not None for o in outcomes)} with a second signal); left behind: "
        f"{sum(o.containers for o in outcomes)} containers, "
        f"{sum(o.networks for o in outcomes)} networks, "
        f"{sum(o.scratch for o in outcomes)} scratch dirs, "
        f"{sum(o.rules for o in outcomes)} host iptables rules; "
        f"analyzable {sum(bool(o.analyzable) for o in with_dir)}/{len(with_dir)} "
        f"(runs with a run dir); tracebacks {tracebacks}"
    )
    print(f"store: {root}")


if __name__ == "__main__":
    main()
