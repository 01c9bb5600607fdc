"""Runs on an engine that shares no file with this machine, as an engine on another host would not.

The engine is a second, real `dockerd` in its own mount namespace where /work, /tmp and /var/tmp
are empty (tests/second_engine.py, `private_fs=True`): our package, kazoo, the store, pytest's
tmp dirs and zkjepsen's scratch dirs do not exist for it, so a bind mount of any of them is
refused (or, with `-v`, an empty directory). Every file the containers need goes in through the
engine's API and every file they write comes back the same way (docker/mounts.py).
Kazoo and NoLock runs with their verdicts and folders, a matrix over such an engine, SIGINT and
a lost worker are not repeated here: the same copy path runs in test_cluster.py's Dask worker
beside its netns engine (also without our files), which tests them (CI's 45 minutes). Here the
runner itself copies: the SIGINT test's runs and the clock-fault run below give verdicts from
that engine.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from zkjepsen.docker import mounts, resources

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from second_engine import preload_image, second_engine_or_skip  # noqa: E402
from tracked import Tracked, client_of, leftovers  # noqa: E402

COPIED = "files: copied (engine shares no filesystem)"


pytestmark = pytest.mark.usefixtures("sigint_default")


@pytest.fixture(scope="module")
def remote(zk_image):
    with second_engine_or_skip(private_fs=True) as url:
        preload_image(zk_image, url)
        yield url


def _image_on(url: str) -> str:
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker.engine import Engine, provide_image

    return provide_image([Engine.parse(url)], recipe=zookeeper_recipe())


def test_the_probe_tells_the_two_engines_apart(remote, tmp_path):
    """Asked of the engine itself: the machine's engine sees our dir, the namespaced one not."""
    for url, shared in (("default", True), (remote, False)):
        scratch = tmp_path / url.replace("/", "_")
        scratch.mkdir()
        run_id = resources.new_run_id()
        try:
            assert mounts.shares_filesystem(client_of(url), _image_on(url), run_id, scratch) is (
                shared
            )
        finally:
            resources.remove_run(client_of(url), run_id)
        assert resources.leftovers(client_of(url), run_id) == []


def test_files_go_in_and_come_back_through_the_api(remote, tmp_path):
    """put before start, push a rewrite while it runs, fetch what it writes live and at the end."""
    client = client_of(remote)
    run_id = resources.new_run_id()
    ctl, out = tmp_path / "ctl", tmp_path / "out"
    ctl.mkdir()
    out.mkdir()
    (ctl / "x").write_text("one\n")
    files = mounts.Files(client, shared=False)
    binds = {str(ctl): {"bind": "/ctl", "mode": "ro"}, str(out): {"bind": "/out", "mode": "rw"}}
    try:
        cid = client.api.create_container(
            _image_on(remote),
            name=f"{run_id}-files",
            entrypoint=["sh", "-c", "while :; do cat /ctl/x >> /out/seen; sleep 0.1; done"],
            labels=resources.labels(run_id, "client"),
            host_config=client.api.create_host_config(binds=files.binds(binds)),
        )["Id"]
        files.attach(cid, binds, out=["/out"], live=True)
        client.api.start(cid)
        files.start_live()
        seen = out / "seen"
        _until(lambda: seen.exists() and "one" in seen.read_text(), "the first value came back")
        (ctl / "x").write_text("two\n")
        files.push(ctl / "x")
        _until(lambda: "two" in seen.read_text(), "the rewritten file reached the container")
        client.api.stop(cid, timeout=1)
        files.collect()
        text = seen.read_text()
        # Appended in order, never rewritten: the container's file and ours are the same bytes.
        remote_text = mounts._read_member(b"".join(client.api.get_archive(cid, "/out/seen")[0]))
        assert text.encode() == remote_text
        assert text.index("one") < text.index("two")
    finally:
        resources.remove_run(client, run_id)


def _until(cond, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.1)


def _start(remote: str, store: Path) -> Tracked:
    return Tracked(
        [
            "matrix", "--recipes", "kazoo", "--nemeses", "none", "--runs", "2", "--nodes", "1",
            "--clients", "2", "--time-limit", "60", "--session-timeout", "3",
            "--engine", remote, "--parallel", "2", "--store", str(store), "--out",
            str(store / "m.md"),
        ],
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}",
             "TMPDIR": str(store)},
    )  # fmt: skip


def _histories(store: Path) -> list[Path]:
    return [p for p in store.glob("*/2*/clients/c*/client-*.jsonl") if p.name != "client-0.jsonl"]


def _wait_for_histories(store: Path, timeout: float = 150) -> None:
    """Until a client's history here has an acquire: the main phase is on, and the live fetch
    of /out from that engine works (nothing else writes these files on this machine)."""
    _until(
        lambda: any('"f":"acquire"' in p.read_text() for p in _histories(store)),
        "an acquire in a client's history",
        timeout,
    )


def test_sigint_mid_run_leaves_nothing_on_it(remote, tmp_path):
    t = _start(remote, tmp_path)
    _wait_for_histories(tmp_path)
    t.proc.send_signal(signal.SIGINT)
    code, err = t.communicate(timeout=240)
    assert code == 130, err
    assert "Traceback" not in err
    assert leftovers(remote) == []
    # The interrupted run's history was fetched before its containers went, and merged.
    merged = [json.loads(line) for p in tmp_path.glob("*/2*/history.jsonl") for line in open(p)]
    assert any(r.get("process", 0) >= 1 and r.get("f") == "acquire" for r in merged)


def test_a_client_clock_fault_reaches_a_client_on_it(remote, redis_image, store_root):
    """The SETNX lock judges expiry by each client's clock: a client whose clock jumps ahead
    steals a live lock. That happens only if the rewritten libfaketime control file reached the
    client's container, which on this engine means put through the API while it runs. The
    Redis image is loaded into that engine as ZooKeeper's is (the run would build it there:
    minutes of a 2-core machine)."""
    from zkjepsen.docker.engine import Engine
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    preload_image(redis_image, remote)

    spec = TestSpec(
        recipe="redis-setnx", workload="lock", nemesis=["clock-skew-client"], clients=4,
        time_limit_s=14, recovery_s=2, interval_s=3, fault_duration_s=8,
        params={"resource": "fenced"}, seed=5,
    )  # fmt: skip
    run = run_test(spec, store_root, engine=Engine.parse(remote))
    assert COPIED in (run.store_dir / "run.log").read_text()
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] > 0, lock
    assert run.results["fencing"]["valid"] is True
    assert leftovers(remote) == []
