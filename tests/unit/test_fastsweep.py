"""The compiled sweep (checker/_fastsweep.c) against the pure-Python one (sweep.py): the same
verdict and the same number of model steps on random histories of every model, valid by
construction or damaged, short and long, with crashed ops, so every branch of the port (the
replay, the closure, the budget, the probe, backtracking) is compared, not just the verdicts."""

from __future__ import annotations

import random
import shutil
from typing import Any

import pytest

from zkjepsen.checker.linear import MODELS, make_model, prepare
from zkjepsen.checker.linear import sweep as sweep_mod
from zkjepsen.checker.linear.sweep import py_decide
from zkjepsen.history import History, Op

if sweep_mod._fast_decide is None:  # noqa: SLF001 - whether the module was built
    if shutil.which("gcc"):
        pytest.fail("checker/_fastsweep.c is not built though gcc is here: run ./run test")
    pytest.skip("no C compiler: the sweep is pure Python here", allow_module_level=True)

fast_decide = sweep_mod._fast_decide  # noqa: SLF001


def _kv_op(rng: random.Random, state: dict, k: int) -> tuple[str, Any, Any, Any]:
    key = rng.choice("ab")
    r = rng.random()
    if r < 0.4:
        return "get", key, None, state.get(key, "")
    if r < 0.55:
        v = rng.choice(["", "x", f"p{k}"])
        state[key] = v
        return "put", key, v, None
    v = rng.choice(["y", f"{k};"])
    state[key] = state.get(key, "") + v
    return "append", key, v, None


def _reg_op(rng: random.Random, state: dict, k: int, cas: bool) -> tuple[str, Any, Any, Any]:
    s = state.get("r", 0 if cas else None)
    r = rng.random()
    if r < 0.4:
        return "read", None, None, s
    if r < 0.7 or not cas:
        v = rng.randrange(4)
        state["r"] = v
        return "write", None, v, None
    o, n = rng.choice([s, rng.randrange(4)]), rng.randrange(4)
    if o == s:
        state["r"] = n
    return "cas", None, [o, n], None


def history(model: str, rng: random.Random, n: int, clients: int) -> History:
    """Random execution: each client calls, the op takes effect at a random instant of its
    interval, in effect order; then some damage (a read's value, an op turned crashed)."""
    state: dict = {}
    free_at = [0] * clients
    proc = list(range(clients))  # a client whose op crashed goes on as a new process
    events = []
    spans = []
    for k in range(n):
        c = rng.randrange(clients)
        start = free_at[c] + rng.randrange(1, 4)
        end = start + rng.randrange(1, 3 + 6 * rng.randrange(3))
        free_at[c] = end
        spans.append((rng.uniform(start, end), start, end, c, k))
    spans.sort()
    for _, start, end, c, k in spans:
        if model in ("kv", "kv-single"):
            f, key, inv, out = _kv_op(rng, state, k)
        else:
            f, key, inv, out = _reg_op(rng, state, k, model != "register")
        if out is not None and rng.random() < 0.03:
            out = "z" if isinstance(out, str) else 9
        typ = "info" if rng.random() < 0.05 else "ok"
        p = proc[c]
        events.append((start, 0, Op(0, start, p, "invoke", f, key, inv)))
        if typ == "ok" or rng.random() < 0.5:
            events.append((end, 1, Op(0, end, p, typ, f, key, out if typ == "ok" else None)))
        if typ == "info":
            proc[c] += clients
    events.sort(key=lambda e: (e[0], e[1]))
    ops = []
    for i, (_, _, op) in enumerate(events):
        op.index = i
        ops.append(op)
    return History(ops)


MODELS_HERE = ["kv", "kv-single", "register", "cas-register", "etcd-cas-register"]


@pytest.mark.parametrize("model", MODELS_HERE)
def test_the_compiled_sweep_answers_as_the_python_one(model):
    assert model in MODELS
    rng = random.Random(f"fastsweep-{model}")
    seen: dict[Any, int] = {True: 0, False: 0, None: 0}
    for case in range(600):
        n = rng.choice([3, 8, 20, 60, 200]) if case % 50 else 2500
        h = history(model, rng, n, rng.choice([1, 2, 3, 5, 9]))
        m = make_model(model, 0 if model == "cas-register" else None)
        for ops in prepare(h, m).values():
            want = py_decide(ops, m.init())
            got = fast_decide(ops, m.init(), None)
            assert got == want, (model, case)
            seen[want[0]] += 1
    assert all(seen.values()), seen  # every answer was exercised


def test_unsortable_times_go_to_the_python_sweep():
    m = make_model("register")
    h = History([Op(0, 0.5, 0, "invoke", "write", None, 1), Op(1, 1.5, 0, "ok", "write", None)])
    (ops,) = prepare(h, m).values()
    assert fast_decide(ops, m.init(), None) is NotImplemented
    assert sweep_mod.decide(ops, m.init()) == py_decide(ops, m.init())


def test_a_transition_error_is_raised_as_in_python():
    m = make_model("kv")
    h = History([Op(0, 0, 0, "invoke", "append", "k", 5), Op(1, 1, 0, "ok", "append", "k")])
    (ops,) = prepare(h, m).values()
    with pytest.raises(TypeError):
        py_decide(ops, m.init())
    with pytest.raises(TypeError):
        fast_decide(ops, m.init(), None)
