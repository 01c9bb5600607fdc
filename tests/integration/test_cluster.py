"""`--cluster`: runs as tasks on a real local Dask cluster (tests/integration/dask_cluster.py),
one worker on the machine's engine and one in a second engine's own network namespace."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zkjepsen.docker import resources

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(TESTS / "integration"))
from bounded import until  # noqa: E402
from dask_cluster import Cluster, veth  # noqa: E402
from second_engine import NETNS, preload_image, second_engine_or_skip  # noqa: E402

pytest.importorskip("distributed")
pytestmark = pytest.mark.usefixtures("sigint_default")

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
ENV = {**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}"}
NOLOCK = "subjects.nolock:NoLock"
# kazoo holds, the lock that excludes nobody breaks: verdicts that do not depend on timing or on
# the engine (no fault fires in 4 s: the first comes after the 10 s interval). One server per
# ensemble: two runs at once on a 2-core machine.
CELLS = [
    "--recipes", f"kazoo,{NOLOCK}", "--nemeses", "none,kill-client", "--runs", "1",
    "--clients", "2", "--time-limit", "4", "--session-timeout", "3", "--nodes", "1",
    "--param", "writes=1",
]  # fmt: skip
EXPECTED = {
    "kazoo|none": 0,
    "kazoo|kill-client": 0,
    f"{NOLOCK}|none": 1,
    f"{NOLOCK}|kill-client": 1,
}


@pytest.fixture(scope="module")
def cluster(zk_image, tmp_path_factory):
    # One Dask cluster on this machine at a time: each has a veth into the second engine's
    # namespace with the same link-local addresses, and pytest-xdist may give this module's
    # tests to both workers. Two at once left one cluster's worker unable to reach its
    # scheduler (a suite run of 2026-11-27: two setup errors). The lock is held on this file,
    # which every checkout has, so that no file is created for it.
    with open(__file__) as me:
        fcntl.flock(me, fcntl.LOCK_EX)
        yield from _cluster(zk_image, tmp_path_factory)


def _cluster(zk_image, tmp_path_factory):
    with second_engine_or_skip(private_net=True) as url:
        preload_image(zk_image, url)
        c = Cluster(url, NETNS[url], tmp_path_factory.mktemp("dask"))
        with veth(c.netns):
            try:
                c.start_scheduler()
                c.start_worker("a")
                c.start_worker("b")
                c.wait_for_workers(2)
                yield c
            finally:
                c.stop_all()


def zkj(*argv: str, timeout: float = 300) -> tuple[int, str]:
    p = subprocess.run([*ZKJEPSEN, *argv], env=ENV, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def runs_on(url: str, pids: set[str] | None = None) -> list[str]:
    """Runs on the engine owned by one of `pids` (None: any, for the second engine)."""
    from zkjepsen.docker.engine import Engine

    engine = Engine.parse(url)
    found = resources.find_runs(engine.client(), engine.key)
    return sorted(
        r
        for r, v in found.items()
        if pids is None or any(o.split(":")[0] in pids for o in v.owners)
    )


def nothing_left(c: Cluster, timeout: float = 90) -> tuple[list[str], list[str]]:
    """(runs left on the machine's engine by worker a's processes, on the second engine),
    after giving teardowns that are under way `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = runs_on("default", c.trees["a"].pids), runs_on(c.engine2)
        if left == ([], []) or time.monotonic() > deadline:
            return left
        time.sleep(1)


def table_rows(md: Path) -> list[str]:
    return [line for line in md.read_text().splitlines() if line.startswith("| ")]


def test_a_matrix_over_both_workers_gives_the_parallel_table(cluster, tmp_path):
    # The local fan-out's matrix, the table to compare with, runs meanwhile, not after: its
    # runs are on the machine's engine but owned by its own process (not worker a's), and its
    # verdicts do not depend on timing (CELLS).
    local = subprocess.Popen(
        [*ZKJEPSEN, "matrix", *CELLS, "--parallel", "2", "--store", str(tmp_path / "p"),
         "--out", str(tmp_path / "p.md")],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out = ["--store", str(tmp_path / "c"), "--out", str(tmp_path / "c.md")]
        code, err = zkj("matrix", *CELLS, "--cluster", cluster.address, *out)
    finally:
        try:
            local_out = local.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            local.send_signal(signal.SIGINT)  # it tears its runs down
            local.communicate(timeout=240)
            raise
    assert code == 0, err
    cells = json.loads((tmp_path / "c.json").read_text())
    assert {k: c["invalid"] for k, c in cells.items()} == EXPECTED
    runs = json.loads((tmp_path / "c" / "matrix-runs.json").read_text())["runs"]
    # Both workers ran some: the one in the second engine's namespace with that engine.
    assert any(cluster.engine2 in r["engine"] for r in runs), runs
    assert any("/var/run/docker.sock" in r["engine"] for r in runs), runs
    for r in runs:  # every run's folder came back into the local store
        assert (tmp_path / "c" / r["store"] / "history.jsonl").exists()
    assert local.returncode == 0, "".join(local_out)
    assert table_rows(tmp_path / "c.md") == table_rows(tmp_path / "p.md")
    assert nothing_left(cluster, timeout=0) == ([], [])


def test_the_gate_runs_its_scenarios_as_tasks_and_the_first_split_ends_the_other(cluster, tmp_path):
    """kazoo's Lock: a holder pause splits it within seconds, and so, since the gate's leader
    kills wait for a whole ensemble and land on fresh holders, can a leader kill. Each scenario
    a task on its own worker; whichever split is confirmed first, the other run is asked
    (through the cluster) to end its main phase; both folders come back into the local store.
    Which one splits first is a race this test does not assert; how soon the other run ends is
    benchmarks/stop_early.py's figure, not an assertion here."""
    code, out = zkj(
        "gate", "--recipe", "kazoo", "--scenarios", "client-pause,leader-kill",
        "--time-limit", "60s", "--cluster", cluster.address, "--store", str(tmp_path / "g"),
    )  # fmt: skip
    assert code == 1, out
    rows = {x.split()[0]: x for x in out.splitlines() if x.startswith("  ")}
    early = {}
    for name in ("client-pause", "leader-kill"):
        assert "stopped" in rows[name] and "ran 60s" not in rows[name], out
        runs = (tmp_path / "g" / f"gate-{name}").iterdir()
        (run,) = [p for p in runs if p.is_dir() and not p.is_symlink()]
        early[name] = json.loads((run / "results.json").read_text())["early_stop"]
        assert early[name]["stopped_early"], early
        assert early[name]["reason"] in ("asked", "violation"), early
    # The ask exists only once some run confirmed a violation: so at least one run stopped on
    # its own violation, and its row is INVALID with that violation named.
    split = [name for name, e in early.items() if e["reason"] == "violation"]
    assert split, early
    for name in split:
        assert "INVALID" in rows[name] and early[name]["violation"]["kind"] in rows[name], out
    assert nothing_left(cluster) == ([], [])


def _start(cluster, tmp_path: Path, time_limit: str) -> subprocess.Popen:
    cells = [*CELLS]
    cells[cells.index("--time-limit") + 1] = time_limit
    return subprocess.Popen(
        [*ZKJEPSEN, "matrix", *cells, "--cluster", cluster.address,
         "--store", str(tmp_path / "s"), "--out", str(tmp_path / "s.md")],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for_runs_on_both(cluster, proc, timeout: float = 120) -> None:
    def started() -> bool:
        assert proc.poll() is None, proc.communicate()
        return bool(runs_on("default", cluster.trees["a"].pids) and runs_on(cluster.engine2))

    until(started, what="no run started on both workers", bound_s=timeout)
    time.sleep(5)  # into the runs: clusters up, clients on their way


def test_ctrl_c_on_the_submitter_leaves_nothing_on_either_engine(cluster, tmp_path):
    proc = _start(cluster, tmp_path, "60")
    _wait_for_runs_on_both(cluster, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, out + err
    # The submitter waited for each worker's teardown: nothing left already.
    assert nothing_left(cluster, timeout=0) == ([], []), err


def test_a_lost_worker_and_the_matrix_still_completes(cluster, tmp_path):
    # CELLS' 4 s main phase: the kill lands mid-run all the same, 5 s after the servers of a
    # run on each worker exist (its clients have yet to start, then 4 s of main phase and the
    # matrix's 5 s of recovery).
    proc = _start(cluster, tmp_path, "4")
    _wait_for_runs_on_both(cluster, proc)
    cluster.kill("b")  # SIGKILL, mid-run: its run goes to worker a
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    cells = json.loads((tmp_path / "s.json").read_text())
    assert {k: c["invalid"] for k, c in cells.items()} == EXPECTED, err
    # The killed worker's run tore itself down (its parent gone) and removed its scratch.
    assert nothing_left(cluster) == ([], [])
    assert not list(Path("/tmp").glob("zkjepsen-dask-*"))


def test_the_local_fan_out_it_reuses_tears_down_when_its_matrix_is_killed(zk_image, tmp_path):
    """SIGKILL of `matrix --parallel 2` (no cluster): each run's process learns its parent is
    gone (PDEATHSIG, and the parent watch a Dask worker's runs rely on) and tears its run down.
    (Was test_engines.py's, for two engines; one engine now.)"""
    from tracked import Descendants

    cells = [*CELLS]
    cells[cells.index("--time-limit") + 1] = "60"
    proc = subprocess.Popen(
        [*ZKJEPSEN, "matrix", *cells, "--parallel", "2", "--store", str(tmp_path / "k"),
         "--out", str(tmp_path / "k.md")],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    tree = Descendants(proc.pid)

    def two_started() -> bool:
        assert proc.poll() is None, "the matrix ended before two runs started"
        return len(runs_on("default", tree.pids)) >= 2

    until(two_started, what="two runs never started", bound_s=120)
    time.sleep(3)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 90
    while runs_on("default", tree.pids) and time.monotonic() < deadline:
        time.sleep(1)
    tree.stop()
    assert runs_on("default", tree.pids) == []
    # Nor the fan-out's folder of job and result files: the last orphaned run removes it once
    # its teardown is over (moments after its containers are gone).
    deadline = time.monotonic() + 20
    while (mine := pool_dirs_of(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert mine == [], [sorted(x.name for x in p.iterdir()) for p in mine]


def pool_dirs_of(parent: int) -> list[Path]:
    """The fan-out folders (run/fanout.py's Pool) whose runs were started by process `parent`."""
    out = []
    for pool in Path(tempfile.gettempdir()).glob("zkjepsen-fanout-*"):
        for f in pool.glob("job-*.json"):
            try:
                if f'"parent": {parent},' in f.read_text(errors="replace"):
                    out.append(pool)
                    break
            except OSError:
                continue  # removed while we looked
    return out
