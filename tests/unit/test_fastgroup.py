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
