"""Every fault family against a real 3-node ensemble and real client containers: the fault is
observable while it lasts, and fully healed afterwards. One ensemble for the module; each test
leaves it serving. Timings are printed (run with -s to see them)."""

from __future__ import annotations

import json
import time

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from zkjepsen.backends.zookeeper.fourlw import four_letter
from zkjepsen.client.pool import ClientPool
from zkjepsen.client.spec import ClientSpec
from zkjepsen.nemesis.partition import chain_name
from zkjepsen.nemesis.schedule import FaultNemesis, NemesisLog, NemesisPlan, heal_all, run_nemesis
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.store import RunDir

SESSION_S = 4


@pytest.fixture(scope="module")
def rig(ensemble3, tmp_path_factory):
    """The ensemble plus 3 `ping` clients (each writes its own znode every 50 ms)."""
    out = tmp_path_factory.mktemp("nemesis")
    pool = ClientPool(ensemble3, RunDir(out))
    t0 = time.monotonic_ns()
    pool.start(
        [
            ClientSpec(
                client=i,
                start_file=None,
                nclients=3,
                hosts=ensemble3.connect_string(),
                session_timeout_s=SESSION_S,
                workload="ping",
                recipe="kazoo",
                params={},
                t0_ns=t0,
                deadline_monotonic=time.monotonic() + 900,
                seed=1,
            )
            for i in (1, 2, 3)
        ]
    )
    ctx = NemesisContext(ensemble3, pool, SESSION_S)
    nem = FaultNemesis(ctx, [], seed=1, log=NemesisLog(out / "nemesis.jsonl", t0))
    _wait(lambda: all(_records(pool, h.index, "session") for h in pool.handles), 20)
    yield ensemble3, pool, nem, out, t0
    heal_all(ensemble3, pool)
    pool.stop()


_ids = iter(range(1, 1000))


def start(nem, f: str, target: str | None = None, **params) -> dict:
    return nem.invoke(
        {"fault_id": next(_ids), "f": f, "phase": "start", "target": target, "params": params}
    )


def end(nem, op: dict) -> dict:
    return nem.invoke({**op, "phase": "end"})


def _wait(cond, timeout: float, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


def _records(pool, idx: int, f: str | None = None) -> list[dict]:
    path = pool.run_dir.client_history(idx)
    if not path.exists():
        return []
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]
    return [r for r in recs if f is None or r.get("f") == f]


def _serving(ens) -> dict[str, str | None]:
    return {s["node"]: s["mode"] for s in ens.status()}


def _healed(ens, pool) -> None:
    """Every server serves with one leader, no container holds the run's chain, no clock is
    skewed, nothing is frozen."""
    ens.wait_for_quorum(30)
    chain = chain_name(ens.run_id)
    for n in ens.nodes:
        assert chain not in ens.exec(n, ["iptables", "-S"])[1]
        assert ens.faketime_file(n).read_text().strip() in ("+0", "+0 x1")
    for h in pool.handles:
        assert h.status() == "running"
        code, rules = h.net_exec(["iptables", "-S"])  # as the nemesis sees them: a sidecar
        assert code == 0 and chain not in rules


def _tcp_open(ens, src, dst_ip: str) -> bool:
    """Can `src` (a server) open a TCP connection to dst_ip:2181? Run inside src's netns."""
    code, _ = ens.exec(
        src,
        [
            "python3",
            "-c",
            "import socket,sys; socket.create_connection("
            f"('{dst_ip}', 2181), timeout=2); sys.exit(0)",
        ],
    )
    return code == 0


def _pinned_client_works(node, timeout: float = 4) -> bool:
    zk = KazooClient(hosts=node.address, timeout=SESSION_S)
    try:
        zk.start(timeout=timeout)
        zk.get("/")
        return True
    except Exception:  # noqa: BLE001 - any failure: it cannot talk to that server
        return False
    finally:
        zk.stop()
        zk.close()


# ---- partitions ---------------------------------------------------------------------------------
def test_partition_leader_isolates_it_and_heals(rig):
    ens, pool, nem, _, _ = rig
    old = ens.leader()
    others = [n for n in ens.nodes if n != old]
    assert _tcp_open(ens, others[0], old.ip)
    t = time.monotonic()
    op = start(nem, "partition-leader")
    assert op["targets"] == [old.name] and not op.get("error")
    # Packets really are dropped: the majority cannot even open a TCP connection to it.
    assert not _tcp_open(ens, others[0], old.ip)
    new = _wait(lambda: (lambda ld: ld if ld and ld != old else None)(ens.leader()), 20)
    elected = time.monotonic() - t
    assert new in others, "the majority elected a new leader"
    assert _wait(lambda: _serving(ens)[old.name] == "not serving", 15)
    stopped = time.monotonic() - t
    assert not _pinned_client_works(old), "a client pinned to the isolated server gets nowhere"
    assert _pinned_client_works(new)
    t = time.monotonic()
    end(nem, op)
    back = ens.wait_for_quorum(30)
    print(
        f"\npartition-leader: new leader after {elected:.1f}s, old stopped serving after "
        f"{stopped:.1f}s, all serving {back:.1f}s after heal"
    )
    assert _tcp_open(ens, others[0], old.ip)
    assert _pinned_client_works(old)
    _healed(ens, pool)


def test_partition_halves_minority_stops_serving(rig):
    ens, pool, nem, _, _ = rig
    op = start(nem, "partition-halves")
    minority = min(op["detail"]["components"], key=len)
    assert _wait(lambda: all(_serving(ens)[n] == "not serving" for n in minority), 15)
    assert _wait(lambda: ens.leader() is not None and ens.leader().name not in minority, 15)
    end(nem, op)
    _healed(ens, pool)


def test_isolate_client_suspends_it_and_heals(rig):
    ens, pool, nem, _, _ = rig
    op = start(nem, "isolate-client", "client:2")
    assert op["targets"] == ["c2"]
    t_ns = time.monotonic_ns() - rig[4]
    h = pool.handle(2)
    code, out = h.exec(
        [
            "python3",
            "-c",
            f"import socket; socket.create_connection(('{ens.nodes[0].ip}', 2181), timeout=2)",
        ]
    )
    assert code != 0, "the client cannot reach any server"
    assert _wait(
        lambda: any(
            r["value"] == "SUSPENDED" and r["time"] > t_ns
            for r in _records(pool, 2, "session-state")
        ),
        10,
    )
    time.sleep(2 * SESSION_S)  # longer than its session: the servers expire it
    end(nem, op)
    assert _wait(
        lambda: any(
            r["value"] == "LOST" and r["time"] > t_ns for r in _records(pool, 2, "session-state")
        ),
        15,
    )
    healed_ns = time.monotonic_ns() - rig[4]
    # ...and it writes again (kazoo opened a new session by itself).
    assert _wait(
        lambda: any(
            r["type"] == "ok" and r["time"] > healed_ns for r in _records(pool, 2, "write")
        ),
        15,
    )
    _healed(ens, pool)


def test_packet_loss_drops_packets(rig):
    ens, pool, nem, _, _ = rig
    op = start(nem, "packet-loss", "n1", probability=0.3)
    time.sleep(3)
    code, out = ens.exec(ens.nodes[0], ["iptables", "-L", chain_name(ens.run_id), "-v", "-x", "-n"])
    dropped = sum(int(line.split()[0]) for line in out.splitlines()[2:] if line.strip())
    print(f"\npacket-loss 30% on n1: {dropped} packets dropped in 3 s")
    assert dropped > 0
    end(nem, op)
    _healed(ens, pool)


# ---- processes ----------------------------------------------------------------------------------
def test_kill_leader_is_replaced_and_restarts(rig):
    ens, pool, nem, _, _ = rig
    old = ens.leader()
    t = time.monotonic()
    op = start(nem, "kill-leader")
    assert op["targets"] == [old.name]
    assert not ens.whole()  # a server down: the next kill must wait (nemesis/arming.py)
    new = _wait(lambda: (lambda ld: ld if ld and ld != old else None)(ens.leader()), 20)
    print(f"\nkill-leader: {new.name} leads {time.monotonic() - t:.1f}s after the kill")
    assert new is not None
    assert not ens.whole()  # a new leader, but the killed server is still down
    end(nem, op)
    assert _wait(ens.whole, 30)  # restarted, rejoined and synced: whole again
    _healed(ens, pool)


def test_a_server_killed_in_place_comes_back_in_the_container_it_kept(
    docker_client, zk_image, tmp_path
):
    """`restart = "process"` (docker/supervise.py, the gate's leader kills): the kill stops the
    server but not its container, the restart brings a new server up in it; a server that ends
    on its own still ends its container. One server: the supervisor is what is tested."""
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble

    spec = EnsembleSpec(nodes=1, image=zk_image, restart_in_place=True)
    with ZooKeeperEnsemble(spec, tmp_path, client=docker_client) as ens:
        (n,) = ens.nodes
        container = ens._container(n)
        ens.kill(n)
        assert _wait(lambda: ens.srvr(n) is None, 20), "the server still serves"
        container.reload()
        assert container.status == "running" and ens.state(n) == "exited"
        ens.restart(n)
        assert _wait(ens.whole, 60), "the server did not come back"
        assert ens.state(n) == "running"
        code, out = ens.exec(n, ["pkill", "-TERM", "java"])  # not the nemesis's kill
        assert code == 0, out
        assert _wait(lambda: ens.state(n) == "exited", 30), "the container outlived its server"


def test_client_netns_commands_go_through_the_kept_sidecars_channel(rig):
    """A command in a client's netns is a line to its kept sidecar's shell (docker/netns.py):
    its output (stdout and stderr) and exit status come back; one that a line cannot carry
    goes as an exec in the same sidecar, with the same answer."""
    _, pool, _, _, _ = rig
    h = pool.handle(3)
    assert h.net_exec(["sh", "-c", "echo out; echo err >&2; exit 3"]) == (3, "out\nerr\n")
    assert h.shell is not None and h.shell.channel is not None
    assert h.net_exec(["sh", "-c", "echo one\necho two"]) == (0, "one\ntwo\n")
    assert h.shell.channel is not None  # still the channel for the next command


def test_pause_follower_stops_answering(rig):
    ens, pool, nem, _, _ = rig
    follower = next(n for n in ens.nodes if n != ens.leader())
    op = start(nem, "pause-server", follower.name)
    assert four_letter(follower.ip, follower.port, "srvr", 1.0) is None
    end(nem, op)
    _healed(ens, pool)


def _sessions_on_servers(ens) -> str:
    return "".join(four_letter(n.ip, n.port, "cons", 1.0) or "" for n in ens.nodes)


def test_pause_client_expires_its_session_server_side(rig):
    ens, pool, nem, _, t0 = rig
    sid = _records(pool, 1, "session")[-1]["value"]["session_id"]
    assert f"sid={sid}" in _sessions_on_servers(ens)
    t = time.monotonic()
    op = start(nem, "pause-client", "client:1")
    assert op["detail"]["session_timeout_s"] == SESSION_S  # the negotiated one, from its record
    gone = _wait(lambda: f"sid={sid}" not in _sessions_on_servers(ens), 3 * SESSION_S)
    expired = time.monotonic() - t
    print(
        f"\npause-client: session {sid} gone from every server {expired:.1f}s into the pause "
        f"(timeout {SESSION_S}s)"
    )
    assert gone and expired >= SESSION_S * 0.9
    # The connection's server drops the connection at the timeout, but the leader expires the
    # session on its own tick boundaries, up to a tick or more later: resumed in that window
    # the client gets its old session back (seen once under load). Stay paused past it.
    time.sleep(2.0)
    t_ns = time.monotonic_ns() - t0
    end(nem, op)
    assert _wait(
        lambda: any(
            r["value"] == "LOST" and r["time"] >= t_ns for r in _records(pool, 1, "session-state")
        ),
        10,
    )
    _healed(ens, pool)


def test_kill_client_restarts_with_a_new_session(rig):
    ens, pool, nem, _, _ = rig
    before = len(_records(pool, 3, "session"))
    op = start(nem, "kill-client", "client:3")
    assert pool.handle(3).status() == "exited"
    end(nem, op)
    assert _wait(lambda: len(_records(pool, 3, "session")) > before, 20)
    _healed(ens, pool)


# ---- clocks -------------------------------------------------------------------------------------
def _time_to_lost(ens, rate: float, timeout_s: float, limit_s: float, nem) -> float | None:
    """An idle host-side session (no ops, only kazoo's pings), then the leader's clock at
    `rate` x: real seconds until the session is LOST, or None if it survives limit_s."""
    leader = ens.leader()
    follower = next(n for n in ens.nodes if n != leader)
    zk = KazooClient(hosts=follower.address, timeout=timeout_s)
    lost: list[float] = []
    zk.add_listener(lambda s: lost.append(time.monotonic()) if s == KazooState.LOST else None)
    zk.start(timeout=10)
    op = start(nem, "clock-rate-leader", rate=rate)
    t = time.monotonic()
    try:
        _wait(lambda: lost, limit_s)
        took = lost[0] - t if lost else None  # before stop(): closing also says LOST
    finally:
        end(nem, op)
        zk.stop()
        zk.close()
    return took


def test_fast_leader_clock_expires_idle_sessions(rig):
    """At 1x kazoo's pings (every timeout/3) keep an idle session; at 5x the leader's clock
    sees 10 s between them, past the 6 s timeout, and expires it. The wait is bounded at 15 s
    (expected: about 1.2 s of real time to the leader's timeout, plus a tick; margin > 5x)."""
    ens, pool, nem, _, _ = rig
    took = _time_to_lost(ens, 5.0, 6.0, 15.0, nem)
    print(f"\nclock-rate-leader x5: idle 6 s session LOST after {took}s")
    assert took is not None, "at 5x the leader expires a session its pings keep at 1x"
    heal_all(ens, pool)  # reset the clock to real time before the control run
    ens.wait_for_quorum(30)
    control = _time_to_lost(ens, 1.0, 6.0, 8.0, nem)
    assert control is None, "at 1x nothing expires"
    _healed(ens, pool)


def test_clock_bump_and_strobe_are_written_and_reset(rig):
    ens, pool, nem, _, _ = rig
    node = ens.nodes[1]
    op = start(nem, "clock-bump", node.name, offset_s=-3)
    assert ens.faketime_file(node).read_text().strip() == "-3"
    end(nem, op)
    op = start(nem, "clock-strobe", node.name, offset_s=2)
    seen = set()
    _wait(lambda: seen.add(ens.faketime_file(node).read_text().strip()) or len(seen) > 1, 4)
    assert seen == {"+2", "+0"}
    end(nem, op)
    _healed(ens, pool)


# ---- the runner's entry point -------------------------------------------------------------------
def test_run_nemesis_records_schedule_and_replays(rig, tmp_path):
    ens, pool, _, _, _ = rig
    # This run's own zero, as a run's start is: the rig's is the module's start, from which the
    # replay (same times since its own zero) would first wait out every test before this one.
    t0 = time.monotonic_ns()
    names = ["pause-server", "pause-client"]  # API-only faults: no sidecars (CI minutes)
    executed = run_nemesis(
        ens,
        pool,
        NemesisPlan(
            names,
            seed=5,
            time_limit_s=8,
            interval_s=1,
            fault_duration_s=1.5,
            session_timeout_s=SESSION_S,
            t0_ns=t0,
        ),
        files=RunDir(tmp_path / "a"),
    )
    executed = [e.to_json() for e in executed]  # the executed faults as schedule.json holds them
    assert executed and all(e["end_ns"] > e["start_ns"] for e in executed)
    sched = json.loads((tmp_path / "a" / "schedule.json").read_text())
    assert sched["faults"] == json.loads(json.dumps(executed, default=str))
    recs = [json.loads(x) for x in (tmp_path / "a" / "nemesis.jsonl").read_text().splitlines()]
    assert [r["value"]["phase"] for r in recs] == ["start", "end"] * len(executed)
    _healed(ens, pool)
    # Replay: same faults, same resolved targets, at the same times since (a new) t0.
    t1 = time.monotonic_ns()
    again = run_nemesis(
        ens,
        pool,
        NemesisPlan([], seed=99, time_limit_s=8, t0_ns=t1, schedule=sched),
        files=RunDir(tmp_path / "b"),
    )
    again = [e.to_json() for e in again]
    assert [(e["f"], e["targets"]) for e in again] == [(e["f"], e["targets"]) for e in executed]
    for a, b in zip(executed, again, strict=True):
        # Never early; late by how long Docker takes to apply and undo the fault before it (a
        # load-dependent figure, printed, not asserted), since faults run one after another.
        print(f"replayed {b['f']} {(b['start_ns'] - a['start_ns']) / 1e9:+.2f}s from the original")
        assert b["start_ns"] >= a["start_ns"] - 0.05e9, (a, b)
    assert all(x["end_ns"] <= y["start_ns"] for x, y in zip(again, again[1:], strict=False))
    _healed(ens, pool)


def test_run_nemesis_heals_on_interrupt(rig, tmp_path):
    ens, pool, _, _, t0 = rig
    import threading

    stop = threading.Event()
    asked: list[int] = []

    def ask() -> None:
        asked.append(time.monotonic_ns() - t0)
        stop.set()

    threading.Timer(2.5, ask).start()
    from zkjepsen.nemesis import generator as g

    gen = g.phases(g.sleep(0.5), g.once(g.Fault("partition-one", duration=30)))
    executed = run_nemesis(
        ens,
        pool,
        NemesisPlan([], seed=1, time_limit_s=60, t0_ns=t0, gen=gen),
        files=RunDir(tmp_path),
        stop_event=stop,
    )
    # In this order: the fault started, the stop was asked, the fault was healed; and run_nemesis
    # returned once healed, not at the 30 s fault's end (asked is set before end_ns is recorded;
    # a healing that waited out the fault would end 30 s after its start, the ask 2 s after it).
    (op,) = executed
    f = op.to_json()
    assert f["start_ns"] < asked[0] <= f["end_ns"], (f, asked)
    assert f["end_ns"] < f["start_ns"] + 30e9, f
    _healed(ens, pool)
