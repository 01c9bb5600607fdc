"""Client clock faults reach the program under test however it is started, and a fault counts
as landed only because its program's clock was seen moving (issue 47). One hand-written probe
program (tests/subjects/clockprobe/: Python, a static Go binary, Java) speaks the client wire
protocol and logs its own clock readings beside the real clock (a raw syscall, or /proc/uptime
for Java). Each way of starting it (a shell command line, an executable's #! line, a static Go
binary, a JVM) runs once on a one-server Redis, under a +3600 s `clock-skew-client` and
then a 4x `clock-rate-client`: the program's own log must show the clock moved as the fault
says, schedule.json's `clock_seen` (what the nemesis measured from the recorder's `clock`
events) must agree with that log within 1 %, and each fault must be landed. A run without
clock faults is the control: no launcher in the program's process tree, no `clock` event."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest

from zkjepsen.docker import resources
from zkjepsen.nemesis.generator import fault, final_heal, sleep, steps
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec
from zkjepsen.store import RunDir

PROBES = Path(__file__).resolve().parents[1] / "subjects" / "clockprobe"
OFFSET_S, RATE = 3600, 4.0
S = 1e9
MARGIN_NS = int(0.5 * S)  # a change reaches a program at its next reading: skip the edges
SKEW, FAST = "clock-skew-client", "clock-rate-client"
LAUNCHER = "zkj-timewarp"


def schedule():
    return steps(
        sleep(2),
        fault(SKEW, "client:1", 4, offset_s=OFFSET_S),
        sleep(1),
        fault(FAST, "client:1", 4, rate=RATE),
        final_heal(),
    )


def forms(go_dir: Path) -> dict[str, dict]:
    return {
        # shell syntax: a cd, an &&, a pipe (the shell forks python3 and cat). A plain
        # `python3 probe.py` goes through the same /bin/sh -c and exec of python3: one run per
        # mechanism (the control run below starts it that way, without faults).
        "shell": {"client_cmd": "cd /opt/zkjepsen/program && python3 probe.py | cat"},
        "exec": {"recipe": f"exec:{PROBES / 'probe.py'}"},  # its #! line: env, then python3
        "go": {"recipe": f"exec:{go_dir / 'probe-go'}"},  # a static Go binary (the vDSO)
        "java": {"client_cmd": "java Probe.java"},  # a JVM, its source launched as is
    }


@pytest.fixture(scope="module")
def go_build(docker_client, zk_image, tmp_path_factory):
    """probe.go built static (CGO_ENABLED=0) with Debian's Go, in a throwaway container of
    the client image (which has apt, not Go), the binary left in a directory of its own. Started
    at the module's first form and left to run (minutes: apt, then go build) while the forms
    before the Go one run; `go_probe` waits for it. (container, directory)"""
    out = tmp_path_factory.mktemp("probe-go")
    out.chmod(0o755)  # mounted as the program's directory: uid 65534 must read it
    run_id = resources.new_run_id()
    script = (
        "apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "
        "golang-go >/dev/null && cd /src && HOME=/tmp GOCACHE=/tmp/gocache CGO_ENABLED=0 "
        "go build -trimpath -o /out/probe-go probe.go && chmod 755 /out/probe-go"
    )
    try:
        box = docker_client.containers.run(
            zk_image,
            ["-c", script],
            entrypoint="/bin/sh",
            name=f"zkjepsen-{run_id}-gobuild",
            labels=resources.labels(run_id, "probe-build"),
            volumes={str(PROBES): {"bind": "/src", "mode": "ro"}, str(out): {"bind": "/out"}},
            user="0:0",
            detach=True,
        )
        yield box, out
    finally:
        resources.remove_run(docker_client, run_id)


@pytest.fixture(scope="module")
def go_probe(go_build) -> Path:
    box, out = go_build
    code = box.wait(timeout=600)["StatusCode"]
    assert code == 0, box.logs().decode()[-2000:]
    return out


RUNS: dict[str, Path] = {}


def run_form(name: str, how: dict, store_root: Path, clock_faults: bool = True) -> Path:
    """One short run of the probe started as `how` says; its folder."""
    if name in RUNS:
        return RUNS[name]
    spec = TestSpec(
        recipe=how.get("recipe", "exec"),
        client_cmd=how.get("client_cmd"),
        client_dir=str(PROBES) if "client_cmd" in how else None,
        backend="redis",
        workload="lock",
        clients=1,
        nemesis=[SKEW, FAST] if clock_faults else ["none"],
        time_limit_s=14 if clock_faults else 5,
        recovery_s=1,
        seed=1,
    )
    run = run_test(spec, store_root, gen=schedule() if clock_faults else None)
    RUNS[name] = Path(run.store_dir)
    return RUNS[name]


def probe_lines(folder: Path) -> tuple[list[tuple[int, int, int]], str]:
    """The program's own log: (real_boot_ns, wall_ns, mono_ns) rows, and its ancestry."""
    rows, tree = [], ""
    for line in RunDir(folder).client_log(1).read_text(errors="replace").splitlines():
        parts = line.split()
        if line.startswith("CLOCKPROBE ") and len(parts) == 4 and int(parts[1]) > 0:
            rows.append((int(parts[1]), int(parts[2]), int(parts[3])))
        elif line.startswith("CLOCKPROBE-TREE"):
            tree = line
    return rows, tree


def sleeps(folder: Path) -> list[tuple[int, int]]:
    """(real_boot_ns at its start, real ns it took) of each of the program's 0.5 s sleeps."""
    out = []
    for line in RunDir(folder).client_log(1).read_text(errors="replace").splitlines():
        parts = line.split()
        if line.startswith("CLOCKPROBE-SLEEP ") and len(parts) == 3:
            out.append((int(parts[1]), int(parts[2])))
    return out


def clock_events(folder: Path) -> list[dict]:
    history = RunDir(folder).client_history(1)
    records = [json.loads(x) for x in history.read_text().splitlines() if x.strip()]
    return [r for r in records if r.get("f") == "clock" and r.get("type") == "event"]


def real_clocks() -> tuple[int, int]:
    """This kernel's REALTIME - BOOTTIME and BOOTTIME - MONOTONIC (every container's too)."""
    b = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    r = time.clock_gettime_ns(time.CLOCK_REALTIME)
    m = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return r - b, b - m


def history_zero(events: list[dict]) -> int:
    """The history's time zero on the real monotonic clock, from the recorder's events (a
    sample's real reading is made before the event that carries it is stamped)."""
    return max(
        s[1] - e["time"]
        for e in events
        for s in e["value"].get("samples") or ()
        if s[0] == "monotonic"
    )


def window(rows, fault_rec: dict, t0: int, boot_minus_mono: int):
    """The program's rows read while `fault_rec` (schedule.json) was on, edges left out."""
    lo = t0 + fault_rec["applied_ns"] + MARGIN_NS + boot_minus_mono
    hi = t0 + fault_rec["end_ns"] - MARGIN_NS + boot_minus_mono
    return [r for r in rows if lo < r[0] < hi]


def check_form(folder: Path) -> dict:
    """The assertions every form shares; returns the figures for the probe table."""
    faults = {f["f"]: f for f in json.loads((folder / "schedule.json").read_text())["faults"]}
    rows, tree = probe_lines(folder)
    events = clock_events(folder)
    assert LAUNCHER in tree, tree  # the program runs under the launcher
    assert rows and events, (len(rows), len(events))
    real_minus_boot, boot_minus_mono = real_clocks()
    t0 = history_zero(events)

    def offset(r):  # the program's wall clock minus the real one, one row
        return (r[1] - (r[0] + real_minus_boot)) / S

    skew = faults[SKEW]
    before = [r for r in rows if r[0] < t0 + skew["start_ns"] + boot_minus_mono]
    assert before and all(abs(offset(r)) < 0.5 for r in before)  # real time until the fault
    skewed = window(rows, skew, t0, boot_minus_mono)
    assert len(skewed) >= 10, len(skewed)
    own_offset = statistics.median(offset(r) for r in skewed)
    assert abs(own_offset - OFFSET_S) <= max(0.01 * OFFSET_S, 0.05), own_offset
    seen = skew["detail"]["clock_seen"]["c1"]
    assert abs(seen["offset_s"] - own_offset) <= 0.01 * abs(own_offset), (seen, own_offset)
    assert skew["observed"]["landed"] is True, skew["observed"]

    fast = faults[FAST]
    ran = window(rows, fast, t0, boot_minus_mono)
    assert len(ran) >= 10, len(ran)
    own_rate = (ran[-1][2] - ran[0][2]) / (ran[-1][0] - ran[0][0])  # monotonic / real
    assert abs(own_rate - RATE) <= 0.01 * RATE, own_rate
    seen_rate = fast["detail"]["clock_seen"]["c1"]
    assert abs(seen_rate["rate"] - own_rate) <= 0.01 * own_rate, (seen_rate, own_rate)
    assert fast["observed"]["landed"] is True, fast["observed"]
    assert fast["detail"]["heal_step_s"] < 0  # the heal stepped the wall clock back
    lo = t0 + fast["applied_ns"] + boot_minus_mono
    slept = [round(d / S, 2) for at, d in sleeps(folder) if lo < at < lo + 4 * S]
    waited = [round((f["applied_ns"] - f["start_ns"]) / S, 2) for f in (skew, fast)]
    return {  # figures printed, not asserted: what a sleep took, how long seeing took
        "sleep_0.5s_at_x4": slept,
        "apply_waited_s": waited,
        "offset_log": round(own_offset, 3),
        "offset_seen": round(seen["offset_s"], 3),
        "rate_log": round(own_rate, 4),
        "rate_seen": round(seen_rate["rate"], 4),
        "via": seen["via"],
        "heal_step_s": fast["detail"]["heal_step_s"],
    }


@pytest.mark.parametrize("form", ["shell", "exec", "java", "go"])  # Go's build runs meanwhile
def test_a_client_clock_fault_reaches_the_program_however_it_is_started(
    form, request, redis_image, zk_image, tmp_path_factory, go_build
):
    go_dir = request.getfixturevalue("go_probe") if form == "go" else Path("/nonexistent")
    folder = run_form(form, forms(go_dir)[form], tmp_path_factory.mktemp(f"store-{form}"))
    figures = check_form(folder)
    print(f"\n{form}: {figures}")  # the probe table (pytest -s)


def test_a_run_without_clock_faults_has_no_launcher_and_no_clock_events(
    redis_image, zk_image, tmp_path_factory
):
    folder = run_form(
        "control",
        {"client_cmd": "python3 probe.py"},
        tmp_path_factory.mktemp("store-control"),
        clock_faults=False,
    )
    rows, tree = probe_lines(folder)
    assert rows and tree.startswith("CLOCKPROBE-TREE python3 probe.py")  # it ran, and logged
    assert LAUNCHER not in tree, tree
    assert clock_events(folder) == []
