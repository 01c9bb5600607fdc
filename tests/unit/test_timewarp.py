"""zkj-timewarp's control lines (docker/timewarp.py), and the launcher itself on this machine
when a C compiler is here (the same build the images run; no Docker)."""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hostile import cpu_bounded

from zkjepsen.docker import timewarp as tw
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis.clock import Bump, Rate

S = 1_000_000_000
REAL = [tw.IDENTITY] * 3
SRC = Path(tw.__file__).resolve().parents[1] / "client" / "drivers" / "timewarp"


def test_a_step_moves_the_wall_clock_only_and_the_heal_steps_it_back():
    now = [100 * S, 50 * S, 60 * S]
    bumped = tw.lines_for(REAL, "+3600", now)
    assert tw.reading(bumped[0], now[0] + S) == now[0] + 3601 * S
    assert bumped[1:] == REAL[1:]
    healed = tw.lines_for(bumped, "+0", [t + 2 * S for t in now])
    assert healed == REAL


def test_a_rate_is_continuous_and_its_heal_never_steps_the_monotonic_clock_back():
    now = [100 * S, 50 * S, 60 * S]
    fast = tw.lines_for(REAL, "+0 x4", now)
    later = [t + 10 * S for t in now]
    assert [tw.reading(ln, t) for ln, t in zip(fast, later, strict=True)] == [
        t + 40 * S for t in now
    ]
    normal = tw.lines_for(fast, "+0 x1", later)  # back to 1x: the lead (30 s) stays
    assert tw.reading(normal[1], later[1]) == now[1] + 40 * S
    healed = tw.lines_for(normal, "+0", later)
    mono = healed[1]
    readings = [tw.reading(mono, later[1] + k * S) for k in range(0, 100, 5)]
    assert readings == sorted(readings)  # never backward
    assert readings[0] == later[1] + 30 * S  # no step at the heal
    assert tw.reading(mono, later[1] + 61 * S) == later[1] + 61 * S  # caught up: real again
    assert healed[0] == tw.IDENTITY  # the wall clock is stepped back (the nemesis asks)


def test_bad_specs_and_rates_are_refused():
    with pytest.raises(ValueError):
        tw.parse("+five")
    with pytest.raises(ValueError):
        tw.lines_for(REAL, "+0 x0", [0, 0, 0])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler on this machine (the images compile it themselves)")
    out = tmp_path_factory.mktemp("timewarp")
    subprocess.run(["sh", str(SRC / "build.sh"), str(out)], check=True, capture_output=True)
    return out


def _probe(built: Path, control: Path, count: int, ms: int) -> list[list[int]]:
    run = subprocess.run(
        [str(built / "zkj-timewarp"), str(control), str(built / "clockprobe"), str(count), str(ms)],
        capture_output=True,
        text=True,
        **cpu_bounded(30),  # a hang fails; a busy machine does not
    )
    assert run.returncode == 0, run.stderr
    return [[int(x) for x in line.split()] for line in run.stdout.splitlines()]


def test_the_launcher_skews_a_c_program_through_its_vdso_and_follows_a_change(built, tmp_path):
    control = tmp_path / "ctl"
    tw.blank(control)
    before = time.clock_gettime_ns(time.CLOCK_REALTIME)
    (row,) = _probe(built, control, 1, 0)
    after = time.clock_gettime_ns(time.CLOCK_REALTIME)
    raw = row[0]
    assert before <= row[1] <= after  # real time, through the patched vDSO
    tw.apply(control, "+3600")
    before = time.clock_gettime_ns(time.CLOCK_REALTIME)
    (row,) = _probe(built, control, 1, 0)
    after = time.clock_gettime_ns(time.CLOCK_REALTIME)
    ahead = 3600 * S
    assert before + ahead <= row[1] <= after + ahead  # clock_gettime(REALTIME)
    assert (before + ahead) // S <= row[5] <= (after + ahead) // S  # time()
    assert (before + ahead) // 1000 <= row[4] <= (after + ahead) // 1000  # gettimeofday()
    tw.apply(control, "+0 x1")
    tw.apply(control, "+0")

    def change():
        time.sleep(0.5)
        tw.apply(control, "+0 x5")

    threading.Thread(target=change).start()
    rows = _probe(built, control, 12, 100)  # ~1.2 s: the rate lands mid-run
    first, last = rows[0], rows[-1]
    real = last[0] - first[0]
    mono = last[2] - first[2]
    assert mono > 2 * real, (mono, real)  # a rate of 5 for more than half the time
    assert all(b[2] >= a[2] for a, b in zip(rows, rows[1:], strict=False))
    assert raw > 0


def test_the_launcher_refuses_a_file_that_is_not_a_control_file(built, tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("+5\n")
    run = subprocess.run(
        [str(built / "zkj-timewarp"), str(bad), "true"], capture_output=True, text=True
    )
    assert run.returncode == 254 and "not a clock control file" in run.stderr


def test_a_clock_fault_takes_its_magnitude_from_the_runs_params():
    env = g.Env(fault_params={"offset_s": 3600.0})
    gen = g.standard(["clock-bump"], time_limit_s=30, interval_s=5)
    planned = [p for p in g.plan(gen, 1, env) if isinstance(p, g.Fault) and p.f == "clock-bump"]
    assert planned and all(p.params == {"offset_s": 3600.0} for p in planned)
    assert Bump().detail(planned[0].params, random.Random(1)) == {"offset_s": 3600}
    assert Rate().detail({"rate": 2.5}, random.Random(1)) == {"rate": 2.5}


@pytest.mark.parametrize(
    ("nemesis", "warped"),
    [
        (["clock-bump"], True),
        (["kill-one", "clock-rate-leader"], True),
        (["kill-one"], False),
        (["none"], False),
    ],
)
def test_servers_start_under_the_launcher_only_in_a_run_that_plans_a_server_clock_fault(
    tmp_path, monkeypatch, nemesis, warped
):
    """The image's entrypoint execs zkj-timewarp only if the control file is there: a run
    without a server clock fault pays nothing (issue 47: every etcd and Redis server ran under
    it, at ~1 µs per clock read)."""
    from zkjepsen.docker import resources
    from zkjepsen.docker.cluster import Node
    from zkjepsen.run.resolve import resolve
    from zkjepsen.run.spec import TestSpec

    monkeypatch.setattr(resources, "SCRATCH_ROOT", tmp_path / "scratch")
    test = resolve(TestSpec(recipe="redis-set-px", nemesis=nemesis))
    backend = test.make_backend(
        tmp_path / "store", client=None, engine="docker", server_image="s", client_image="c"
    )
    node = Node("n1", 1, "10.0.0.1", 6379)
    backend.clock_files(node)
    assert backend.timewarp_file(node).exists() is warped
    page = backend.clock_page(node)
    assert (page is not None and page.parent.is_dir()) is warped
    backend.clock_files(Node("s1", 31, "10.0.0.31", 26379), server=False)  # a Sentinel
    assert not backend.timewarp_file(Node("s1", 31, "10.0.0.31", 26379)).exists()

    # A power loss's halt: SIGSTOP to PID 1 would stop only the launcher (its tracee runs on).
    sent: list[str] = []

    class Container:
        def kill(self, signal: str) -> None:
            sent.append(signal)

    monkeypatch.setattr(backend, "_container", lambda n: Container())
    backend.halt(node)
    assert sent == (["SIGPWR"] if warped else ["SIGSTOP"])


def test_the_observation_page_reads_as_its_layout_says(tmp_path):
    """docker/timewarp.observed against a page written by hand in timewarp.h's layout: a slot
    held by a writer is not read, an exec the launcher could not reach is `missed`, the ring
    keeps the last 32 injections in order."""
    page = bytearray(4096)
    tw.SEEN_HEAD.pack_into(page, 0, tw.SEEN_MAGIC, 34)
    tw.SLOT.pack_into(page, tw.SEEN_HEAD.size, 0, 4, 10 * S, 3610 * S, 7)  # realtime
    tw.SLOT.pack_into(page, tw.SEEN_HEAD.size + tw.SLOT.size, 1, 4, 5, 6, 1)  # monotonic: busy
    ring = tw.SEEN_HEAD.size + 3 * tw.SLOT.size
    for k in range(34):
        pid = -(100 + k) if k == 33 else 100 + k
        tw.INJECTED.pack_into(page, ring + (k % 32) * tw.INJECTED.size, pid, b"/bin/p%d" % k)
    path = tmp_path / "seen"
    path.write_bytes(bytes(page))
    seen = tw.observed(path)
    assert seen.clocks == {"realtime": tw.Reading(4, 10 * S, 3610 * S, 7)}
    assert seen.clocks["realtime"].offset_ns == 3600 * S
    assert seen.injections == 34
    assert seen.injected == tuple((100 + k, f"/bin/p{k}") for k in range(2, 33))
    assert seen.missed == ((133, "/bin/p33"),)
    assert tw.observed(tmp_path / "not-yet") == tw.Seen({}, (), (), 0)
    (tmp_path / "bad").write_bytes(b"x" * 4096)
    with pytest.raises(ValueError):
        tw.observed(tmp_path / "bad")
