"""Every linearizability model against a brute-force linearizer written from the models' stated
semantics (not from checker/models.py), on thousands of random small concurrent histories with
crashed and failed ops. Histories come from random executions (valid by construction), then are
often damaged (an interval moved, an op dropped, an ok turned into a fail), so both verdicts are
exercised."""

from __future__ import annotations

import random
from typing import Any

import pytest

from zkjepsen.checker.linear import MODELS, make_model
from zkjepsen.checker.linear.engine import Linearizable, prepare, search
from zkjepsen.checker.linear.readfrom import decide as from_reads
from zkjepsen.checker.linear.sweep import decide, sweep
from zkjepsen.checker.linear.wgl import in_sequence
from zkjepsen.history import History, Op

# A deadline only so that a broken checker cannot hang the suite: the tests assert verdicts,
# and a busy machine (CI beside other work, the integration worker beside this one) is slow,
# not wrong. Far above what any of these checks takes on an idle machine (well under 1 s).
DECIDE_S = 300

# ---------------------------------------------------------------- the models' semantics
# judge(...) -> ("must" | "may" | "drop", step) where step(state) is the state after the op,
# or NO when the op cannot take effect in that state. "must": it happened (ok, or a fail
# that says something); "may": crashed, it happened or not; "drop": it says nothing.

INITIAL = {
    "register": None,
    "cas-register": 0,
    "etcd-cas-register": None,
    "counter": 0,
    "mutex": False,
    "fenced-mutex": (None, -1),
    "set": frozenset(),
    "fifo-queue": (),
    "kv": (),
    "kv-single": (),
    "multi-register": (("x", 0), ("y", 0)),
}
NO = object()  # an op that cannot take effect (None is a register value)
CLI_INITIAL = {"cas-register": 0}  # what to pass as --initial (others use their default)


def _kind(status: str) -> str:
    return {"ok": "must", "info": "may", "fail": "drop"}[status]


def judge(model: str, f: str, key: Any, inv: Any, out: Any, status: str, actor: Any):
    if model in ("register", "cas-register", "etcd-cas-register"):
        if f == "read":
            if status != "ok" or (out is None and model == "cas-register"):
                return "drop", None
            return "must", lambda s: s if s == out else NO
        if f == "write":
            return _kind(status), lambda s: inv
        o, n = inv
        if status == "fail" and model == "etcd-cas-register":
            return "must", lambda s: s if s != o else NO
        return _kind(status), lambda s: n if s == o else NO
    if model == "counter":
        if f == "add":
            return _kind(status), lambda s: s + inv
        if status != "ok" or out is None:
            return "drop", None
        return "must", lambda s: s if s == out else NO
    if model == "mutex":
        want = f == "release"  # acquire needs a free lock, release a held one
        return _kind(status), lambda s: (not s) if s == want else NO
    if model == "fenced-mutex":
        if f == "acquire":
            t = out.get("token") if status == "ok" and isinstance(out, dict) else None

            def acquire(s):
                if s[0] is not None or (t is not None and t <= s[1]):
                    return NO
                return (actor, s[1] if t is None else t)

            return _kind(status), acquire
        return _kind(status), lambda s: (None, s[1]) if s[0] == actor else NO
    if model == "set":
        if f == "add":
            return _kind(status), lambda s: s | {inv}
        if status != "ok" or out is None:
            return "drop", None
        return "must", lambda s: s if s == frozenset(out) else NO
    if model == "fifo-queue":
        if f == "enqueue":
            return _kind(status), lambda s: s + (inv,)
        if f == "dequeue":
            if status == "ok":
                return "must", lambda s: s[1:] if s and s[0] == out else NO
            if status == "fail":  # how a dequeue reports an empty queue
                return "must", lambda s: s if not s else NO
            return "may", lambda s: s[1:]
        if status == "ok":
            return "must", lambda s: () if s == tuple(out) else NO
        return _kind(status), lambda s: ()  # a failed drain did not happen
    if model in ("kv", "kv-single"):
        if f == "get":
            if status != "ok":
                return "drop", None
            return "must", lambda s: s if dict(s).get(key, "") == (out or "") else NO

        def put(s):
            d = dict(s)
            d[key] = (d.get(key, "") if f == "append" else "") + inv
            return tuple(sorted(d.items()))

        return _kind(status), put
    if model == "multi-register":
        mops = out if status == "ok" else inv
        if status == "fail" or (status != "ok" and all(m[0] == "read" for m in mops)):
            return "drop", None

        def txn(s):
            d = dict(s)
            for mf, k, v in mops:
                if mf == "read":
                    if v is not None and d[k] != v:
                        return NO
                else:
                    d[k] = v
            return tuple(sorted(d.items()))

        return _kind(status), txn
    raise AssertionError(model)


def nothing_read(c: dict, model: str) -> bool:
    """Whether the model reads nothing from this call even had it succeeded (the checker's
    rule for "nothing was tested": no call at all, or none the model reads)."""
    v = c["out"] if c["completed"] and c["out"] is not None else c["value"]
    return judge(model, c["f"], c["key"], c["value"], v, "ok", c["actor"])[0] == "drop"


def brute_force(calls: list[dict], model: str) -> bool | str:
    """Try every order of the ops that must happen plus any subset of the crashed ones, as real
    time allows (an op may come next iff no unplaced must-op ended before it began). "unknown"
    when nothing was tested (see nothing_read)."""
    if all(nothing_read(c, model) for c in calls):
        return "unknown"
    ops = []
    for c in calls:
        kind, step = judge(model, c["f"], c["key"], c["value"], c["out"], c["type"], c["actor"])
        if kind != "drop":
            end = c["end"] if kind == "must" else NO
            ops.append((kind == "must", step, c["start"], end))
    must = frozenset(i for i, o in enumerate(ops) if o[0])
    failed: set[tuple[frozenset[int], Any]] = set()

    def go(placed: frozenset[int], state: Any) -> bool:
        if must <= placed:
            return True
        if (placed, state) in failed:
            return False
        for i, (_, step, start, _) in enumerate(ops):
            if i in placed or any(
                ops[j][3] is not None and ops[j][3] < start for j in must - placed
            ):
                continue
            ns = step(state)
            if ns is not NO and go(placed | {i}, ns):
                return True
        failed.add((placed, state))
        return False

    return go(frozenset(), INITIAL[model])


# ---------------------------------------------------------------- random executions


def run_op(model: str, s: Any, rng: random.Random, k: int):
    """One op executed at its linearization point: (f, key, invoke value, completion value,
    status, actor, new state)."""
    if model in ("register", "cas-register", "etcd-cas-register"):
        f = rng.choice(["read", "write", "cas"])
        if f == "read":
            return "read", None, None, s, "ok", None, s
        if f == "write":
            v = rng.randrange(3)
            return "write", None, v, v, "ok", None, v
        o, n = rng.choice([s, rng.randrange(3)]), rng.randrange(3)
        return "cas", None, [o, n], [o, n], "ok" if s == o else "fail", None, n if s == o else s
    if model == "counter":
        if rng.random() < 0.5:
            v = rng.randrange(1, 3)
            return "add", None, v, v, "ok", None, s + v
        return "read", None, None, s, "ok", None, s
    if model == "mutex":
        return (
            ("release", None, None, None, "ok", None, False)
            if s
            else ("acquire", None, None, None, "ok", None, True)
        )
    if model == "fenced-mutex":
        if s[0] is None:
            c, t = rng.randrange(3), s[1] + rng.randrange(1, 3)
            return "acquire", None, None, {"token": t}, "ok", c, (c, t)
        return "release", None, None, None, "ok", s[0], (None, s[1])
    if model == "set":
        if rng.random() < 0.6:
            v = rng.randrange(4)
            return "add", None, v, v, "ok", None, s | {v}
        return "read", None, None, sorted(s), "ok", None, s
    if model == "fifo-queue":
        r = rng.random()
        if r < 0.5:
            v = rng.randrange(4)
            return "enqueue", None, v, v, "ok", None, s + (v,)
        if r < 0.85:
            if s:
                return "dequeue", None, None, s[0], "ok", None, s[1:]
            return "dequeue", None, None, None, "fail", None, s
        return "drain", None, None, list(s), "ok", None, ()
    if model in ("kv", "kv-single"):
        key, d = rng.choice("ab"), dict(s)
        f = rng.choice(["get", "put", "append"])
        if f == "get":
            return "get", key, None, d.get(key, ""), "ok", None, s
        v = rng.choice("xy")
        d[key] = (d.get(key, "") if f == "append" else "") + v
        return f, key, v, v, "ok", None, tuple(sorted(d.items()))
    if model == "multi-register":
        d, inv, out = dict(s), [], []
        for _ in range(rng.randrange(1, 3)):
            k2 = rng.choice("xy")
            if rng.random() < 0.5:
                inv.append(["read", k2, None])
                out.append(["read", k2, d[k2]])
            else:
                v = rng.randrange(3)
                d[k2] = v
                inv.append(["write", k2, v])
                out.append(["write", k2, v])
        return "txn", None, inv, out, "ok", None, tuple(sorted(d.items()))
    raise AssertionError(model)


def random_calls(model: str, rng: random.Random) -> list[dict]:
    n = rng.randrange(1, 8)
    spans = []
    for _ in range(n):
        start = rng.randrange(30)
        end = start + rng.randrange(15)
        spans.append((rng.uniform(start, end), start, end))
    spans.sort()
    state, calls = INITIAL[model], []
    for k, (_, start, end) in enumerate(spans):
        crashed = rng.random() < 0.2
        if crashed and rng.random() < 0.5:  # a crashed op that never took effect
            f, key, inv, out, status, actor, _ = run_op(model, state, rng, k)
        else:
            f, key, inv, out, status, actor, state = run_op(model, state, rng, k)
        if crashed:
            status, out = "info", inv
        calls.append(
            {
                "f": f,
                "key": key,
                "value": inv,
                "out": out,
                "type": status,
                "actor": actor,
                "start": start,
                "end": end,
                "completed": not (crashed and rng.random() < 0.5),
            }
        )
    for _ in range(rng.choice([0, 1, 1, 2, 3])):  # damage it
        if not calls:
            break
        c = rng.choice(calls)
        r = rng.random()
        if r < 0.4:
            c["start"] = rng.randrange(30)
            c["end"] = c["start"] + rng.randrange(15)
        elif r < 0.7:
            calls.remove(c)
        elif c["type"] == "ok":
            c["type"] = "fail"
    return calls


def to_history(calls: list[dict]) -> History:
    evs = []
    for p, c in enumerate(calls):
        evs.append(
            (
                c["start"],
                0,
                Op(0, c["start"], p, "invoke", c["f"], c["key"], c["value"], c["actor"]),
            )
        )
        if c["completed"]:
            evs.append(
                (c["end"], 1, Op(0, c["end"], p, c["type"], c["f"], c["key"], c["out"], c["actor"]))
            )
    evs.sort(key=lambda e: (e[0], e[1]))
    ops = [e[2] for e in evs]
    for i, op in enumerate(ops):
        op.index = i
    return History(ops)


def crashed_as_never_completed(calls: list[dict]) -> list[dict]:
    """What the brute force sees: an info op, completed or not, has no end."""
    return [{**c, "end": None} if c["type"] == "info" else c for c in calls]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_model_agrees_with_brute_force(model):
    assert model in INITIAL, f"add {model!r} to the brute force"
    rng = random.Random(f"brute-{model}")
    seen: dict[Any, int] = {True: 0, False: 0, "unknown": 0}
    for _ in range(1000):
        calls = random_calls(model, rng)
        want = brute_force(crashed_as_never_completed(calls), model)
        got = Linearizable(make_model(model, CLI_INITIAL.get(model)), time_limit=DECIDE_S).check(
            to_history(calls)
        )
        assert got.valid == want, (model, calls, got.details)
        seen[want] += 1
    assert seen[True] > 100 and seen[False] > 50, seen


def _wgl_outcome(ops, model):
    gen = search(ops, model.init(), model.lookahead())
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def _wgl(ops, model) -> bool:
    return _wgl_outcome(ops, model).valid


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_sweep_and_wgl_each_agree_with_brute_force(model):
    """The checker decides a partition by the sweep (its fast path; `decide` replays a partition
    whose ops ran in sequence), by the read-from path where written values happen to be unique
    (test_checker_readfrom.py holds it to the brute force on unique-value histories), and by
    WGL when neither decides (or to explain a refutation): each is held to the brute force on
    its own."""
    rng = random.Random(f"deciders-{model}")
    seen: dict[Any, int] = {True: 0, False: 0, None: 0, "in sequence": 0, "read-from": 0}
    for _ in range(1000):
        calls = random_calls(model, rng)
        want = brute_force(crashed_as_never_completed(calls), model)
        if want == "unknown":
            continue
        m = make_model(model, CLI_INITIAL.get(model))
        parts = prepare(to_history(calls), m)
        swept = [sweep(ops, m.init())[0] for ops in parts.values()]
        if None not in swept:
            assert all(swept) == want, ("sweep", model, calls)
        decided = [decide(ops, m.init())[0] for ops in parts.values()]  # replay, then sweep
        if None not in decided:
            assert all(decided) == want, ("decide", model, calls)
        assert all(_wgl(ops, m) for ops in parts.values()) == want, ("wgl", model, calls)
        fast = [from_reads(ops, m.init()) for ops in parts.values()]  # where values are unique
        if None not in fast:
            assert all(f[0] for f in fast) == want, ("read-from", model, calls)
            seen["read-from"] += 1
        for ops in parts.values():  # ops in sequence: WGL's outcome, without the search
            quick = in_sequence(ops, m.init())
            if quick is not None:
                out = _wgl_outcome(ops, m)
                assert (quick.valid, quick.best, quick.stuck) == (out.valid, out.best, out.stuck)
                seen["in sequence"] += 1
        seen[want] += 1
        seen[None] += None in swept
    assert seen[True] > 100 and seen[False] > 50 and seen[None] < 20, seen
    assert seen["in sequence"] > 50, seen


# ---------------------------------------------------------------- the fifo cases


def _fifo(dequeue_type: str, dequeue_value: Any) -> History:
    calls = [
        {"f": "enqueue", "value": 1, "out": 1, "type": "ok", "start": 0, "end": 1},
        {"f": "drain", "value": None, "out": None, "type": "fail", "start": 2, "end": 3},
        {
            "f": "dequeue",
            "value": None,
            "out": dequeue_value,
            "type": dequeue_type,
            "start": 4,
            "end": 5,
        },
    ]
    return to_history([{"key": None, "actor": None, "completed": True, **c} for c in calls])


def test_a_failed_drain_took_nothing():
    # enqueue 1 ok; drain fail; dequeue fail (empty): 1 is still there, so NOT linearizable
    assert Linearizable(make_model("fifo-queue")).check(_fifo("fail", None)).valid is False
    # ... and dequeue -> ok 1 is linearizable
    assert Linearizable(make_model("fifo-queue")).check(_fifo("ok", 1)).valid is True
