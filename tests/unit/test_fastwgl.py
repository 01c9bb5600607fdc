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
from test_fastsweep import MODELS_HERE, history

from zkjepsen.checker.linear import Linearizable, make_model, prepare
from zkjepsen.checker.linear import engine as engine_mod
from zkjepsen.checker.linear import wgl as wgl_mod
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
