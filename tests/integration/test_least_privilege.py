"""Least privilege on real Docker: the code under test cannot undo its faults or touch another
client's history.

Two clients run `subjects.hostile:Hostile`, whose attacker thread keeps running `iptables -F`,
`-X` and `-P ACCEPT`, probes every server, and tries to append to every other history it can
see. While `isolate-client` holds client 1, the servers stay unreachable from it, its iptables
commands fail, and the run's chain stays in its netns; after the heal it reaches them again
(so the probe itself works). No client sees, let alone writes, another client's files.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from zkjepsen.client.pool import ClientPool
from zkjepsen.client.recorder import Recorder
from zkjepsen.client.spec import ClientSpec
from zkjepsen.nemesis.partition import chain_name
from zkjepsen.nemesis.schedule import FaultNemesis, NemesisLog, heal_all
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.store import RunDir
from zkjepsen.workloads import get_workload
from zkjepsen.workloads.context import ClientContext

TESTS = Path(__file__).resolve().parents[1]
RECIPE = "subjects.hostile:Hostile"
SESSION_S = 4


def _attacks(run_dir: RunDir, client: int) -> list[dict]:
    path = run_dir.client_dir(client) / "attack.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.endswith("}")]


def _wait(cond, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if v := cond():
            return v
        time.sleep(0.1)
    return None


@pytest.fixture
def hostile(ensemble3, tmp_path, monkeypatch):
    # The recipe is a user package: importable on the host, so the pool mounts it into clients.
    if importlib.util.find_spec("subjects") is None:
        monkeypatch.syspath_prepend(str(TESTS))
    assert importlib.util.find_spec("subjects") is not None
    run_dir = RunDir(tmp_path / "run")
    run_dir.client_dir(0).mkdir(parents=True)
    t0 = time.monotonic_ns()
    zk = KazooClient(hosts=ensemble3.connect_string(), timeout=SESSION_S)
    zk.start(timeout=15)
    wl = get_workload("lock")
    host = ClientContext(
        client=0,
        nclients=2,
        session=zk,
        hosts=ensemble3.connect_string(),
        recipe=RECIPE,
        params={},
        recorder=Recorder(str(run_dir.client_history(0)), t0, 0, 2),
        deadline=time.monotonic() + 3600,
    )
    wl.setup(host)
    pool = ClientPool(ensemble3, run_dir)
    pool.start(
        [
            ClientSpec(
                client=i,
                nclients=2,
                hosts=ensemble3.connect_string(),
                session_timeout_s=SESSION_S,
                workload="lock",
                recipe=RECIPE,
                params={},
                t0_ns=t0,
                seed=1,
            )
            for i in (1, 2)
        ]
    )
    assert not pool.wait_connected(30)
    pool.release(time.monotonic() + 120)
    ctx = NemesisContext(ensemble3, pool, SESSION_S)
    nem = FaultNemesis(ctx, [], seed=1, log=NemesisLog(run_dir.nemesis_log, t0))
    try:
        yield ensemble3, pool, nem, run_dir
    finally:
        heal_all(ensemble3, pool)
        pool.stop()
        host.recorder.close()
        zk.stop()
        zk.close()
        for h in pool.handles:  # container names are per ensemble: free them for other tests
            h.container.remove(force=True)


def test_client_cannot_undo_its_isolation_or_write_others_histories(hostile):
    ens, pool, nem, run_dir = hostile
    # Before the fault: the attacker runs, every server is reachable, iptables is refused.
    base = _wait(lambda: [a for a in _attacks(run_dir, 1) if a["reachable"]], 20)
    assert base, f"the attacker never reached a server: {_attacks(run_dir, 1)[-3:]}"
    assert all(rc != 0 for rc in base[-1]["iptables_rc"]), "client 1 may change iptables"

    op = nem.invoke(
        {"fault_id": 1, "f": "isolate-client", "phase": "start", "target": "client:1", "params": {}}
    )
    assert op["targets"] == ["c1"] and not op.get("error"), op
    applied = time.monotonic()

    def rounds_held() -> list[dict]:
        # A round takes ~1 s while isolated (three 0.3 s connect timeouts), more on a loaded
        # machine; rounds that began within 0.5 s of `apply` returning may predate the rules.
        return [a for a in _attacks(run_dir, 1) if a["t"] > applied + 0.5]

    _wait(lambda: len(rounds_held()) >= 3, 30)
    held = rounds_held()
    assert len(held) >= 3, f"too few attack rounds while isolated: {held}"
    assert all(a["reachable"] == [] for a in held), (
        f"client 1 reached a server while isolated: {[a for a in held if a['reachable']]}"
    )
    assert all(rc != 0 for a in held for rc in a["iptables_rc"])
    code, rules = pool.handle(1).net_exec(["iptables", "-w", "-S"])
    chain = chain_name(ens.run_id)
    assert code == 0 and f"-A INPUT -j {chain}" in rules and f"-A OUTPUT -j {chain}" in rules
    print(f"\nisolate-client held through {len(held)} rounds of `iptables -F/-X/-P ACCEPT`")

    nem.invoke({**op, "phase": "end"})
    healed = time.monotonic()
    assert _wait(
        lambda: [a for a in _attacks(run_dir, 1) if a["t"] > healed and a["reachable"]], 10
    ), "after the heal the client reaches the servers again"
    assert chain not in pool.handle(1).net_exec(["iptables", "-w", "-S"])[1]

    # Nobody's history but its own is even visible to a client, and nothing foreign is writable.
    for c in (1, 2):
        attacks = _attacks(run_dir, c)
        assert attacks, f"client {c} never ran its attacker"
        assert {p for a in attacks for p in a["histories_seen"]} == {f"/out/client-{c}.jsonl"}
        assert not any(a["foreign_writes"] for a in attacks), attacks[-1]
    # ...and on the host each history holds only its own client's records.
    for c in (1, 2):
        procs = {
            json.loads(x).get("process")
            for x in run_dir.client_history(c).read_text().splitlines()
            if x.endswith("}")
        }
        assert procs and all(p % 2 == c % 2 for p in procs), procs
