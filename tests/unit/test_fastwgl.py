"""The compiled search (checker/linear/_fastwgl.h, wgl.proven_valid) against the Python WGL
search: on random histories of every register and kv model, valid by construction or damaged,
with crashed ops, it proves valid exactly the partitions the Python search finds linearizable
(given the budget to finish), with its domination among crashed ops or without, never one the
search refutes; with a small budget it gives up (None), it does not guess; and a whole check
keeps its verdict with it and without it."""

from __future__ import annotations

import random
import shutil
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_checker_brute import brute_force, crashed_as_never_completed, to_history
from test_checker_pinned import call
from test_fastsweep import MODELS_HERE, history

from zkjepsen.checker.linear import Linearizable, make_model, prepare
from zkjepsen.checker.linear import engine as engine_mod
from zkjepsen.checker.linear import wgl as wgl_mod
from zkjepsen.checker.linear.pinned import pin, unpinned
from zkjepsen.checker.linear.wgl import proven_valid, run
from zkjepsen.history import History, Op

if wgl_mod._search_valid is None:  # noqa: SLF001 - whether the module was built
    if shutil.which("gcc"):
        pytest.fail("checker/linear/_fastsweep.c is not built though gcc is here: run ./run test")
    pytest.skip("no C compiler: the search is pure Python here", allow_module_level=True)


@pytest.mark.parametrize("model", MODELS_HERE)
def test_the_compiled_search_proves_what_the_python_search_finds_valid(model):
    rng = random.Random(f"fastwgl-{model}")
    seen: dict[Any, int] = {True: 0, False: 0}
    for case in range(300):
        n = rng.choice([3, 8, 20, 60]) if case % 50 else 400
        h = history(model, rng, n, rng.choice([1, 2, 3, 5, 9]))
        m = make_model(model, 0 if model == "cas-register" else None)
        for ops in prepare(h, m).values():
            want = run(ops, m.init(), m.lookahead()).valid
            got = proven_valid(ops, m.init(), None, per_op=1 << 20)
            assert (got is not None) == want, (model, case)
            # and with the domination among crashed ops (engine._patient's): it prunes only
            # what a visited configuration covers, so it proves exactly as much
            dom = proven_valid(ops, m.init(), None, per_op=1 << 20, dominate=True)
            assert (dom is not None) == want, (model, case, "dominate")
            if got is not None:
                assert got.valid is True and got.best == [] and got.stuck is None
            seen[want] += 1
    assert all(seen.values()), seen  # both answers were exercised


def test_a_budget_run_out_gives_no_answer_not_a_guess():
    rng = random.Random("fastwgl-budget")
    m = make_model("etcd-cas-register")
    h = history("etcd-cas-register", rng, 400, 5)
    (ops,) = prepare(h, m).values()
    assert wgl_mod._search_valid(ops, m.init(), 3, None) == (None, 4)  # noqa: SLF001


def test_a_memory_bound_run_out_gives_no_answer_not_a_guess():
    """The compiled search runs between the engine's RSS polls, so it keeps its tables under
    the bound it is given itself: past it, no answer (the Python search, polled, decides)."""
    rng = random.Random("fastwgl-memory")
    m = make_model("etcd-cas-register")
    (ops,) = prepare(cas_history(rng, 400, 5, False), m).values()
    assert proven_valid(ops, m.init(), None, per_op=1 << 20, dominate=True) is not None
    assert proven_valid(ops, m.init(), None, 1 << 20, True, max_bytes=1 << 30) is not None
    assert proven_valid(ops, m.init(), None, 1 << 20, True, max_bytes=1) is None
    assert wgl_mod._search_valid(ops, m.init(), 1 << 30, None, True, None, 1) == (None, 1)  # noqa: SLF001


def test_a_check_gives_its_compiled_searches_its_memory_limit(monkeypatch):
    bounds: list[int | None] = []
    real = engine_mod.proven_valid

    def spy(*args: Any, **kw: Any) -> Any:
        bounds.append(kw.get("max_bytes", args[5] if len(args) > 5 else None))
        return real(*args, **kw)

    monkeypatch.setattr(engine_mod, "proven_valid", spy)
    rng = random.Random("fastwgl-memory-check")
    h = cas_history(rng, 2500, 5, False)  # long: the compiled search goes first
    assert Linearizable(make_model("etcd-cas-register"), memory_limit=123 << 20).check(h).valid
    assert bounds and set(bounds) == {123 << 20}


def test_unsortable_times_and_raising_transitions_are_left_to_the_python_search():
    m = make_model("register")
    h = History([Op(0, 0.5, 0, "invoke", "write", None, 1), Op(1, 1.5, 0, "ok", "write", None)])
    (ops,) = prepare(h, m).values()
    assert proven_valid(ops, m.init()) is None
    m = make_model("kv")
    h = History([Op(0, 0, 0, "invoke", "append", "k", 5), Op(1, 1, 0, "ok", "append", "k")])
    (ops,) = prepare(h, m).values()
    assert proven_valid(ops, m.init()) is None


def cas_history(rng: random.Random, n: int, clients: int, stale: bool) -> History:
    """A valid etcd CAS-register history by construction (each op takes effect at a random
    instant of its interval, in that order; values 0..4, 10 % of the writes and cas crashed),
    or, with `stale`, one late read's value replaced by one no op writes (then invalid)."""
    free, spans = [0] * clients, []
    for k in range(n):
        c = k % clients
        start = free[c] + rng.randrange(1, 10)
        free[c] = end = start + rng.randrange(1, 60)
        spans.append((rng.uniform(start, end), k, c, start, end))
    reg, out = None, {}
    for _, k, _, _, _ in sorted(spans):
        f = rng.choice(("read", "write", "cas"))
        if f == "read":
            out[k] = ("read", None, reg)
        elif f == "write":
            reg = rng.randrange(5)
            out[k] = ("write", reg, reg)
        else:
            old, new = rng.randrange(5), rng.randrange(5)
            out[k] = ("cas", [old, new], "ok" if reg == old else "fail")
            reg = new if reg == old else reg
    reads = [k for k in out if out[k][0] == "read"]
    if stale:
        out[reads[-1]] = ("read", None, 9)
    events, proc = [], list(range(clients))
    for _, k, c, start, end in spans:
        f, arg, res = out[k]
        typ = res if f == "cas" else "ok"
        value = res if f == "read" else arg
        events.append((start, 0, Op(0, start, proc[c], "invoke", f, None, arg)))
        if typ == "ok" and f != "read" and rng.random() < 0.1:
            proc[c] += clients  # crashed: never completes, its client goes on as another
            continue
        events.append((end, 1, Op(0, end, proc[c], typ, f, None, value)))
    events.sort(key=lambda e: (e[0], e[1]))
    for i, (_, _, op) in enumerate(events):
        op.index = i
    return History([op for _, _, op in events])


def test_a_check_keeps_its_verdict_without_the_compiled_search(monkeypatch):
    rng = random.Random("fastwgl-check")
    # long ones (wgl.FIRST_OPS ops or more: the compiled search goes first there) and short
    histories = [cas_history(rng, rng.choice([60, 2500]), 5, k % 2 == 1) for k in range(24)]
    m = make_model("etcd-cas-register")
    with_it = [Linearizable(m, time_limit=30).check(h) for h in histories]
    monkeypatch.setattr(engine_mod, "proven_valid", lambda *a, **k: None)
    without = [Linearizable(m, time_limit=30).check(h) for h in histories]
    assert [r.valid for r in with_it] == [r.valid for r in without]
    assert [r.valid for r in with_it] == [k % 2 == 0 for k in range(24)]
    assert any(r.details["decided_by"].get("search") for r in with_it)


@st.composite
def pinned_histories(draw: Any) -> list[dict]:
    """An etcd CAS-register history over 0..2 that is linearizable by construction (each op
    takes effect at a point of its interval, a crashed one later or never), with crashed
    writes of values nothing else writes (10, 11, ...) that took effect and that a completed
    read then read: pinned.py pins those. Damaged or not: a read's value replaced, or a read
    of a pinned value called after the write that overwrote it (the "twice" pattern)."""
    calls = [call("write", 0, 0, -10, -9)]
    points: list[tuple[float, int]] = []
    for idx in range(draw(st.integers(2, 9))):
        planted = idx == 0  # (at least one such write)
        f = "write" if planted else draw(st.sampled_from(["read", "write", "write", "cas"]))
        start = draw(st.integers(0, 40))
        span = draw(st.integers(1, 8))
        crashed = planted or (f != "read" and draw(st.integers(0, 2)) == 0)
        unique = planted or (f == "write" and crashed and draw(st.booleans()))
        v = 10 + idx if unique else draw(st.integers(0, 2))
        typ = "info" if crashed else "ok"
        arg = [draw(st.integers(0, 2)), v] if f == "cas" else (None if f == "read" else v)
        calls.append(call(f, arg, arg, start, None if crashed else start + span, typ))
        late = draw(st.integers(0, 40)) if crashed else draw(st.integers(0, span - 1))
        if not crashed or planted or draw(st.integers(0, 3)):  # (or a crashed op never does)
            points.append((start + late + 0.5 + len(calls) * 1e-4, len(calls) - 1))
    reg: Any = 0
    for p, k in sorted(points):
        c = calls[k]
        if c["f"] == "read":
            c["out"] = reg
        elif c["f"] == "write":
            reg = c["value"]
            if reg >= 10:  # a completed read of it right after (or a cas from it): pinned
                t = int(p)
                lo, hi = draw(st.integers(0, 3)), draw(st.integers(0, 3))
                if draw(st.booleans()):
                    calls.append(call("read", None, reg, t - lo, t + 1 + hi))
                else:
                    cas = [reg, draw(st.sampled_from([0, 1, 2, reg]))]
                    calls.append(call("cas", cas, cas, t - lo, t + 1 + hi))
                    reg = cas[1]
        elif reg == c["value"][0]:
            reg = c["value"][1]
        elif c["type"] == "ok":
            c["type"] = "fail"
    for c in calls:
        if c["f"] == "read" and c["out"] is None:  # a read that never took effect: none
            c["out"] = 0
    damage = draw(st.sampled_from(["none", "value", "twice"]))
    reads = [c for c in calls if c["f"] == "read"]
    if damage == "value" and reads:
        draw(st.sampled_from(reads))["out"] = draw(st.sampled_from([0, 1, 2, *range(10, 20)]))
    elif damage == "twice":
        t = draw(st.integers(0, 60))
        calls.append(call("read", None, draw(st.integers(10, 19)), t, t + 1))
    return calls


@settings(max_examples=300, deadline=None)
@given(pinned_histories())
def test_the_compiled_search_with_pinned_ops_proves_what_the_python_search_finds_valid(calls):
    """The compiled walk's pinned list and dead-configuration test (_fastwgl.h, wgl.py's
    `_pinned_test`): with pinned ops it proves exactly what the Python search (the same
    prunings) and the brute force (none) find linearizable, with its domination or without,
    and as much as without the pins."""
    m = make_model("etcd-cas-register")
    (ops,) = prepare(to_history(calls), m).values()
    pin(ops, m.init())
    want = run(ops, m.init(), m.lookahead()).valid
    if len(calls) <= 12:
        assert want == brute_force(crashed_as_never_completed(calls), "etcd-cas-register")
    for dominate in (False, True):
        got = proven_valid(ops, m.init(), None, per_op=1 << 20, dominate=dominate)
        assert (got is not None) == want, dominate
        bare = proven_valid(unpinned(ops), m.init(), None, per_op=1 << 20, dominate=dominate)
        assert (bare is not None) == want, (dominate, "unpinned")


def test_the_pinned_histories_have_pinned_ops_and_both_answers():
    """The property above is not vacuous: its histories have pinned ops, and both answers."""
    m = make_model("etcd-cas-register")
    seen = {True: 0, False: 0}
    pinned = 0

    @settings(max_examples=200, deadline=None, database=None)
    @given(pinned_histories())
    def tally(calls: list[dict]) -> None:
        nonlocal pinned
        (ops,) = prepare(to_history(calls), m).values()
        pinned += pin(ops, m.init()) > 0
        seen[run(ops, m.init()).valid] += 1

    tally()
    assert pinned >= 150 and seen[True] >= 20 and seen[False] >= 20, (pinned, seen)
