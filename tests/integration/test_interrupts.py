"""Ctrl-C and SIGTERM in the middle of a run leave nothing behind (and heal every fault)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from zkjepsen.docker import resources

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]


@pytest.fixture(autouse=True)
def _sigint_not_ignored():
    """Under a CI runner that started us in the background SIGINT is ignored, and the runs we
    start would inherit that (and rightly ignore the SIGINT this test sends)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _wait_for_new_run(client, proc: subprocess.Popen, role: str, count: int, timeout: float = 90):
    """The run `proc` started, once it has `count` `role` containers. Found by its owner (the
    process's pid in the run's labels), never as "a new run": on a shared engine another
    user's run may start meanwhile (this test once signalled, and once removed the servers of,
    someone else's run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        for rid, run in resources.find_runs(client).items():
            if not any(o.split(":")[0] == str(proc.pid) for o in run.owners):
                continue
            roles = [c["Labels"].get(resources.ROLE_LABEL) for c in run.containers]
            if roles.count(role) >= count:
                return rid
        time.sleep(0.2)
    pytest.fail(f"no run of pid {proc.pid} with {count} {role} containers within {timeout}s")


def _faulty_run_signalled(sig, docker_client, tmp_path) -> dict:
    """A faulty `zkjepsen test` sent `sig` in its main phase: what it said and what is left."""
    proc = subprocess.Popen(
        [
            *ZKJEPSEN,
            "test",
            "--recipe",
            "kazoo",
            "--workload",
            "lock",
            "--nemesis",
            "partition-halves",
            "--nodes",
            "3",
            "--clients",
            "3",
            "--time-limit",
            "120",
            "--store",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id = _wait_for_new_run(docker_client, proc, "client", 3)
        time.sleep(4)  # into the main phase, clients running (a partition may be in place)
    except BaseException:
        if proc.poll() is None:  # it tears its run down
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=240)
        raise
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    (run_dir,) = tmp_path.glob("*/latest")
    analyze = subprocess.run(
        [*ZKJEPSEN, "analyze", str(run_dir)], capture_output=True, text=True, timeout=300
    )
    return {
        "run_id": run_id,
        "returncode": proc.returncode,
        "err": err,
        "containers": docker_client.containers.list(all=True, filters=flt, ignore_removed=True),
        "networks": docker_client.networks.list(filters=flt),
        "scratch": (resources.SCRATCH_ROOT / run_id).exists(),
        "analyze": analyze,
    }


def _bench():
    """benchmarks/interrupts.py: one interrupted run and the tally of what it left."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "interrupts.py"
    spec = importlib.util.spec_from_file_location("zkjepsen_bench_interrupts", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


DURING = [signal.SIGINT, signal.SIGTERM]
SECOND = [
    (signal.SIGINT, signal.SIGINT, "teardown"),  # a second Ctrl-C while tearing down
    (signal.SIGTERM, signal.SIGINT, "main"),  # faults active, then Ctrl-C during the teardown
]
AFTER = [(signal.SIGTERM, 143), (signal.SIGINT, 130)]


@pytest.fixture(scope="module")
def interrupted(docker_client, zk_image, tmp_path_factory):
    """The signalled runs of the parametrized tests below, two at a time (as
    benchmarks/interrupts.py runs them; each watched by its own pid and run id): each test
    asserts on its own run's outcome, an exception in its thread included. Returns
    {(test, param): (outcome or exception, its folder)}."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    bench = _bench()
    jobs = {}
    for sig in DURING:
        jobs["during", sig] = lambda d, sig=sig: _faulty_run_signalled(sig, docker_client, d)
    for first, second, moment in SECOND:
        rng = random.Random()
        delay = rng.uniform(0.0, 0.8) if moment == "teardown" else rng.uniform(1.0, 4.0)
        after = rng.uniform(0.1, 1.0)
        jobs["second", first, second, moment] = (
            lambda d, a=(first, moment, delay, second), after=after: bench.interrupted_run(
                docker_client, d, *a, second_after_s=after
            )
        )
    for sig, _ in AFTER:
        jobs["after", sig] = lambda d, sig=sig: bench.interrupted_run(
            docker_client, d, sig, "report", 0.0, None, nemesis="none", time_limit=3
        )
    folders = {key: tmp_path_factory.mktemp("interrupted") for key in jobs}

    def one(key):
        try:
            return jobs[key](folders[key])
        except BaseException as e:  # noqa: BLE001 - the test of this run raises it
            return e

    old = signal.signal(signal.SIGINT, signal.default_int_handler)  # see _sigint_not_ignored
    try:
        with ThreadPoolExecutor(2) as pool:
            done = dict(zip(jobs, pool.map(one, jobs), strict=True))
    finally:
        signal.signal(signal.SIGINT, old)
    return {key: (done[key], folders[key]) for key in jobs}


def _outcome(interrupted, *key):
    out, folder = interrupted[key]
    if isinstance(out, BaseException):
        raise out
    return out, folder


@pytest.mark.parametrize("sig", DURING)
def test_signal_during_a_faulty_run_removes_everything(sig, interrupted):
    out, _ = _outcome(interrupted, "during", sig)
    run_id, err = out["run_id"], out["err"]
    assert out["returncode"] != 0
    assert "Traceback" not in err
    assert out["containers"] == []
    assert out["networks"] == []
    assert not out["scratch"]
    assert f"everything run {run_id} started was removed" in err
    analyze = out["analyze"]
    assert analyze.returncode in (0, 1, 2), analyze.stderr  # a verdict from what was recorded


def _assert_clean_and_analyzable(out):
    assert out.run_id, out
    assert "traceback on stderr" not in out.notes, out
    assert (out.containers, out.networks, out.scratch, out.rules) == (0, 0, False, 0), out
    assert out.analyzable, out
    assert out.returncode in (130, 143), out
    if "removed" in out.message:  # the claim is checked against the engine before it is made
        assert f"everything run {out.run_id} started was removed" in out.message, out


@pytest.mark.parametrize(("first", "second", "moment"), SECOND)
def test_a_second_signal_cannot_interrupt_the_teardown(first, second, moment, interrupted):
    out, _ = _outcome(interrupted, "second", first, second, moment)
    _assert_clean_and_analyzable(out)


def test_cluster_down_without_a_run_id_never_removes_a_test_run(docker_client, zk_image, tmp_path):
    import os

    cfg = tmp_path / "t.toml"
    cfg.write_text("recovery_s = 1.0\n")
    proc = subprocess.Popen(
        [
            *ZKJEPSEN,
            "test",
            "--recipe",
            "kazoo",
            "--workload",
            "lock",
            "--nodes",
            "3",
            "--clients",
            "2",
            "--time-limit",
            "300",  # longer than the checks below take on a loaded machine; ended by SIGINT
            "--config",
            str(cfg),
            "--store",
            str(tmp_path / "store"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_id = _wait_for_new_run(docker_client, proc, "client", 2)
    # Another scratch root hides other users' `cluster up` clusters from this `cluster down`,
    # so the test can never take one of theirs down; the test run itself is on the engine.
    env = {**os.environ, "ZKJEPSEN_SCRATCH": str(tmp_path / "scratch")}
    down = subprocess.run(
        [*ZKJEPSEN, "cluster", "down"], capture_output=True, text=True, env=env, timeout=60
    )
    assert down.returncode == 254, down.stderr
    named = subprocess.run(
        [*ZKJEPSEN, "cluster", "down", run_id], capture_output=True, text=True, timeout=60
    )
    assert named.returncode == 254 and "running zkjepsen process" in named.stderr, named.stderr
    status = subprocess.run(
        [*ZKJEPSEN, "cluster", "status"], capture_output=True, text=True, env=env, timeout=60
    )
    assert status.returncode == 254, status.stderr
    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    assert len(docker_client.containers.list(filters=flt)) == 5  # 3 servers, 2 clients
    # Left alone: still running, its own process ends it (an 8 s run once ended under a
    # loaded machine's slow `cluster down` calls, and the named one found no ensemble).
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    assert f"everything run {run_id} started was removed" in err, err
    assert docker_client.containers.list(all=True, filters=flt, ignore_removed=True) == []


def test_a_run_whose_servers_vanish_ends_promptly_with_a_sentence(
    docker_client, zk_image, tmp_path
):
    cfg = tmp_path / "t.toml"
    cfg.write_text("recovery_s = 1.0\n")
    proc = subprocess.Popen(
        [
            *ZKJEPSEN,
            "test",
            "--recipe",
            "kazoo",
            "--workload",
            "counter",
            "--nodes",
            "3",
            "--clients",
            "2",
            "--time-limit",
            "6",
            "--config",
            str(cfg),
            "--store",
            str(tmp_path / "store"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_id = _wait_for_new_run(docker_client, proc, "client", 2)
    # What someone else's `cluster down` did to a live test: its servers removed under it.
    for c in docker_client.containers.list(
        all=True,
        filters={"label": [f"{resources.RUN_LABEL}={run_id}", f"{resources.ROLE_LABEL}=server"]},
    ):
        c.remove(force=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 255 and "removed from outside this run" in err, err
    # Promptly: it saw the removal, no phase ran into its deadline (the final read's would have
    # logged "did not finish within"); how soon it ends is not asserted (load-dependent).
    logs = [err, *(p.read_text() for p in (tmp_path / "store").rglob("run.log"))]
    assert not [x for x in logs if "did not finish within" in x], logs
    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    assert docker_client.containers.list(all=True, filters=flt, ignore_removed=True) == []
    assert not (resources.SCRATCH_ROOT / run_id).exists()


@pytest.mark.parametrize(("sig", "code"), AFTER)
def test_a_signal_after_the_teardown_says_where_the_folder_is_and_analyze_finishes_it(
    sig, code, interrupted
):
    """Sent as soon as run.log says "ensemble torn down": the check and the reports were cut
    short. Before, SIGTERM there ended the process silently (143, no latency.png or rate.png)
    and SIGINT said only "zkjepsen: interrupted."."""
    out, tmp_path = _outcome(interrupted, "after", sig)
    if "exited before the signal" in out.notes:
        pytest.skip("the run finished its reports before the signal landed")
    assert out.returncode == code and "Traceback" not in out.stderr, out
    (run_dir,) = (tmp_path / "store").glob("*/latest")
    folder = str(run_dir.resolve())
    assert f"its folder {folder} has test.json, history.jsonl" in out.message, out.message
    assert f"`zkjepsen analyze {folder}` writes" in out.message, out.message
    missing = out.message.rpartition(" writes ")[2].split(", ")
    assert missing and set(missing) <= {"results.json", "timeline.html", "latency.png", "rate.png"}
    assert out.analyzable, out  # and the analyze that followed wrote what was missing:
    for name in ("results.json", "timeline.html", "latency.png", "rate.png"):
        assert (run_dir / name).stat().st_size > 0, name
