"""A grant the service never saw is a violation of its own kind (issue 48, checker/phantom.py):
the clients' beliefs against the observer's readings of who holds, from the history alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.checker import compose
from zkjepsen.checker.phantom import KIND, PhantomChecker, phantom_of, session_number
from zkjepsen.history import History, Op
from zkjepsen.workloads import get_workload

MS = 1_000_000
NODE = "/zkjepsen/lock/_c_1-lock-0000000001"


class H:
    """A hand-made history: clients' grants and the observer's readings, in time order."""

    def __init__(self, identity="node", horizon_ms=4000, service="ZooKeeper"):
        self.ops: list[Op] = []
        setup = {"service": service, "identity": identity, "lock_path": "/zkjepsen/lock"}
        self.add(0, "observer", "event", "observer-start", {**setup, "horizon_ms": horizon_ms})

    def add(self, t, process, type_, f, value=None, client=None):
        self.ops.append(Op(0, t, process, type_, f, None, value, client))
        return self

    def grant(self, client, ok_ms, release_ms, node=NODE, token=7):
        self.add(ok_ms * MS - MS, client, "invoke", "acquire", None, client)
        self.add(ok_ms * MS, client, "ok", "acquire", {"token": token, "node": node}, client)
        if release_ms is not None:
            self.add(release_ms * MS, client, "invoke", "release", None, client)
            self.add(release_ms * MS + MS, client, "ok", "release", None, client)
        return self

    def readings(self, from_ms, to_ms, holders=(), owners=None, ok=True, every_ms=50):
        for t in range(from_ms, to_ms, every_ms):
            v = {"start": t * MS, "ok": ok, "holders": list(holders)}
            if owners is not None:
                v["owners"] = owners
            if not ok:
                v = {"start": t * MS, "ok": False, "error": "ConnectionLoss"}
            self.add(t * MS + 2 * MS, "observer", "event", "holders", v)
        return self

    def history(self):
        ops = sorted(self.ops, key=lambda o: o.time)
        for i, op in enumerate(ops):
            op.index = i
        return History(ops)


def test_a_fake_grant_against_empty_readings_is_a_phantom_grant_naming_client_and_time():
    h = H().grant(1, 100, 600).readings(0, 1000).history()
    r = phantom_of(h)
    assert r is not None and r.valid is False
    (v,) = r.violations
    assert v.kind == KIND and v.clients == (1,) and v.start == 100 * MS
    assert "client 1" in v.evidence["why"] and "0.100 s" in v.evidence["why"]


def test_a_real_holder_seen_by_its_node_is_no_phantom():
    h = H().grant(1, 100, 600).readings(0, 100).readings(100, 600, [NODE]).readings(600, 900)
    r = phantom_of(h.history())
    assert r is not None and r.valid is True and not r.violations
    assert r.details["checked"] == 1 and "seen by ZooKeeper" in r.details["note"]


def test_another_clients_node_does_not_confirm_a_grant():
    other = "/zkjepsen/lock/_c_2-lock-0000000002"
    h = H().grant(1, 100, 600, node=NODE).readings(0, 900, [other])
    r = phantom_of(h.history())
    assert r is not None and r.valid is False and r.violations[0].evidence["node"] == NODE


def test_a_node_owned_by_another_session_than_the_clients_is_a_phantom():
    h = H().add(10 * MS, 1, "event", "session", {"session_id": "0x1a", "timeout_ms": 4000}, 1)
    h.grant(1, 100, 600).readings(0, 900, [NODE], owners={NODE: "0x2b"})
    r = phantom_of(h.history())
    assert r is not None and r.valid is False
    h2 = H().add(10 * MS, 1, "event", "session", {"session_id": "0x1a", "timeout_ms": 4000}, 1)
    h2.grant(1, 100, 600).readings(0, 900, [NODE], owners={NODE: hex(0x1A)})
    ok = phantom_of(h2.history())
    assert ok is not None and ok.valid is True
    # a persistent node (ephemeralOwner 0: kazoo's NonBlockingLease) belongs to no session
    h3 = H().add(10 * MS, 1, "event", "session", {"session_id": "0x1a", "timeout_ms": 4000}, 1)
    h3.grant(1, 100, 600).readings(0, 900, [NODE], owners={NODE: hex(0)})
    persistent = phantom_of(h3.history())
    assert persistent is not None and persistent.valid is True


def test_a_grant_seen_once_then_expired_is_no_phantom():
    # a paused holder's session expires while it still believes: a split holder for the lock
    # checker to judge, not a grant the service never saw
    h = H().grant(1, 100, 3000).readings(100, 300, [NODE]).readings(300, 3000)
    r = phantom_of(h.history())
    assert r is not None and r.valid is True


def test_readings_that_failed_count_for_nothing():
    h = H().grant(1, 100, 600).readings(0, 900, ok=False)
    r = phantom_of(h.history())
    assert r is not None and r.valid == "unknown" and "none could be checked" in r.details["reason"]


def test_readings_past_the_horizon_do_not_convict_a_grant_the_observer_missed():
    # the observer could not read for the grant's first 4 s (its horizon): whatever it saw
    # afterwards, the service may have dropped the grant by then
    h = H(horizon_ms=4000).grant(1, 100, 9000).readings(100, 4200, ok=False)
    r = phantom_of(h.readings(4200, 9000).history())
    assert r is not None and r.valid == "unknown"


def test_a_grant_too_short_for_two_readings_is_not_checked():
    h = H().grant(1, 100, 140).grant(1, 300, 900).readings(0, 1000, [NODE])
    r = phantom_of(h.history())
    assert r is not None and r.valid is True
    assert r.details["checked"] == 1 and "1 too short to check" in r.details["note"]


def test_without_a_node_any_holder_confirms_and_none_convicts():
    h = H().grant(1, 100, 600, node=None).readings(0, 900, ["/zkjepsen/lock/x"])
    assert phantom_of(h.history()).valid is True
    h = H().grant(1, 100, 600, node=None).readings(0, 900)
    assert phantom_of(h.history()).valid is False


def test_redis_shows_whether_a_lock_is_held_not_whose():
    h = H("any", service="Redis").grant(1, 100, 600).readings(0, 900, ["zkjepsen:lock:/l"])
    r = phantom_of(h.history())
    assert r.valid is True and "cannot say whose" in r.details["note"]
    h = H("any", service="Redis").grant(1, 100, 600).readings(0, 900)
    assert phantom_of(h.history()).valid is False


def test_etcd_matches_the_token_to_a_lock_keys_create_revision():
    h = H("token", service="etcd").grant(1, 100, 600, token=42).readings(0, 900, [42])
    assert phantom_of(h.history()).valid is True
    h = H("token", service="etcd").grant(1, 100, 600, token=42).readings(0, 900, [41])
    assert phantom_of(h.history()).valid is False


def test_a_belief_ends_at_a_client_error_or_a_lost_session():
    h = H().grant(1, 100, None).add(120 * MS, 1, "event", "client-error", "hung", 1)
    h.grant(2, 200, None).add(220 * MS, 2, "event", "session-state", "LOST", 2)
    r = phantom_of(h.readings(0, 2000).history())
    assert r.valid == "unknown" and r.details["checked"] == 0


def test_a_recipe_without_service_side_truth_says_so_in_a_line():
    h = History([Op(0, 0, "observer", "event", "observer-start", value={"service": "PostgreSQL"})])
    r = phantom_of(h)
    assert r.valid is True and r.details["note"].startswith("grants not checked against Post")


def test_an_unobserved_history_has_no_phantom_part_to_say():
    h = H().grant(1, 100, 600).history()
    unobserved = History([op for op in h.ops if op.process != "observer"])
    assert phantom_of(unobserved) is None
    assert PhantomChecker().check(unobserved).valid is True


def test_the_lock_workloads_verdict_carries_the_phantom_part():
    h = H().grant(1, 100, 600).readings(0, 900).history()
    checkers = get_workload("lock").checkers({})
    r = compose(checkers).check(h)
    assert r.parts["phantom"].valid is False and r.valid is False


def test_session_ids_as_programs_report_them():
    assert session_number("0x1f") == 31 and session_number("31") == 31
    assert session_number(31) == 31 and session_number("etcd-12-ab") is None
    assert session_number(True) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(1, 40)), min_size=1, max_size=6
    ),  # (think, hold) in units of 10 ms
    st.integers(10, 80),  # the observer's interval, ms
    st.sampled_from(["node", "token", "any"]),
)
def test_a_program_that_fakes_every_grant_is_never_valid(holds, every_ms, identity):
    """Whatever the grants' lengths and the readings' rhythm: where the service never showed
    a holder, the phantom part is INVALID or unknown, never VALID."""
    h = H(identity)
    t = 10
    for think, hold in holds:
        start = t + think * 10
        h.grant(1, start, start + hold * 10 + 1)
        t = start + hold * 10 + 5
    r = phantom_of(h.readings(0, t + 200, every_ms=every_ms).history())
    assert r is not None and r.valid is not True


def test_the_summary_line_names_phantom_grants_and_the_first_client():
    from zkjepsen.report.summary import summarise

    r = phantom_of(H().grant(2, 100, 600).readings(0, 900).history())
    line = summarise(r)
    assert line.startswith("1 grants the service never saw (phantom grants)")
    assert "clients [2] at 0.10s-0.60s" in line


def test_an_observer_that_could_not_read_leaves_the_part_unknown():
    setup = {"service": "etcd", "identity": None, "why": "no session", "failed": True}
    h = H().grant(1, 100, 600).readings(0, 900).history()
    h.ops[0] = Op(0, 0, "observer", "event", "observer-start", value=setup)
    assert phantom_of(h).valid == "unknown"


def test_the_observer_records_readings_until_the_runs_stop_and_ends_its_session(tmp_path):
    import threading

    from zkjepsen.history import read_jsonl
    from zkjepsen.run.observer import Observer

    class Session:
        stopped = closed = False

        def stop(self):
            self.stopped = True

        def close(self):
            self.closed = True

    answers = iter([{"holders": ["/l/a"]}, RuntimeError("ConnectionLoss")])

    def read():
        try:
            a = next(answers)
        except StopIteration:
            stop.set()
            return {"holders": []}
        if isinstance(a, Exception):
            raise a
        return a

    stop, session, path = threading.Event(), Session(), tmp_path / "nemesis.jsonl"
    obs = Observer(path, 0, {"service": "ZooKeeper", "identity": "node"}, read, session, stop)
    obs.join()
    ops = read_jsonl(path).ops
    assert [o.f for o in ops] == ["observer-start", "holders", "holders", "holders"]
    assert [o.value.get("ok") for o in ops[1:]] == [True, False, True]
    assert ops[2].value["error"] == "RuntimeError: ConnectionLoss"
    assert ops[1].value["start"] <= ops[1].time and session.stopped and session.closed


def test_the_observers_readings_get_no_lane_in_the_timeline():
    from zkjepsen.report.timeline import render_timeline

    h = H().grant(1, 100, 600).readings(0, 900, [NODE]).history()
    html = render_timeline([op.to_dict() for op in h.ops], None, "t")
    assert ">1<" in html or "client 1" in html
    assert "observer" not in html


def test_a_node_below_the_lock_paths_children_is_matched_by_any_holder():
    # Curator's InterProcessSemaphoreMutex: its lease node is <lock>/leases/_c_…-lease-…
    deep = "/zkjepsen/lock/leases/_c_1-lease-0000000001"
    h = H().grant(1, 100, 600, node=deep).readings(0, 900, ["/zkjepsen/lock/leases"])
    assert phantom_of(h.history()).valid is True
    h = H().grant(1, 100, 600, node=deep).readings(0, 900)
    assert phantom_of(h.history()).valid is False
