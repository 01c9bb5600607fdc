"""The op a refutation names (checker/blame.py): the one op whose removal makes the refuted
partition linearizable, where there is one, checked against the brute-force linearizer."""

from __future__ import annotations

import random

from test_checker_brute import brute_force, crashed_as_never_completed, to_history
from test_checker_readfrom import long_history, unique_calls

from zkjepsen.checker.linear import Linearizable, make_model


def _calls(rows: list[tuple]) -> list[dict]:
    return [
        {"f": f, "key": None, "value": v, "out": o, "type": "ok", "actor": None,
         "start": s, "end": e, "completed": True}
        for f, v, o, s, e in rows
    ]  # fmt: skip


def test_the_op_without_which_it_is_linearizable_is_named_not_the_one_left_stuck():
    # a read of 102 that returned before 102 was written (17 is not before 17: it may also
    # follow the write, and then the cas is what is left over)
    calls = _calls(
        [
            ("read", None, 102, 7, 17),
            ("write", 102, 102, 17, 23),
            ("write", 101, 101, 18, 20),
            ("cas", [102, 104], [102, 104], 23, 29),
        ]
    )
    r = Linearizable(make_model("register")).check(to_history(calls))
    assert r.valid is False
    assert r.details["cannot_place"]["op"] != "read 102"  # what the search is left with
    assert r.details["blamed"]["op"] == "read 102" and r.details["blamed_because"] == "removal"
    assert r.violations[0].clients == (0,)  # the read's process (to_history: one per call)
    assert (r.violations[0].start, r.violations[0].end) == (7, 17)


def test_the_named_op_alone_breaks_it_as_the_brute_force_says():
    """Where an op is named for its removal, the brute force finds the history without it
    linearizable; where the read-from path's op is named because it cannot be placed, no
    single completed op's removal makes the brute force find it linearizable."""
    rng = random.Random("blame")
    seen = {"removal": 0, "cannot-place": 0}
    for _ in range(3000):
        model = rng.choice(["register", "etcd-cas-register"])
        calls = unique_calls(model, rng)
        r = Linearizable(make_model(model)).check(to_history(calls))
        if r.valid is not False:
            continue
        because = r.details["blamed_because"]
        seen[because] += 1
        if because == "removal":
            k = r.details["blamed"]["invoke_index"]
            rest = [c for c in calls if _invoke_index(calls, c) != k]
            # ("unknown": nothing left to read, which every model accepts)
            assert brute_force(crashed_as_never_completed(rest), model) in (True, "unknown")
        elif r.details["refuted_by"] == "read-from":
            for c in calls:
                if c["type"] != "info":
                    rest = [d for d in calls if d is not c]
                    assert brute_force(crashed_as_never_completed(rest), model) is False
    assert seen["removal"] > 150 and seen["cannot-place"] > 20, seen


def _invoke_index(calls: list[dict], c: dict) -> int:
    """The index of c's invocation in to_history(calls)."""
    h = to_history(calls)
    p = calls.index(c)
    return next(op.index for op in h.ops if op.process == p and op.type == "invoke")


def test_a_planted_stale_read_is_the_op_named():
    named = 0
    for seed in range(6):
        h, planted = long_history(3000, 5, seed, stale=True)
        if planted is None:
            continue
        r = Linearizable(make_model("etcd-cas-register")).check(h)
        assert r.valid is False
        assert r.details["blamed"]["complete_index"] == planted, r.details["blamed"]
        assert r.details["blamed_because"] == "removal"
        named += 1
    assert named >= 4
