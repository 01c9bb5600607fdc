"""The atomicity checker for multi-step updates, on hand-built histories and on records made by the
real `lock` workload code (a scripted holder that stops after its first step)."""

from __future__ import annotations

import json
import random

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.checker import compose
from zkjepsen.checker.atomicity import AtomicityChecker
from zkjepsen.client.loop import LockLoop
from zkjepsen.client.recorder import Recorder
from zkjepsen.history import History, Op
from zkjepsen.recipes.base import Token
from zkjepsen.reproduce.replay import violation_kinds
from zkjepsen.workloads import get_workload
from zkjepsen.workloads.context import ClientContext
from zkjepsen.workloads.inprocess import InProcessLockClient
from zkjepsen.workloads.lock import LOCK


def section(ctx, recipe, tok, resource, mode, writes, hold, ready=None):
    """The lock workload's critical section (client/loop.py) over the in-process client."""
    ctx.params.update(resource_path=resource, resource=mode)
    client = InProcessLockClient(ctx, "/l")
    client.recipe = recipe
    LockLoop(ctx, client, "lock").lock_section(tok.to_value(), writes, hold, ready)


class H:
    def __init__(self):
        self.ops: list[Op] = []

    def add(self, t, process, typ, f, key=None, value=None, client=None):
        self.ops.append(Op(len(self.ops), t, process, typ, f, key, value, client))
        return self

    def call(self, t0, t1, c, f, key, value=None, out=None, typ="ok"):
        self.add(t0, c, "invoke", f, key, value, c)
        return self.add(t1, c, typ, f, key, out, c)

    def history(self):
        return History(sorted(self.ops, key=lambda o: o.time))


def state(step, writer, token, version, **kw):
    return {
        "state": "done" if step == 2 else "half",
        "step": step,
        "steps": 2,
        "writer": writer,
        "writer_token": token,
        "version": version,
        **kw,
    }


def holder_dies_mid_update(ready=None, second_step=False):
    """Client 1 (token 10) writes step 1 of 2 and is SIGKILLed (unless `second_step`); client 2
    (token 12) gets the lock when the dead session expires and reads the resource."""
    h = H()
    extra = {} if ready is None else {"ready": ready}
    h.call(0, 1, 1, "acquire", "/l", out={"token": 10, "seq": 0, "node": "/l/f-0"})
    h.call(
        2,
        3,
        1,
        "read",
        "/r",
        {"token": 10},
        {
            "state": None,
            "step": None,
            "steps": None,
            "writer": None,
            "writer_token": None,
            "version": 0,
            **extra,
        },
    )
    h.call(
        4,
        5,
        1,
        "write",
        "/r",
        {"token": 10, "step": 1, "steps": 2},
        {"token": 10, "step": 1, "steps": 2, "version": 1},
    )
    if second_step:
        h.call(
            6,
            7,
            1,
            "write",
            "/r",
            {"token": 10, "step": 2, "steps": 2},
            {"token": 10, "step": 2, "steps": 2, "version": 2},
        )
        h.call(8, 9, 1, "release", "/l")
    else:
        h.add(
            6,
            "nemesis",
            "info",
            "kill-client",
            value={"fault_id": 3, "phase": "start", "targets": ["c1"]},
        )
        h.add(
            7,
            "nemesis",
            "info",
            "kill-client",
            value={"fault_id": 3, "phase": "end", "targets": ["c1"]},
        )
    seen = state(2, 1, 10, 2) if second_step else state(1, 1, 10, 1)
    h.call(20, 21, 2, "acquire", "/l", out={"token": 12, "seq": 1, "node": "/l/f-1"})
    h.call(22, 23, 2, "read", "/r", {"token": 12}, {**seen, **extra})
    return h.history()


def test_next_holder_reading_half_done_state_is_a_violation_naming_both():
    r = AtomicityChecker().check(holder_dies_mid_update())
    assert r.valid is False
    (v,) = r.details["half_done_reads"]
    assert v["clients"] == [1, 2] and v["tokens"] == [10, 12]
    assert (v["start"], v["end"]) == (5, 23)  # from the write that left it to the read
    assert v["left_by_write"]["client"] == 1
    assert [f["f"] for f in v["faults"]] == ["kill-client"]
    assert v["state"]["step"] == 1 and v["state"]["steps"] == 2
    (typed,) = r.violations  # the typed finding the readers use
    assert typed.kind == "half-done-read" and typed.clients == (1, 2)
    assert (typed.start, typed.end) == (5, 23) and typed.fault_ids == {3}


def test_clean_handover_is_valid():
    r = AtomicityChecker().check(holder_dies_mid_update(second_step=True))
    assert r.valid is True and r.details["half_done_read_count"] == 0
    assert r.details["reads"] == 2


def test_ready_file_protocol_turns_it_into_a_detected_state():
    r = AtomicityChecker().check(holder_dies_mid_update(ready=False))
    assert r.valid is True
    assert r.details["detected_by_ready_file_count"] == 1
    # The ready node present over a half-done state: the protocol did not protect the reader.
    assert AtomicityChecker().check(holder_dies_mid_update(ready=True)).valid is False


def test_judged_from_reads_not_from_the_event():
    h = H()
    h.call(0, 1, 2, "acquire", "/l", out={"token": 12})
    h.add(2, 2, "event", "half-done-seen", None, {"token": 12, "left_by": 10}, 2)
    r = AtomicityChecker().check(h.history())
    assert r.valid == "unknown"  # an event alone proves nothing, and nothing was read


def test_no_reads_is_unknown_not_valid():
    h = H().call(0, 1, 1, "acquire", "/l", out={"token": 1})
    assert AtomicityChecker().check(h.history()).valid == "unknown"
    assert AtomicityChecker().check(History([])).valid == "unknown"


def test_own_half_state_and_old_format_without_steps():
    h = H()
    h.call(0, 1, 1, "acquire", "/l", out={"token": 5})
    # A read of its own hold's half state is not another holder's leftover.
    h.call(2, 3, 1, "read", "/r", {"token": 5}, {"state": "half", "writer": 1, "writer_token": 5})
    assert AtomicityChecker().check(h.history()).valid is True
    # No tokens, no steps (an imported history): "half" by another client is still caught.
    h2 = H().call(0, 1, 2, "read", "/r", None, {"state": "half", "writer": 1})
    r = AtomicityChecker().check(h2.history())
    assert r.valid is False and r.details["half_done_reads"][0]["clients"] == [1, 2]


def test_lock_workload_wires_atomicity_only_for_multi_step_updates():
    assert "atomicity" in LOCK.checkers({"writes": 2})
    assert "atomicity" in LOCK.checkers({})  # the default is a 2-step update
    assert "atomicity" not in LOCK.checkers({"writes": 1})
    assert "atomicity" not in get_workload("rwlock").checkers({})  # one step per writer
    assert "atomicity" in get_workload("election").checkers({})
    res = compose(LOCK.checkers({})).check(holder_dies_mid_update())
    assert res.valid is False and violation_kinds(res) == {"atomicity:half-done-read"}


class Zk:
    """A resource znode and a ready node, enough for the workload's update code."""

    def __init__(self) -> None:
        self.data, self.version, self.nodes = b"{}", 0, {"/r-ready"}

    def get(self, path):
        return self.data, type("S", (), {"version": self.version})()

    def set(self, path, data, version=-1):
        self.data, self.version = data, self.version + 1
        return type("S", (), {"version": self.version})()

    def exists(self, path, watch=None):
        return object() if path in self.nodes else None

    def create(self, path, data=b"", makepath=False):
        if path in self.nodes:
            raise NodeExistsError()
        self.nodes.add(path)

    def delete(self, path):
        if path not in self.nodes:
            raise NoNodeError()
        self.nodes.discard(path)


class Holder:
    def __init__(self, steps_held):
        self.left = steps_held

    def holding(self):
        self.left -= 1
        return self.left >= 0


def run_two_holders(tmp_path, ready):
    """Through the workload code: holder 1 stops holding after its first step, holder 2 follows."""
    zk = Zk()
    tmp_path.mkdir()
    paths = []
    for client, token, steps in ((1, 10, 1), (2, 12, 3)):  # holding() answers
        path = tmp_path / f"c{client}.jsonl"
        paths.append(path)
        ctx = ClientContext(
            client=client,
            nclients=2,
            session=zk,
            hosts="",
            recipe="paper",
            params={},
            recorder=Recorder(str(path), 0, client, 2),
            deadline=float("inf"),
            rng=random.Random(1),
        )
        ready_node = "/r-ready" if ready else None
        section(
            ctx, Holder(steps), Token(token, client, "/l/f"), "/r", "unguarded", 2, 0.0, ready_node
        )
        ctx.recorder.close()
    recs = [json.loads(x) for p in paths for x in p.read_text().splitlines()]
    recs.sort(key=lambda r: r["time"])
    for i, r in enumerate(recs):
        r["index"] = i
    return History([Op.from_dict(r) for r in recs]), zk


def test_workload_records_show_the_violation_and_the_ready_file_avoids_it(tmp_path):
    h, zk = run_two_holders(tmp_path / "a", ready=False)
    r = AtomicityChecker().check(h)
    assert r.valid is False and r.details["half_done_reads"][0]["clients"] == [1, 2]
    h, zk = run_two_holders(tmp_path / "b", ready=True)
    r = AtomicityChecker().check(h)
    assert r.valid is True and r.details["detected_by_ready_file_count"] == 1
    assert "/r-ready" in zk.nodes  # holder 2 completed its update and re-created `ready`
    fs = [(op.f, op.type) for op in h if op.client == 2 and op.type in ("ok", "fail")]
    assert fs[:3] == [("read", "ok"), ("unready", "ok"), ("write", "ok")]
    assert fs[-1] == ("ready", "ok")


def test_timeline_frames_the_half_done_read():
    from zkjepsen.report.timeline import render_timeline

    h = holder_dies_mid_update()
    results = compose(LOCK.checkers({})).check(h).to_json()
    page = render_timeline([op.to_dict() for op in h], results, "t")
    assert "1 violations marked" in page and "atomicity half-done-read: clients [1, 2]" in page
