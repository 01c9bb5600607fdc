"""Lock and fencing checkers on hand-written histories: the split-holder story and its variants."""

from __future__ import annotations

import json

from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History, Op


class H:
    """A tiny history builder: times are given explicitly, indices follow call order."""

    def __init__(self):
        self.ops: list[Op] = []

    def add(self, t, process, typ, f, key=None, value=None, client=None):
        self.ops.append(Op(len(self.ops), t, process, typ, f, key, value, client))
        return self

    def call(self, t0, t1, process, f, key, value=None, typ="ok", out=None, client=None):
        self.add(t0, process, "invoke", f, key, value, client)
        return self.add(t1, process, typ, f, key, out, client)

    def fault(self, t, fid, f, phase, targets=("c1",)):
        return self.add(
            t,
            "nemesis",
            "info",
            f,
            None,
            {"fault_id": fid, "phase": phase, "targets": list(targets)},
        )

    def history(self):
        return History(sorted(self.ops, key=lambda o: o.time))


def split_holder(fenced: bool):
    """Client 1 holds token 10 and is paused; client 2 takes token 12 and writes; client 1
    resumes and writes with its stale token (accepted unless the resource is fenced)."""
    h = H()
    h.call(0, 1, 1, "acquire", "/l", out={"token": 10, "seq": 0, "node": "/l/n0"}, client=1)
    h.fault(2, 7, "pause-client", "start")
    h.call(3, 4, 2, "acquire", "/l", out={"token": 12, "seq": 1, "node": "/l/n1"}, client=2)
    h.call(5, 6, 2, "write", "/r", {"token": 12}, client=2)
    h.fault(7, 7, "pause-client", "end")
    h.add(8, 1, "event", "session-state", None, "SUSPENDED", client=1)
    h.call(9, 10, 1, "write", "/r", {"token": 10}, typ="fail" if fenced else "ok", client=1)
    h.call(11, 12, 2, "release", "/l", client=2)
    h.call(13, 14, 1, "release", "/l", client=1)
    return h.history()


def test_split_holder_without_fencing_breaks_atomicity():
    r = LockChecker().check(split_holder(fenced=False))
    assert r.valid is False
    d = r.details
    assert d["belief_overlap_count"] == 1
    b = d["belief_overlaps"][0]
    assert b["clients"] == [1, 2] and (b["start"], b["end"]) == (4, 11)
    assert [f["f"] for f in b["faults"]] == ["pause-client"]
    assert d["effect_overlap_count"] == 1
    e = d["effect_overlaps"][0]
    assert e["kind"] == "stale-after-newer" and e["tokens"] == [10, 12]
    assert e["clients"] == [1, 2]
    assert d["near_miss_count"] == 0
    # the careful application stops believing at its SUSPENDED event (t=8)
    assert d["careful_belief_overlaps"][0]["end"] == 8
    json.dumps(r.to_json())


def test_split_holder_with_fencing_is_a_near_miss():
    r = LockChecker().check(split_holder(fenced=True))
    assert r.details["effect_overlap_count"] == 0
    assert r.details["near_miss_count"] == 1 and r.details["rejected_writes"] == 1
    assert r.valid is False  # mutual exclusion (belief) still broke
    effect = LockChecker(fail_on=["effect"]).check(split_holder(fenced=True))
    assert effect.valid is True
    # The console's line under property=effect still says what the fence kept from the data.
    from zkjepsen.report.summary import summarise

    assert summarise(effect).startswith("1 belief overlaps, judged as near misses")


def test_serial_holds_are_valid_and_info_acquire_is_only_maybe():
    h = H()
    h.call(0, 1, 1, "acquire", "/l", out={"token": 1}, client=1)
    h.call(2, 3, 1, "write", "/r", {"token": 1}, client=1)
    h.call(4, 5, 1, "release", "/l", client=1)
    h.call(6, 7, 2, "acquire", "/l", typ="info", client=2)  # maybe granted, from t=6 on
    h.call(8, 9, 3, "acquire", "/l", out={"token": 3}, client=3)
    h.call(10, 11, 3, "write", "/r", {"token": 3}, client=3)
    r = LockChecker().check(h.history())
    assert r.valid is True
    assert r.details["possible_overlap_count"] == 1 and r.details["maybe_holds"] == 1
    assert r.details["possible_overlaps"][0]["clients"] == [2, 3]


def test_interleaved_writes_of_two_holders():
    h = H()
    h.call(0, 1, 1, "acquire", "/l", out={"token": 1}, client=1)
    h.call(2, 3, 2, "acquire", "/l", out={"token": 2}, client=2)
    h.call(4, 8, 1, "write", "/r", {"token": 1}, client=1)
    h.call(5, 6, 2, "write", "/r", {"token": 2}, client=2)
    r = LockChecker().check(h.history())
    assert [e["kind"] for e in r.details["effect_overlaps"]] == ["interleaved"]


def test_locks_with_different_keys_are_independent_and_same_client_never_conflicts():
    h = H()
    h.call(0, 1, 1, "acquire", "/a", out={"token": 1}, client=1)
    h.call(0, 1, 2, "acquire", "/b", out={"token": 2}, client=2)
    h.call(2, 3, 3, "acquire", "/b", typ="info", client=1)
    r = LockChecker().check(h.history())
    assert r.valid is True and r.details["possible_overlap_count"] == 1


def test_rwlock_readers_share_writers_exclude():
    def run(m1, m2):
        h = H()
        h.call(0, 1, 1, "acquire", "/rw", {"mode": m1}, out={"token": 1, "mode": m1}, client=1)
        h.call(2, 3, 2, "acquire", "/rw", {"mode": m2}, out={"token": 2, "mode": m2}, client=2)
        return LockChecker().check(h.history()).valid

    assert run("read", "read") is True
    assert run("read", "write") is False and run("write", "write") is False


def test_election_uses_configurable_names():
    h = H()
    h.call(0, 1, 1, "elected", "/e", client=1)
    h.call(2, 3, 2, "elected", "/e", client=2)
    assert LockChecker(acquire=["elected"], release=["resign"]).check(h.history()).valid is False
    h2 = H()
    h2.call(0, 1, 1, "elected", "/e", client=1)
    h2.call(2, 3, 1, "resign", "/e", client=1)
    h2.call(4, 5, 2, "elected", "/e", client=2)
    assert LockChecker(acquire=["elected"], release=["resign"]).check(h2.history()).valid is True


def test_fencing_backwards_and_token_ownership():
    assert FencingChecker().check(split_holder(fenced=True)).valid is True
    r = FencingChecker().check(split_holder(fenced=False))
    assert r.valid is False and r.details["backwards"][0]["tokens"] == [12, 10]
    assert [f["f"] for f in r.details["backwards"][0]["faults"]] == ["pause-client"]
    h = H()
    h.call(0, 1, 1, "acquire", "/l", out={"token": 5}, client=1)
    h.call(2, 3, 1, "release", "/l", client=1)
    h.call(4, 5, 2, "acquire", "/l", out={"token": 5}, client=2)  # the same token twice
    h.call(6, 7, 3, "write", "/r", {"token": 5}, client=3)  # a token nobody gave client 3
    r = FencingChecker().check(h.history())
    assert r.details["reused_token_count"] == 1 and r.details["foreign_token_count"] == 1
    assert r.valid is False


def test_without_client_ids_a_retired_process_stops_believing():
    h = H()
    h.call(0, 1, 1, "acquire", "/l", out={"token": 1})
    h.call(2, 3, 1, "write", "/r", {"token": 1}, typ="info")  # process 1 is retired here
    h.call(10, 11, 2, "acquire", "/l", out={"token": 2})
    r = LockChecker().check(h.history())
    assert r.valid is True and r.details["beliefs_cut_at_retirement"] == 1
    with_client = H()
    with_client.call(0, 1, 1, "acquire", "/l", out={"token": 1}, client=1)
    with_client.call(2, 3, 1, "write", "/r", {"token": 1}, typ="info", client=1)
    with_client.call(10, 11, 2, "acquire", "/l", out={"token": 2}, client=2)
    assert LockChecker().check(with_client.history()).valid is False
