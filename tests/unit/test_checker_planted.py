"""A planted stale read is the op named (issue 39): a read of v where a write j of another
value returned before the read was called, and every op that may write v and was called no
later than the read returned (crashed ones included) returned before j was called. Nothing
explains such a read. Checked against the brute-force linearizer: the history is not
linearizable, it is without that read (the read alone breaks it), and the verdict names it
(the op, its client in `violations[].clients`). Unique values (the read-from path) and values
0..2 (overwritten.py, or the sweep first), crashed writes among them."""

from __future__ import annotations

import random
from typing import Any

from test_checker_brute import brute_force, crashed_as_never_completed, to_history

from zkjepsen.checker.linear import Linearizable, make_model
from zkjepsen.checker.linear.overwritten import refute
from zkjepsen.checker.linear.partitions import prepare

MODEL = "etcd-cas-register"


def execution(rng: random.Random, values: int, n: int = 9) -> list[dict]:
    """A valid random execution on one register (values 0..values-1, or fresh ones when
    values is 0), some ops crashed (taken effect or not, completion seen or not)."""
    spans = []
    for _ in range(n):
        start = rng.randrange(40)
        end = start + rng.randrange(1, 12)
        spans.append((rng.uniform(start, end), start, end))
    spans.sort()
    state, fresh, calls = None, 100, []
    for _, start, end in spans:
        f = rng.choice(["read", "write", "cas", "cas"])
        fresh += 1
        new = rng.randrange(values) if values else fresh
        crashed, took = rng.random() < 0.15 and f != "read", rng.random() < 0.5
        if f == "read":
            inv, out, status = None, state, "ok"
        elif f == "write":
            inv, out, status = new, new, "ok"
        else:
            old = state if rng.random() < 0.6 else rng.randrange(values or 100)
            inv = out = [old, new]
            status = "ok" if state == old else "fail"
        if f != "read" and status == "ok" and (took or not crashed):
            state = new
        if crashed:
            status, out = "info", inv
        calls.append(
            {"f": f, "key": None, "value": inv, "out": out, "type": status, "actor": None,
             "start": start, "end": end, "completed": not crashed or rng.random() < 0.5}
        )  # fmt: skip
    return calls


def writes(c: dict) -> Any:
    """The value c may write, or None."""
    if c["f"] == "write" and c["type"] != "fail":
        return c["value"]
    if c["f"] == "cas" and c["type"] != "fail":
        return c["value"][1]
    return None


def plant(calls: list[dict], rng: random.Random) -> int | None:
    """Make one ok read return a value nothing explains (module docstring); its index."""
    order = list(range(len(calls)))
    rng.shuffle(order)
    for r in order:
        c = calls[r]
        if c["f"] != "read" or c["type"] != "ok":
            continue
        for d in calls:
            if d["type"] != "ok" or writes(d) is None or not d["end"] < c["start"]:
                continue
            for v in {writes(e) for e in calls} - {None, c["out"], writes(d)}:
                if all(
                    e["type"] == "ok" and e["end"] < d["start"]
                    for e in calls
                    if writes(e) == v and e["start"] <= c["end"]
                ):
                    c["out"] = v
                    return r
    return None


def test_a_planted_stale_read_is_named_as_the_brute_force_confirms():
    rng = random.Random("planted")
    seen = {0: 0, 3: 0}
    for _ in range(600):
        values = rng.choice([0, 3])
        calls = execution(rng, values)
        r = plant(calls, rng)
        if r is None:
            continue
        want = brute_force(crashed_as_never_completed(calls), MODEL)
        rest = [c for k, c in enumerate(calls) if k != r]
        alone = brute_force(crashed_as_never_completed(rest), MODEL)
        assert want is False and alone in (True, "unknown"), calls  # it alone breaks it
        got = Linearizable(make_model(MODEL)).check(to_history(calls))
        assert got.valid is False
        named = got.details["blamed"]
        assert (named["process"], named["f"], named["status"]) == (r, "read", "ok"), (calls, r)
        assert got.violations[0].clients == (r,)  # to_history: call k is process k
        seen[values] += 1
    assert seen[0] > 100 and seen[3] > 100, seen


def test_overwritten_refutes_only_what_the_brute_force_refutes():
    """On random executions with values 0..2, damaged (a read's value changed), the
    overwritten read refutation answers only where the brute force says not linearizable,
    and does answer often."""
    rng = random.Random("overwritten")
    fired = 0
    for _ in range(1500):
        calls = execution(rng, 3, n=rng.randrange(2, 9))
        for c in calls:
            if c["f"] == "read" and c["type"] == "ok" and rng.random() < 0.3:
                c["out"] = rng.randrange(3)
        m = make_model(MODEL)
        for ops in prepare(to_history(calls), m).values():
            if refute(ops, m.init()) is not None:
                assert brute_force(crashed_as_never_completed(calls), MODEL) is False, calls
                fired += 1
    assert fired > 60, fired  # (105 with these seeds)
