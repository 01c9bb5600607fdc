"""Least privilege on real Docker: the code under test cannot undo its faults, touch its own
history or its recorder, or another client's history.

Two clients run `subjects.hostile:Hostile` (behind the wire protocol, as the Python driver's
child of the recorder), whose attacker thread keeps running `iptables -F`, `-X` and `-P
ACCEPT`, probes every server, tries to append to every other history it can see, and attacks
its own recorder: it opens its history for writing and appending, truncates, renames and
deletes it, writes through the recorder's /proc descriptors and memory, reads its environment,
signals it, and opens a raw ICMP and a packet socket. Every one of these is refused for want of
a right (EACCES/EPERM), from the program's own unprivileged uid with no capability, and it can
write nowhere but its memory-backed scratch; client 2's wire proxy (in its recorder) refuses
its program's commands. While `isolate-client` holds client 1, the servers stay unreachable
from it, its iptables commands fail, and the run's chain stays in its netns; after the heal it
reaches them again (so the probe itself works). No client sees, let alone writes, another
client's files, and each history holds its own client's records.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from zkjepsen.client import seal
from zkjepsen.client.pool import SRC_DIR, ClientPool, package_bind
from zkjepsen.client.recorder import Recorder
from zkjepsen.client.spec import ClientSpec
from zkjepsen.docker import resources
from zkjepsen.nemesis.partition import chain_name
from zkjepsen.nemesis.schedule import FaultNemesis, NemesisLog, heal_all
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.run.resolve import program_for
from zkjepsen.store import RunDir
from zkjepsen.workloads import get_workload
from zkjepsen.workloads.context import ClientContext

TESTS = Path(__file__).resolve().parents[1]
RECIPE = "subjects.hostile:Hostile"
ATTACK_LOG = "/tmp/attack.jsonl"  # subjects.hostile.ATTACK_LOG
REFUSED = {"EACCES", "EPERM"}  # not ENOENT, EXDEV, ...: refused for want of a right
SCRATCH = {"/tmp", "/var/tmp", "/dev/shm"}  # memory-backed (client/seal.py)
SESSION_S = 4


def _attacks(pool: ClientPool, client: int) -> list[dict]:
    """The attacker's log, in the program's scratch (it cannot write anywhere we would see)."""
    code, text = pool.handle(client).exec(["cat", ATTACK_LOG])
    if code != 0:
        return []
    return [json.loads(x) for x in text.splitlines() if x.endswith("}")]


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
                command=list(program_for(RECIPE, "lock").argv),  # the Python driver
                proxy=i == 2,  # a wire proxy in the recorder, which its program cannot command
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
    base = _wait(lambda: [a for a in _attacks(pool, 1) if a["reachable"]], 20)
    assert base, f"the attacker never reached a server: {_attacks(pool, 1)[-3:]}"
    assert all(rc != 0 for rc in base[-1]["iptables_rc"]), "client 1 may change iptables"
    for c in (1, 2):
        _assert_sealed(_attacks(pool, c), c)
    assert {a["proxy"] for a in _attacks(pool, 2)} == {"refused"}, "its proxy obeys the nemesis"
    code, mounts = pool.handle(1).exec(["cat", "/proc/mounts"])
    kinds = {line.split()[1]: line.split()[2] for line in mounts.splitlines()}
    assert code == 0 and all(kinds.get(d) == "tmpfs" for d in SCRATCH), kinds

    op = nem.invoke(
        {"fault_id": 1, "f": "isolate-client", "phase": "start", "target": "client:1", "params": {}}
    )
    assert op["targets"] == ["c1"] and not op.get("error"), op
    applied = time.monotonic()

    def rounds_held() -> list[dict]:
        # A round takes ~1 s while isolated (three 0.3 s connect timeouts), more on a loaded
        # machine; rounds that began within 0.5 s of `apply` returning may predate the rules.
        return [a for a in _attacks(pool, 1) if a["t"] > applied + 0.5]

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
        lambda: [a for a in _attacks(pool, 1) if a["t"] > healed and a["reachable"]], 10
    ), "after the heal the client reaches the servers again"
    assert chain not in pool.handle(1).net_exec(["iptables", "-w", "-S"])[1]

    # Nobody's history but its own is even visible to a client, and nothing foreign is writable.
    for c in (1, 2):
        attacks = _attacks(pool, c)
        _assert_sealed(attacks, c)  # every round, through the fault too
        assert not {p for a in attacks for p in a["histories_seen"]}, "/out is closed to it"
        assert not any(a["foreign_writes"] for a in attacks), attacks[-1]
    # /control is the client's own directory, and its program reads nothing in it but the
    # clock libfaketime gives it (client/seal.py): no spec, no barrier, no other client's files.
    for c in (1, 2):
        view = _attacks(pool, c)[-1]["control"]
        other = 3 - c
        assert view["list"] in REFUSED, view
        assert view[f"spec-c{c}.json"] in REFUSED and view["start"] in REFUSED, view
        assert view[f"spec-c{other}.json"] == view[f"faketime-c{other}"] == "ENOENT", view
        assert view[f"faketime-c{c}"] == "ok", view  # libfaketime reads it in its process
    # ...and on the host each history holds only its own client's records.
    for c in (1, 2):
        procs = {
            json.loads(x).get("process")
            for x in run_dir.client_history(c).read_text().splitlines()
            if x.endswith("}")
        }
        assert procs and all(p % 2 == c % 2 for p in procs), procs


def _assert_sealed(attacks: list[dict], client: int) -> None:
    """Every round of the attacker's was refused everything, by want of a right."""
    assert attacks, f"client {client} never ran its attacker"
    for a in attacks:
        assert a["uid"] != 0 and int(a["cap_eff"], 16) == 0, (a["uid"], a["cap_eff"])
        won = {what: how for what, how in a["recorder"].items() if how not in REFUSED}
        assert not won, f"client {client}'s program got at its recorder: {won}"
        assert set(a["writable"]) <= SCRATCH, f"it wrote outside its scratch: {a['writable']}"
        assert all(rc != 0 for rc in a["iptables_rc"]), a["iptables_rc"]


# The recorder starts its program and kills it (its whole group) on a fault; under the seal it
# does both with RECORDER_CAPS alone, and KILL is among them for the second (signal 0: the
# permission check alone, so the case without it needs no waiting).
_START_AND_KILL = """
import os
from zkjepsen.client.program import Program
os.dup2(os.open("/dev/null", os.O_WRONLY), 2)
p = Program(["sleep", "3"], uid=UID)
p.start()
proc = p.proc
status = dict(x.split(":", 1) for x in open(f"/proc/{proc.pid}/status") if ":" in x)
print(*(status[k].split() for k in ("Uid", "Groups", "CapEff", "NoNewPrivs")), sep="|")
try:
    os.killpg(proc.pid, 0)
except PermissionError:
    print("EPERM")
else:
    p.kill()
    print(proc.poll())
"""


@pytest.mark.parametrize("caps", [seal.RECORDER_CAPS, ("SETUID", "SETGID")], ids=["all", "no-kill"])
def test_the_recorder_starts_and_kills_its_program_with_its_caps_alone(
    caps, zk_image, docker_client
):
    api = docker_client.api
    config = {**seal.host_config(runs_program=True), "cap_add": list(caps)}
    cid = api.create_container(
        zk_image,
        entrypoint=["sleep", "infinity"],
        labels=resources.labels("zkj-test-seal", "client"),
        environment={"PYTHONPATH": SRC_DIR},
        host_config=api.create_host_config(binds=package_bind(), **config),
    )["Id"]
    try:
        api.start(cid)
        script = _START_AND_KILL.replace("UID", str(seal.PROGRAM_UID))
        res = docker_client.containers.get(cid).exec_run(["python3", "-c", script])
        lines = res.output.decode().strip().splitlines()
        assert res.exit_code == 0 and len(lines) == 2, res.output.decode()
        uid, groups, cap_eff, nnp = lines[0].split("|")
        assert uid == str([str(seal.PROGRAM_UID)] * 4) and groups == "[]", lines[0]
        assert cap_eff == "['0000000000000000']" and nnp == "['1']", lines[0]
        assert lines[1] == ("-9" if "KILL" in caps else "EPERM"), f"{caps}: {lines[1]}"
    finally:
        api.remove_container(cid, force=True)
