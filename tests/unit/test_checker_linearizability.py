"""WGL on small hand-written histories: each model, the prunings, budgets, result shape."""

from __future__ import annotations

import json

import pytest

from zkjepsen.checker import Result, compose, merge_valid, safe_check
from zkjepsen.checker.linear import ILLEGAL, Linearizable, check_partitions, make_model, prepare
from zkjepsen.errors import BadInput
from zkjepsen.history import FaultWindow, History, Op
from zkjepsen.report.counterexample import render

# A deadline only so that a broken checker cannot hang the suite: the tests assert verdicts,
# and a busy machine (CI beside other work, the integration worker beside this one) is slow,
# not wrong. Far above what any of these checks takes on an idle machine (well under 1 s).
DECIDE_S = 300


def hist(*calls):
    """calls: (process, f, invoke value, start, end, completion type, completion value[, key])."""
    evs = []
    for c in calls:
        p, f, v, start, end, typ, out = c[:7]
        key = c[7] if len(c) > 7 else None
        evs.append((start, Op(0, start, p, "invoke", f, key, v)))
        if end is not None:
            evs.append((end, Op(0, end, p, typ, f, key, out)))
    evs.sort(key=lambda e: e[0])
    ops = []
    for i, (_, op) in enumerate(evs):
        op.index = i
        ops.append(op)
    return History(ops)


def check(model, h, initial=None, **kw):
    return Linearizable(make_model(model, initial), **kw).check(h)


def test_register_stale_read_is_refuted_with_prefix_and_stuck_op():
    h = hist((0, "write", 1, 0, 10, "ok", 1), (1, "read", None, 20, 30, "ok", None))
    r = check("register", h)
    assert r.valid is False
    assert [o["op"] for o in r.details["longest_prefix"]] == ["write 1"]
    assert r.details["cannot_place"]["op"] == "read None"
    json.dumps(r.to_json())  # results.json must be able to hold it


def test_refutation_names_the_faults_active_around_the_stuck_op():
    h = hist((0, "write", 1, 0, 10, "ok", 1), (1, "read", None, 20, 30, "ok", None))
    h.ops.append(
        Op(
            len(h.ops),
            15,
            "nemesis",
            "info",
            "partition-halves",
            value={"fault_id": 1, "phase": "start", "targets": ["n1"]},
        )
    )
    r = check("register", h)
    assert [f["f"] for f in r.details["faults"]] == ["partition-halves"]


def test_concurrent_read_may_see_either_value():
    for seen in (None, 1):
        h = hist((0, "write", 1, 0, 10, "ok", 1), (1, "read", None, 5, 30, "ok", seen))
        assert check("register", h).valid is True


def test_crashed_write_is_optional_either_way():
    for seen in (0, 7):
        h = hist((0, "write", 7, 0, None, None, None), (1, "read", None, 5, 30, "ok", seen))
        assert check("cas-register", h, 0).valid is True
    h = hist((0, "write", 7, 0, None, None, None), (1, "read", None, 5, 30, "ok", 8))
    assert check("cas-register", h, 0).valid is False


def test_crashed_op_takes_effect_only_after_its_invocation():
    h = hist((1, "read", None, 0, 3, "ok", 7), (0, "write", 7, 5, None, None, None))
    assert check("cas-register", h, 0).valid is False


def test_failed_cas_semantics_differ_between_knossos_and_etcd():
    # the failed cas [0 5] asserts "the register did not hold 0" for porcupine's etcd model
    h = hist((0, "cas", [0, 5], 0, 10, "fail", [0, 5]))
    assert check("cas-register", h, 0).valid is True
    assert check("etcd-cas-register", h, 0).valid is False
    timed_out = hist((0, "read", None, 0, 10, "fail", "timed-out"))
    assert check("etcd-cas-register", timed_out, 0).valid is True


def test_nil_read_is_unknown_for_knossos_but_a_value_for_zookeeper():
    h = hist((0, "write", 1, 0, 10, "ok", 1), (1, "read", None, 20, 30, "ok", None))
    assert check("cas-register", h, 0).valid is True
    assert check("register", h, 0).valid is False


def test_identical_crashed_ops_still_allow_every_needed_order():
    # Two crashed "write 1" and a crashed "write 2": the reads need 1, then 2, then 1 again.
    h = hist(
        (0, "write", 1, 0, None, None, None),
        (1, "write", 1, 1, None, None, None),
        (2, "write", 2, 2, None, None, None),
        (3, "read", None, 10, 11, "ok", 1),
        (3, "read", None, 12, 13, "ok", 2),
        (3, "read", None, 14, 15, "ok", 1),
    )
    assert check("register", h).valid is True
    h2 = hist(
        (0, "write", 1, 0, None, None, None),
        (2, "write", 2, 2, None, None, None),
        (3, "read", None, 10, 11, "ok", 1),
        (3, "read", None, 12, 13, "ok", 2),
        (3, "read", None, 14, 15, "ok", 1),
    )
    assert check("register", h2).valid is False


@pytest.mark.parametrize(
    "model,calls,valid",
    [
        ("counter", [(0, "add", 1, 0, 5, "ok", 1), (1, "read", None, 6, 7, "ok", 1)], True),
        ("counter", [(0, "add", 1, 0, 5, "ok", 1), (1, "read", None, 6, 7, "ok", 0)], False),
        (
            "mutex",
            [(0, "acquire", None, 0, 5, "ok", None), (1, "acquire", None, 6, 7, "ok", None)],
            False,
        ),
        (
            "mutex",
            [
                (0, "acquire", None, 0, 5, "ok", None),
                (0, "release", None, 6, 7, "ok", None),
                (1, "acquire", None, 8, 9, "ok", None),
            ],
            True,
        ),
        (
            "fenced-mutex",
            [
                (0, "acquire", None, 0, 5, "ok", {"token": 5}),
                (0, "release", None, 6, 7, "ok", None),
                (1, "acquire", None, 8, 9, "ok", {"token": 3}),
            ],
            False,
        ),
        (
            "fenced-mutex",
            [
                (0, "acquire", None, 0, 5, "ok", {"token": 5}),
                (1, "release", None, 6, 7, "ok", None),
            ],
            False,
        ),
        (
            "set",
            [
                (0, "add", 1, 0, 5, "ok", 1),
                (1, "add", 2, 0, 5, "ok", 2),
                (2, "read", None, 6, 7, "ok", [2, 1]),
            ],
            True,
        ),
        ("set", [(0, "add", 1, 0, 5, "ok", 1), (2, "read", None, 6, 7, "ok", [])], False),
        (
            "fifo-queue",
            [
                (0, "enqueue", 1, 0, 1, "ok", 1),
                (0, "enqueue", 2, 2, 3, "ok", 2),
                (1, "dequeue", None, 4, 5, "ok", 2),
            ],
            False,
        ),
        (
            "fifo-queue",
            [
                (0, "enqueue", 1, 0, 3, "ok", 1),
                (1, "enqueue", 2, 1, 3, "ok", 2),
                (2, "dequeue", None, 4, 5, "ok", 2),
                (2, "drain", None, 6, 7, "ok", [1]),
            ],
            True,
        ),
        (
            "fifo-queue",
            [(1, "dequeue", None, 0, 1, "fail", None), (0, "enqueue", 1, 2, 3, "ok", 1)],
            True,
        ),
        (
            "kv",
            [
                (0, "put", "a", 0, 1, "ok", "a", "k1"),
                (0, "append", "b", 2, 3, "ok", "b", "k1"),
                (1, "get", None, 4, 5, "ok", "ab", "k1"),
                (1, "get", None, 6, 7, "ok", "", "k2"),
            ],
            True,
        ),
        (
            "kv-single",
            [(0, "put", "a", 0, 1, "ok", "a", "k1"), (1, "get", None, 4, 5, "ok", "a", "k2")],
            False,
        ),
        (
            "multi-register",
            [
                (
                    0,
                    "txn",
                    [["write", "x", 1], ["write", "y", 2]],
                    0,
                    1,
                    "ok",
                    [["write", "x", 1], ["write", "y", 2]],
                ),
                (
                    1,
                    "txn",
                    [["read", "x", None], ["read", "y", None]],
                    2,
                    3,
                    "ok",
                    [["read", "x", 1], ["read", "y", 0]],
                ),
            ],
            False,
        ),
    ],
)
def test_models(model, calls, valid):
    assert check(model, hist(*calls)).valid is valid


def test_model_step_protocol():
    m = make_model("cas-register", 0)
    a = m.action("cas", None, [0, 3], "ok", 1)
    assert m.step(m.init(), a) == (True, 3)
    assert m.step(5, a) == (False, ILLEGAL)
    with pytest.raises(BadInput, match="no operation 'frobnicate'"):
        m.action("frobnicate", None, None, "ok", 1)
    with pytest.raises(BadInput, match="unknown model"):
        make_model("nope")


def test_partitions_are_independent_and_named():
    h = hist(
        (0, "write", 1, 0, 1, "ok", 1, "a"),
        (1, "read", None, 2, 3, "ok", 1, "b"),
        (2, "read", None, 2, 3, "ok", 1, "a"),
    )
    r = check("register", h)
    assert r.valid is False and r.details["partition"] == "b" and r.details["partitions"] == 2


def test_budget_gives_unknown_with_reason():
    # 16 concurrent crashed writes and an impossible read: exhaustive search is exponential.
    # (A value written twice keeps the read-from path out: that one decides it at once.)
    calls = [(p, "write", p, p, None, None, None) for p in range(16)]
    calls.append((16, "write", 0, 16, None, None, None))
    calls.append((99, "read", None, 20, 21, "ok", -1))
    calls.append((98, "read", None, 20, 21, "ok", 3))
    model = make_model("register")
    parts = prepare(hist(*calls), model)
    verdict, _, reason = check_partitions(parts, model, time_limit=0.05)
    assert verdict == "unknown" and "time limit of 0.05 s" in reason


def test_an_unknown_verdict_names_k_and_the_ambiguous_ops():
    """Issue 54: unknown says why. Seven crashed writes (the search may place each anywhere
    after its call, or nowhere; 0 twice keeps the read-from path out), a read of a value one
    of them wrote, and a read nobody explains: the frontier is the first read that returns,
    and k counts the six writes nothing read; the frontier is in the window but not ambiguous
    (-1 has no writer). The write of 3 is not ambiguous: 3 has no other writer and was read,
    so it took effect before that read returned (pinned.py), and the read of 3 reads it.
    Time limit 0: the search never steps, so the answer does not depend on how far it got."""
    calls = [(p, "write", p, p, None, None, None) for p in range(6)]
    calls.append((6, "write", 0, 6, None, None, None))
    calls.append((99, "read", None, 20, 21, "ok", -1))
    calls.append((98, "read", None, 20, 22, "ok", 3))
    r = check("register", hist(*calls), time_limit=0)
    assert r.valid == "unknown"
    (found,) = r.details["ambiguous"]
    assert found["frontier"]["op"] == "read -1"
    assert found["k"] == 6 and found["window"] == 9
    assert sorted(o["op"] for o in found["ops"]) == sorted(
        [f"write {p}" for p in range(6) if p != 3] + ["write 0"]
    )
    assert {o["why"].split(":")[0] for o in found["ops"]} == {"crashed"}
    assert "k=6 ambiguous op(s) among 9" in r.details["reason"]
    assert "before read -1" in r.details["reason"]
    # the same history without the read nobody explains is decided, and carries no such thing
    decided = check("register", hist(*calls[:7], calls[8]), time_limit=DECIDE_S)
    assert decided.valid is True and "ambiguous" not in decided.details


def test_a_decided_history_is_not_unknown_at_a_zero_time_limit():
    """The deadline is read after the fast paths: with nothing left to search it is no reason
    for unknown (it was: "time limit of 0 s reached with 0 partition(s) undecided")."""
    h = hist((0, "write", 1, 0, 1, "ok", 1), (1, "read", None, 2, 3, "ok", 1))
    assert check("register", h, time_limit=0).valid is True


def test_compose_priority_and_exceptions_become_unknown():
    class Boom:
        def check(self, history):
            raise RuntimeError("bad checker")

    class Fixed:
        def __init__(self, v):
            self.v = v

        def check(self, history):
            return Result(self.v, {})

    h = History([])
    assert safe_check(Boom(), h).valid == "unknown"
    assert "bad checker" in safe_check(Boom(), h).details["error"]
    r = compose({"a": Fixed(True), "b": Boom()}).check(h)
    assert r.valid == "unknown" and r.parts["b"].valid == "unknown"
    assert r.to_json()["b"]["valid"] == "unknown"  # results.json keeps the nested shape
    assert compose({"a": Fixed("unknown"), "b": Fixed(False)}).check(h).valid is False
    assert merge_valid([]) == "unknown"  # nothing judged is not valid (issue 48)
    assert compose({}).check(h).valid == "unknown"
    json.dumps(r.to_json())


def test_counterexample_html_is_self_contained():
    # read 1 comes after read 3, and 3 (a crashed write that read 3 observed) came after 1
    h = hist(
        (0, "write", 1, 0, 10, "ok", 1),
        (1, "read", None, 20, 30, "ok", 1),
        (2, "write", 3, 5, None, None, None),
        (3, "read", None, 12, 14, "ok", 3),
    )
    c = Linearizable(make_model("register"))
    r = c.check(h)
    assert r.valid is False
    faults = [FaultWindow(1, "kill-leader", ["n2"], 22, 26), FaultWindow(2, "late", [], 99, None)]
    page = render(r.outcome, c.model, title="t", faults=faults)
    assert "kill-leader" in page and "late" not in page
    assert page.startswith("<!doctype html>") and "op lin" in page and "op bad" in page
    assert "crashed" in page and "read 1" in page
    assert "<script src" not in page and "http" not in page


def test_memory_budget_gives_unknown_with_reason():
    calls = [(p, "write", p, p, None, None, None) for p in range(18)]
    calls.append((18, "write", 0, 18, None, None, None))  # (search, not the read-from path)
    calls.append((99, "read", None, 20, 21, "ok", -1))
    model = make_model("register")
    verdict, _, reason = check_partitions(
        prepare(hist(*calls), model), model, time_limit=DECIDE_S, memory_limit=1
    )
    assert verdict == "unknown" and "memory limit" in reason


def test_write_failures_writes_one_page_per_refuted_checker(tmp_path):
    from zkjepsen.report.counterexample import write_failures

    bad = hist((0, "write", 1, 0, 10, "ok", 1), (1, "read", None, 20, 30, "ok", 2))
    checkers = {"linear": Linearizable(make_model("register")), "other": compose({})}
    paths = write_failures(compose(checkers).check(bad), checkers, tmp_path, bad)
    assert [p.name for p in paths] == ["counterexample.html"]
    assert "read 2" in paths[0].read_text()
    good = hist((0, "write", 1, 0, 10, "ok", 1))
    assert write_failures(compose(checkers).check(good), checkers, tmp_path / "x") == []
