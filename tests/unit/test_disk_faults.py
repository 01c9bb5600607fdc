"""Disk faults without Docker (issue 34): the layer's answers read back, corrupt-file's damage,
the lock checker naming the power loss before a violation, and what a disk fault declares.
The layer itself is proven against ZooKeeper in tests/integration/test_power_loss.py."""

from __future__ import annotations

import json
import random
import time
from types import SimpleNamespace

import pytest
from test_checker_lock import H

from zkjepsen.backends.postgres.service import PostgresSettings
from zkjepsen.backends.registry import backend_info
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.docker import powerfs
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.faultkinds.facts import RunFacts, refusal
from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis import disk
from zkjepsen.nemesis.disk import corrupt
from zkjepsen.report.summary import summarise
from zkjepsen.run.resolve import validate_spec
from zkjepsen.spec import TestSpec


def test_the_layers_answer_is_read_back_and_its_absence_is_empty():
    line = '{"lost_bytes": 914, "lost_writes": 2, "lost_names": 0, "torn_bytes_kept": 0}\n'
    assert powerfs.parse("noise\n" + line)["lost_bytes"] == 914
    assert powerfs.parse("powerfs: connect: No such file or directory") == {}
    assert powerfs.command("drop", 30)[-2:] == ["drop", "30"]
    assert powerfs.command("stat")[-1] == "stat"


def test_corrupt_flips_bytes_of_the_written_part_or_cuts_it(tmp_path):
    path = tmp_path / "log.1"
    written = bytes(range(1, 101))
    path.write_bytes(written + b"\0" * 900)  # preallocated with zeros, as ZooKeeper's logs
    flipped = corrupt(path, "flip", random.Random(1))
    data = path.read_bytes()
    assert flipped["flipped_offsets"] and all(o < 100 for o in flipped["flipped_offsets"])
    assert data != written + b"\0" * 900 and data[100:] == b"\0" * 900
    path.write_bytes(written + b"\0" * 900)
    assert corrupt(path, "truncate", random.Random(1))["truncated_to"] == 50
    assert path.read_bytes() == written[:50]


def test_a_split_holder_after_a_power_loss_names_it():
    h = H()
    h.fault(1, 3, "power-loss-all", "start", targets=("n1", "n2", "n3"))
    h.call(0, 2, 1, "acquire", "/l", out={"token": 10, "seq": 0, "node": "/l/n0"}, client=1)
    h.fault(4, 3, "power-loss-all", "end", targets=("n1", "n2", "n3"))
    # the lock node was lost with the power: another client gets the lock while 1 holds it
    h.call(5, 6, 2, "acquire", "/l", out={"token": 10, "seq": 0, "node": "/l/n0"}, client=2)
    h.call(7, 8, 2, "release", "/l", client=2)
    h.call(9, 10, 1, "release", "/l", client=1)
    r = LockChecker().check(h.history())
    assert r.valid is False
    overlap = r.details["belief_overlaps"][0]
    assert overlap["faults"] == []  # the overlap began after the fault's window
    assert overlap["after_disk_fault"]["f"] == "power-loss-all"
    assert r.violations[0].evidence["after_disk_fault"]["fault_id"] == 3
    # ...and so does the verdict's line, though no fault was active in the overlap
    assert "during no fault, after power-loss-all at 0.00s;" in summarise(r)


S = 1_000_000_000


def _redis_power_loss(h: H) -> H:
    """Redis with appendfsync everysec: clients 1 and 3 get tokens 10 and 11 (INCR) and write
    versions 5 and 6; every server loses power at 20 s (both INCRs and both writes go with
    it); after it client 2 is granted 11 again and its write gets version 5 again."""
    h.call(1 * S, 2 * S, 1, "acquire", "/l", out={"token": 10}, client=1)
    h.call(3 * S, 4 * S, 1, "write", "/r", {"token": 10}, out={"version": 5}, client=1)
    h.call(5 * S, 6 * S, 1, "release", "/l", client=1)
    h.call(7 * S, 8 * S, 3, "acquire", "/l", out={"token": 11}, client=3)
    h.call(9 * S, 10 * S, 3, "write", "/r", {"token": 11}, out={"version": 6}, client=3)
    h.call(11 * S, 12 * S, 3, "release", "/l", client=3)
    h.fault(20 * S, 1, "power-loss-all", "start", targets=("n1",))
    h.fault(25 * S, 1, "power-loss-all", "end", targets=("n1",))
    h.call(30 * S, 31 * S, 2, "acquire", "/l", out={"token": 11}, client=2)
    return h


def test_a_reused_token_after_a_power_loss_names_it():
    h = _redis_power_loss(H())
    h.call(32 * S, 33 * S, 2, "write", "/r", {"token": 11}, out={"version": 5}, client=2)
    h.call(34 * S, 35 * S, 2, "release", "/l", client=2)
    r = FencingChecker().check(h.history())
    assert r.valid is False and r.counts == {"reused-token": 1}
    v = r.violations[0]
    assert (v.kind, v.clients, v.start, v.end) == ("reused-token", (3, 2), 8 * S, 31 * S)
    assert [f["f"] for f in v.faults] == ["power-loss-all"]
    assert v.evidence["after_disk_fault"]["start"] == 20 * S
    assert summarise(r) == (
        "1 reused tokens; first: clients [3, 2] at 8.00s-31.00s during power-loss-all"
    )


def test_a_write_out_of_version_order_after_a_power_loss_has_an_ordered_window():
    """The power loss took the resource's versions back too: in version order client 2's
    write (version 5, token 12, acked at 33 s) comes before client 1's (version 6, token 10,
    acked at 10 s). The window runs from the earlier ack to the later and names the fault."""
    h = H()
    h.call(1 * S, 2 * S, 1, "acquire", "/l", out={"token": 10}, client=1)
    h.call(9 * S, 10 * S, 1, "write", "/r", {"token": 10}, out={"version": 6}, client=1)
    h.call(11 * S, 12 * S, 1, "release", "/l", client=1)
    h.fault(20 * S, 1, "power-loss-all", "start", targets=("n1",))
    h.fault(25 * S, 1, "power-loss-all", "end", targets=("n1",))
    h.call(30 * S, 31 * S, 2, "acquire", "/l", out={"token": 12}, client=2)
    h.call(32 * S, 33 * S, 2, "write", "/r", {"token": 12}, out={"version": 5}, client=2)
    h.call(34 * S, 35 * S, 2, "release", "/l", client=2)
    r = FencingChecker().check(h.history())
    v = r.violations[0]
    assert (v.kind, v.clients, v.start, v.end) == ("backwards", (2, 1), 10 * S, 33 * S)
    assert [f["f"] for f in v.faults] == ["power-loss-all"]
    assert "at 10.00s-33.00s during power-loss-all" in summarise(r)


def test_a_fault_that_keeps_the_disk_is_not_named_after_its_window():
    """By the fault's kind: a kill (family process) takes nothing that outlives it, so an
    overlap after its window names no fault; a power loss (family disk) is named. (A reused
    token's window, from one grant to the other, spans the fault that took the counter.)"""
    for f, named in (("kill-one", False), ("power-loss-one", True)):
        h = H()
        h.fault(1, 3, f, "start", targets=("n1",))
        h.call(0, 2, 1, "acquire", "/l", out={"token": 10}, client=1)
        h.fault(4, 3, f, "end", targets=("n1",))
        h.call(5, 6, 2, "acquire", "/l", out={"token": 10}, client=2)
        h.call(9, 10, 1, "release", "/l", client=1)
        h.call(11, 12, 2, "release", "/l", client=2)
        r = LockChecker().check(h.history())
        assert r.valid is False
        assert (f"after {f}" in summarise(r)) is named, summarise(r)


def test_disk_faults_apply_only_where_the_servers_name_their_data():
    for name in ("power-loss-one", "power-loss-all", "torn-write", "corrupt-file"):
        assert KINDS[name].family == "disk"
        zk = RunFacts("zookeeper", 3, backend_info("zookeeper").abilities)
        assert refusal(KINDS[name], zk) is None
        assert "name no data files" in (
            refusal(KINDS[name], RunFacts("redis", 1, frozenset())) or ""
        )


class _Files:
    """A run's client histories (ClientFiles), written by the test."""

    def __init__(self, root):
        self.root = root

    def client_history(self, client):
        return self.root / f"c{client}" / f"client-{client}.jsonl"

    def client_histories(self):
        return sorted(self.root.glob("c*/client-*.jsonl"))


def _history(files, client, records):
    path = files.client_history(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_power_loss_on_an_acquire_waits_for_the_acquirers_acknowledged_write(
    tmp_path, monkeypatch
):
    files = _Files(tmp_path)
    ctx = SimpleNamespace(live=LiveHistory(files.client_histories))
    _history(
        files,
        3,
        [
            {"time": 5, "f": "add", "type": "ok", "process": 3},  # before the acquire
            {"time": 10, "f": "acquire", "type": "ok", "process": 3},
            {"time": 11, "f": "add", "type": "invoke", "process": 3},
            {"time": 12, "f": "read", "type": "ok", "process": 3},
            {"time": 13, "f": "add", "type": "ok", "process": 3},
        ],
    )
    assert disk._acquirer(ctx, "client:3") == (3, 10)
    assert disk._acquirer(ctx, "holder") == (3, 10)
    assert disk._acquirer(ctx, "client:4") is None  # not holding: nothing to wait for
    assert disk.await_ack(ctx, 3, 10) == {"client": "c3", "f": "add", "ok_ns": 13}
    monkeypatch.setattr(disk, "ACK_WAIT_S", 0.05)
    assert disk.await_ack(ctx, 3, 13) is None  # none after it: bounded, then lands anyway


def test_await_ack_sees_an_ack_appended_while_it_waits(tmp_path, monkeypatch):
    """The client's file is followed, not re-read: an ack written (in two pieces, as a
    client's write may land) after the wait began is found; a cut line is not a record."""
    import threading

    files = _Files(tmp_path)
    ctx = SimpleNamespace(live=LiveHistory(files.client_histories))
    _history(files, 2, [{"time": 10, "f": "acquire", "type": "ok", "process": 2}])
    monkeypatch.setattr(disk, "ACK_WAIT_S", 60.0)  # the bound is not what ends this wait
    line = json.dumps({"time": 14, "f": "write", "type": "ok", "process": 2}) + "\n"
    path = files.client_history(2)

    def later():
        for part in (line[:9], line[9:]):
            time.sleep(0.1)
            with path.open("a") as fh:
                fh.write(part)

    t = threading.Thread(target=later)
    t.start()
    try:
        assert disk.await_ack(ctx, 2, 10) == {"client": "c2", "f": "write", "ok_ns": 14}
    finally:
        t.join()


def test_postgres_presets_and_the_targets_one_server_cannot_mean():
    assert PostgresSettings().settled().server_args()[-1] == "synchronous_commit=on"
    assert PostgresSettings(fsync="relaxed").server_args()[-1] == "synchronous_commit=off"
    with pytest.raises(BadInput, match="strict or relaxed"):
        PostgresSettings(fsync="off")
    for name in ("power-loss-majority", "power-loss-leader"):
        with pytest.raises(BadInput, match=f"{name} does not apply to backend postgres: its one"):
            validate_spec(TestSpec(recipe="pg-advisory", nemesis=[name]))
    validate_spec(TestSpec(recipe="pg-advisory", nemesis=["power-loss-all"]))


def test_a_lost_answer_of_the_layer_is_asked_again_only_when_asking_changes_nothing(tmp_path):
    """The layer's ctl gives up after 10 s without an answer (a loaded machine): stat and sync
    are asked again, then fail naming the node; a drop is never asked twice."""
    from types import SimpleNamespace

    from zkjepsen.docker.cluster import ContainerCluster
    from zkjepsen.errors import EnvironmentProblem

    class Layer(ContainerCluster):
        def __init__(self, answers):
            self.power_layer, self.answers, self.asked = True, list(answers), []

        def exec(self, node, argv):
            self.asked.append(argv[3])
            return self.answers.pop(0)

    node = SimpleNamespace(name="n1")
    ok = (0, '{"pending_bytes": 7, "dead": 0}\n')
    layer = Layer([(0, ""), ok])
    assert layer.power(node, "stat") == {"pending_bytes": 7, "dead": 0}
    assert layer.asked == ["stat", "stat"]
    silent = Layer([(1, "powerfs: connect: No such file")] * 3)
    with pytest.raises(EnvironmentProblem, match="n1 did not answer 'sync'.*exit 1"):
        silent.power(node, "sync")
    drop = Layer([(0, ""), ok])
    assert drop.power(node, "drop") == {"unanswered": 1} and drop.asked == ["drop"]


def test_a_server_that_cannot_boot_keeps_the_line_that_says_why():
    from zkjepsen.nemesis.disk import _tail

    stack = [f"\tgo.etcd.io/etcd/raft/node.go:{i} +0x239" for i in range(30)]
    log = "\n".join(["starting", "panic: tocommit(114) is out of range [lastIndex(9)]", *stack])
    kept = _tail(log).splitlines()
    assert kept[0].startswith("panic: tocommit(114)") and kept[1:] == stack[-12:]
    assert _tail("a\nb") == "a\nb"
    fatal = '{"level":"fatal","msg":"discovery failed","error":"walpb: crc mismatch"}'
    assert _tail("\n".join([fatal, *stack])).splitlines()[0] == fatal
    zk = [  # a quorum connection refused first, then the boot's own cause
        "WARN java.net.ConnectException: Connection refused",
        "ERROR [main:QuorumPeer@1200] - Unable to load database on disk",
        "Caused by: java.io.IOException: CRC check failed",
        *(f"\tat org.apache.zookeeper.X{i}" for i in range(20)),
    ]
    assert (
        _tail("\n".join(zk)).splitlines()[0] == "Caused by: java.io.IOException: CRC check failed"
    )


class _Servers:
    """A backend whose servers are names, recording what was done to them (pure logic: which
    servers a disk fault stops and boots, not Docker's part)."""

    def __init__(self, scratch, files: dict[str, list[str]]):
        self.scratch, self.done = str(scratch), []
        self.nodes = {n: SimpleNamespace(name=n) for n in files}
        self.data_files = self.corrupt_files = ("*.log",)
        for name, names in files.items():
            (scratch / "nodes" / name / "data").mkdir(parents=True)
            for f in names:
                (scratch / "nodes" / name / "data" / f).write_bytes(b"entries")

    def kill(self, node):
        self.done.append(("kill", node.name))

    def restart(self, node):
        self.done.append(("restart", node.name))

    def state(self, node):
        return "running"

    def halt(self, node):
        self.done.append(("halt", node.name))

    def power(self, node, mode, writeback_s=0.0):
        self.done.append(("power", node.name))
        return {}  # the layer is not running there


def _ctx(backend):
    def each(fn, items):
        return [fn(x) for x in items]

    return SimpleNamespace(backend=backend, node=lambda n: backend.nodes[n], each=each, live=None)


@pytest.mark.parametrize("with_files", [("n1",), ("n1", "n2"), ()])
def test_a_disk_fault_stops_a_server_only_when_it_can_go_in_and_boots_only_what_it_stopped(
    tmp_path, monkeypatch, with_files
):
    """corrupt-file on servers one of which has saved nothing yet: nothing is stopped and
    nothing booted (a Redis stopped and booted for a fault that "never went in" came back empty,
    and its fence counter restarted); where every target has a file, each is stopped, written
    down as `stopped`, damaged and booted."""
    from zkjepsen.faultkinds.landing import stopped_servers
    from zkjepsen.nemesis import NemesisError

    monkeypatch.setattr(disk, "BOOT_WATCH_S", 0.0)
    servers = _Servers(tmp_path, {n: (["w.log"] if n in with_files else []) for n in ("n1", "n2")})
    kind, ctx, detail = disk.CorruptFile(), _ctx(servers), {"mode": "flip", "seed": 3}
    targets = ["n1", "n2"]
    if len(with_files) < 2:
        with pytest.raises(NemesisError, match="none of its data files"):
            kind.apply(ctx, targets, detail)
        kind.undo(ctx, targets, detail)
        assert servers.done == [] and stopped_servers({}, {"detail": detail}) == []
        return
    kind.apply(ctx, targets, detail)
    kind.undo(ctx, targets, detail)
    assert servers.done == [("kill", "n1"), ("kill", "n2"), ("restart", "n1"), ("restart", "n2")]
    assert stopped_servers({}, {"detail": detail}) == targets


def test_a_power_loss_the_layer_did_not_answer_still_says_the_servers_it_stopped(
    tmp_path, monkeypatch
):
    from zkjepsen.faultkinds.landing import stopped_servers
    from zkjepsen.nemesis import NemesisError

    monkeypatch.setattr(disk, "BOOT_WATCH_S", 0.0)
    servers = _Servers(tmp_path, {"n1": ["w.log"]})
    kind = disk.PowerLoss(mode="drop")
    detail = {"writeback_s": 0.0}
    with pytest.raises(NemesisError, match="answered no power-loss counts"):
        kind.apply(_ctx(servers), ["n1"], detail)
    kind.undo(_ctx(servers), ["n1"], detail)
    assert stopped_servers({}, {"detail": detail}) == ["n1"]
    assert servers.done[-1] == ("restart", "n1")
