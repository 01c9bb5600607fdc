"""The compiled pairing and grouping (checker/_fastgroup.c) against the pure-Python one
(partitions.group and build): the same partitions, pairs and LinOps, and the same errors,
on random messy histories (nemesis ops, events, a second invoke while one is pending, crashed
and failed ops, completions without an invoke, keys of every kind) for every model."""

from __future__ import annotations

import random
import shutil
from typing import Any

import pytest

from zkjepsen.checker.linear import MODELS, make_model
from zkjepsen.checker.linear import partitions as lin
from zkjepsen.checker.linear.model_base import Action
from zkjepsen.checker.linear.wgl import LinOp
from zkjepsen.errors import BadInput
from zkjepsen.history import Call, History, Op

if lin._fast_group is None:  # noqa: SLF001 - whether the module was built
    if shutil.which("gcc"):
        pytest.fail("checker/_fastgroup.c is not built though gcc is here: run ./run test")
    pytest.skip("no C compiler: grouping is pure Python here", allow_module_level=True)

FS = {
    "kv": ["get", "put", "append"],
    "kv-single": ["get", "put", "append"],
    "register": ["read", "write", "cas"],
    "cas-register": ["read", "write", "cas"],
    "etcd-cas-register": ["read", "write", "cas"],
    "counter": ["add", "read"],
    "mutex": ["acquire", "release"],
    "fenced-mutex": ["acquire", "release"],
    "set": ["add", "read"],
    "fifo-queue": ["enqueue", "dequeue", "drain"],
    "multi-register": ["txn"],
}
KEYS = ["a", "b", 1, 2, None, True, [1, "x"], {"k": 1}]


def _value(rng: random.Random, f: str) -> Any:
    if f == "cas":
        return [rng.randrange(3), rng.randrange(3)] if rng.random() < 0.95 else 7
    if f == "txn":
        return [["read", "x", rng.choice([None, 0, 1])], ["write", "y", rng.randrange(3)]]
    if f == "acquire":
        return rng.choice([None, {"token": rng.randrange(5)}])
    return rng.choice([None, "x", "yz", 0, 1, 2, [1], (1, 2)])


def messy(model: str, rng: random.Random) -> History:
    ops: list[Op] = []
    t = 0
    for i in range(rng.randrange(1, 40)):
        t += rng.randrange(0, 3)
        r = rng.random()
        p: Any = rng.randrange(4)
        if r < 0.05:
            ops.append(Op(i, t, "nemesis", rng.choice(["invoke", "info", "event"]), "kill"))
            continue
        if r < 0.08:
            ops.append(Op(i, t, p, "event", "note"))
            continue
        typ = "invoke" if r < 0.55 else rng.choice(["ok", "ok", "ok", "fail", "info"])
        f = rng.choice(FS[model])
        key = rng.choice(KEYS[:5] if rng.random() < 0.9 else KEYS)
        client = rng.choice([None, None, p + 10])
        ops.append(Op(i, t, p, typ, f, key, _value(rng, f), client))
    return History(ops)


def _both(fn, *args):
    try:
        return ("ok", fn(*args))
    except BadInput as e:
        return ("BadInput", str(e))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
        return (type(e).__name__, str(e))


def _group_and_build(h: History, m: Any) -> tuple[Any, list, dict]:
    """group's answer, the nemesis records it handed over, and each partition built."""
    nemesis: list = []
    grouped = _both(lin.group, h, m, nemesis)
    built = {}
    if grouped[0] == "ok":
        for k, calls in grouped[1].items():
            built[k] = _both(lin.builder(m), calls)
    return grouped, nemesis, built


@pytest.mark.parametrize("model", sorted(MODELS))
def test_compiled_grouping_and_building_match_python(model, monkeypatch):
    rng = random.Random(f"fastgroup-{model}")
    fast_used = fast_built = 0
    for case in range(400):
        h = messy(model, rng)
        m = make_model(model, 0 if model == "cas-register" else None)
        fast = _group_and_build(h, m)
        with monkeypatch.context() as mp:
            mp.setattr(lin, "_fast_group", None)
            mp.setattr(lin, "_fast_build", None)
            slow = _group_and_build(h, m)
        assert fast == slow, (model, case)
        assert fast[1] == [op for op in h.ops if op.process == "nemesis"]
        if fast[0][0] == "ok":
            fast_used += 1
            for calls in fast[0][1].values():
                table = m.action_table()
                direct = lin._fast_build(calls, m.action, LinOp, Call, Action, table)  # noqa: SLF001
                fast_built += direct is not NotImplemented
    assert fast_used > 100
    assert fast_built > 100  # the compiled builder did build, it did not just give up


@pytest.mark.parametrize("model", sorted(MODELS))
def test_compiled_counterexample_records_match_python(model):
    """_fastgroup.op_json / op_jsons (a refutation's records) give exactly engine's
    _py_op_json, keys in the same order, for every op of every model's messy histories:
    completed, failed and crashed, with and without a key, a client or a state (ILLEGAL:
    none), pinned ones too."""
    from zkjepsen.checker.linear import engine
    from zkjepsen.checker.linear._fastgroup import op_json, op_jsons
    from zkjepsen.checker.linear.models import ILLEGAL
    from zkjepsen.checker.linear.wgl import PinnedCall

    rng = random.Random(f"opjson-{model}")
    seen = 0
    for _ in range(150):
        h = messy(model, rng)
        m = make_model(model, 0 if model == "cas-register" else None)
        grouped = _both(lin.group, h, m)
        if grouped[0] != "ok":
            continue
        for calls in grouped[1].values():
            ops = _both(lin.builder(m, reduce=False), calls)[1]
            if not isinstance(ops, list):
                continue
            if ops and rng.random() < 0.3:  # a pinned op: a crashed call given an end
                op = ops[0]
                ops[0] = op._replace(call=PinnedCall(*op.call), end=op.start + 1)
            states = [rng.choice([ILLEGAL, None, 0, "ab", (1, "x"), {"k": [1]}]) for _ in ops]
            for op, s in zip(ops, states, strict=True):
                want = engine._py_op_json(op, s)  # noqa: SLF001
                got = op_json(op, s, ILLEGAL)
                assert got == want and list(got) == list(want), (op, s)
                assert list(op_json(op, ILLEGAL, ILLEGAL)) == list(engine._py_op_json(op))  # noqa: SLF001
                seen += 1
            idx = [rng.randrange(len(ops)) for _ in ops] if ops else []
            assert op_jsons(ops, idx, states, ILLEGAL) == [
                engine._py_op_json(ops[i], s)  # noqa: SLF001
                for i, s in zip(idx, states, strict=True)
            ]
    assert seen > 100
    with pytest.raises(ValueError, match="as many states"):
        op_jsons([], [0], [], ILLEGAL)


def _check(h: History, m: Any) -> Any:
    from zkjepsen.checker.linear import Linearizable

    try:
        r = Linearizable(m, time_limit=None).check(h)
    except BadInput as e:
        return ("BadInput", str(e))
    return (r.valid, r.details, r.violations)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_compiled_first_pass_checks_as_the_python_loop(model, monkeypatch):
    """_fastgroup.settle (the check's first pass over short partitions the sweep finds valid)
    gives the very verdict, details and violations of the Python loop it stands in for, on
    every model's messy histories; and it does settle some, and stop at others."""
    rng = random.Random(f"settle-{model}")
    settled = stopped = 0
    real = lin._fast_settle  # noqa: SLF001

    def counting(*args: Any) -> Any:
        nonlocal settled, stopped
        out = real(*args)
        settled += out[0]
        stopped += out[0] < len(args[0])
        return out

    for case in range(300):
        h = messy(model, rng)
        m = make_model(model, 0 if model == "cas-register" else None)
        with monkeypatch.context() as mp:
            mp.setattr(lin, "_fast_settle", counting)
            fast = _check(h, m)
        with monkeypatch.context() as mp:
            mp.setattr(lin, "_fast_settle", None)
            slow = _check(h, m)
        assert fast == slow, (model, case)
    if model not in ("set", "fifo-queue"):  # (these reduce their ops: no first pass)
        assert settled > 10 and stopped > 10, (settled, stopped)
