"""Runs on an engine this machine cannot reach: each goes into a controller container there.

The engine is a second, real `dockerd` in its own network AND mount namespace
(tests/second_engine.py, `private_net=True`): no address of its containers is routed from here
(proved below) and none of our files exists for it, as for an engine on another host. Each run
goes into a controller container on it (run/controller.py); the run's folder comes back.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from zkjepsen.docker import resources
from zkjepsen.run import controller

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from second_engine import second_engine_or_skip  # noqa: E402
from test_engines import ENV, NOLOCK, Tracked, client_of, leftovers, matrix_on_both, zkj  # noqa: E402

SHORT = ["--nodes", "3", "--clients", "2", "--time-limit", "8", "--session-timeout", "3"]
COPIED = "files: copied (engine shares no filesystem)"


pytestmark = pytest.mark.usefixtures("sigint_default")


@pytest.fixture(scope="module")
def remote(zk_image):
    with second_engine_or_skip(private_net=True) as url:
        yield url


def _token_from(url: str, image: str) -> bytes:
    """A container on `url` serves a token on TCP 7777: what this machine reads from its IP.
    (Not a bare connect: this machine's egress accepts any TCP connection to any address.)"""
    client = client_of(url)
    run_id = resources.new_run_id()
    serve = (
        "import socket; s=socket.socket(); s.bind(('',7777)); s.listen()\n"
        "while True: c,_=s.accept(); c.sendall(b'zkj-token'); c.close()"
    )
    try:
        cid = client.api.create_container(
            image,
            name=f"{run_id}-reach",
            entrypoint=["python3", "-c", serve],
            labels=resources.labels(run_id, "probe"),
        )["Id"]
        client.api.start(cid)
        ip = client.api.inspect_container(cid)["NetworkSettings"]["IPAddress"]
        got = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not got:
            try:
                with socket.create_connection((ip, 7777), timeout=2) as s:
                    s.settimeout(2)
                    got = s.recv(64)
            except OSError:
                time.sleep(0.3)
        return got
    finally:
        resources.remove_run(client, run_id)


def test_the_runner_cannot_reach_its_containers_and_so_uses_a_controller(remote):
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker.engine import Engine, provide_image

    image = provide_image([Engine.parse(remote)], recipe=zookeeper_recipe())
    assert _token_from("default", image) == b"zkj-token"  # the method works here...
    assert _token_from(remote, image) == b""  # ...and that engine's containers are out of reach
    assert controller.wanted(Engine.parse(remote)) is True
    assert controller.wanted(Engine()) is False


def _run_folder(store: Path) -> Path:
    (run,) = store.glob("*/latest")
    return run.resolve()


def test_lock_runs_there_have_their_verdicts_and_whole_folders_here(remote, tmp_path):
    faults = tmp_path / "faults.toml"
    faults.write_text("interval_s = 2\nfault_duration_s = 3\n")  # faults within 8 s
    cases = (("kazoo", "pause-client"), (NOLOCK, "none"))

    def argv(recipe: str, nemesis: str) -> list[str]:
        return ["test", "--engine", remote, "--recipe", recipe, "--workload", "lock",
                "--nemesis", nemesis, "--config", str(faults), *SHORT,
                "--store", str(tmp_path / recipe)]  # fmt: skip

    # Both at once, as a matrix would run them: each gets its own controller (CI's minutes).
    started = {recipe: Tracked(argv(recipe, nemesis)) for recipe, nemesis in cases}
    for recipe, _ in cases:
        code, err = started[recipe].communicate(300)
        run = _run_folder(tmp_path / recipe)
        valid = json.loads((run / "results.json").read_text())["valid"]
        assert "controller: verdict" in err and COPIED in (run / "run.log").read_text(), err
        assert json.loads((run / "test.json").read_text())["engine"] == remote
        if recipe == NOLOCK:
            assert (code, valid) == (1, False), err
        else:
            # A paused holder may or may not split kazoo's lock in 8 s; the verdict is the
            # checker's on a real history, and the faults really ran there.
            assert code == {True: 0, False: 1}[valid], err
            faults_run = [json.loads(line) for line in open(run / "nemesis.jsonl")]
            assert any(f.get("f") == "pause-client" for f in faults_run), faults_run
        for n in (1, 2, 3):  # the servers' logs, fetched with the folder
            assert "QuorumPeer" in (run / "nodes" / f"n{n}" / "zookeeper.log").read_text()
        assert (run / "history.jsonl").stat().st_size > 0
        assert (run / "timeline.html").exists()  # rendered here, after the fetch
        again, err2, _ = zkj("analyze", str(run))  # the folder is whole: same verdict here
        assert again == code and "reproduced" in err2, err2
    assert leftovers(remote) == []


def test_a_matrix_over_this_engine_and_the_netns_one(remote, tmp_path):
    runs, _ = matrix_on_both(remote, tmp_path)  # the same verdicts as on one engine
    for r in runs:  # the netns engine's came back from its controllers
        log = (tmp_path / "m" / r["store"] / "run.log").read_text()
        assert ("controller: images checked" in log) is (r["engine"] == remote), log


def _start(remote: str, store: Path, time_limit: int = 60) -> Tracked:
    return Tracked(
        ["test", "--engine", remote, "--recipe", "kazoo", "--workload", "lock", "--nemesis",
         "none", "--nodes", "1", "--clients", "2", "--time-limit", str(time_limit),
         "--session-timeout",
         "3", "--store", str(store)],
        start_new_session=True,
        env={**ENV, "TMPDIR": str(store)},
    )  # fmt: skip


def _wait_for_clients(remote: str, timeout: float = 150) -> str:
    """Until the engine has a run with 2 client containers (the main phase); its id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for run_id, r in resources.find_runs(client_of(remote), remote).items():
            roles = [c["Labels"].get(resources.ROLE_LABEL) for c in r.containers]
            if roles.count("client") >= 2 and "controller" in roles:
                return run_id
        time.sleep(0.5)
    pytest.fail("the run did not reach its main phase")


def test_sigint_mid_run_leaves_nothing_there_and_cleanup_spares_a_live_run(remote, tmp_path):
    t = _start(remote, tmp_path)
    run_id = _wait_for_clients(remote)
    code, said, _ = zkj("cleanup", "--engine", remote)  # its owner is alive: kept
    assert code == 0 and f"kept    {run_id}" in said, said
    time.sleep(8)  # into the main phase: the clients have acquired (we cannot see it from here)
    t.proc.send_signal(signal.SIGINT)
    code, err = t.communicate(timeout=240)
    assert code == 130, err
    assert "Traceback" not in err and "everything run" in err, err
    assert leftovers(remote) == []
    # The interrupted run's partial history came back with its folder.
    history = _run_folder(tmp_path) / "history.jsonl"
    assert any(json.loads(line).get("f") == "acquire" for line in open(history))


def test_sigkill_the_controller_finishes_its_run_then_cleanup_leaves_nothing(remote, tmp_path):
    t = _start(remote, tmp_path, time_limit=8)
    run_id = _wait_for_clients(remote)
    os.killpg(t.proc.pid, signal.SIGKILL)
    t.communicate(timeout=30)
    client = client_of(remote)
    ctl = client.api.inspect_container(f"{run_id}-controller")
    deadline = time.monotonic() + 150
    while ctl["State"]["Running"] and time.monotonic() < deadline:
        time.sleep(1)
        ctl = client.api.inspect_container(ctl["Id"])
    # It went on alone: its run is over and torn down; only the controller (its folder) is left.
    assert not ctl["State"]["Running"] and ctl["State"]["ExitCode"] == 0, ctl["State"]
    left = resources.find_runs(client, remote)[run_id]
    assert [c["Id"] for c in left.containers] == [ctl["Id"]] and not left.networks
    assert "controller: verdict True" in client.api.logs(ctl["Id"]).decode()
    code, err, _ = zkj("cleanup", "--engine", remote)
    assert code == 0 and "removed" in err, err
    assert leftovers(remote) == [], err
