"""Property tests: WGL against sequential executions and against brute force; the lock checker
against a brute-force interval check."""

from __future__ import annotations

import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from zkjepsen.checker.linear import ILLEGAL, Linearizable, LinOp, make_model, prepare
from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History, Op

# A deadline only so that a broken checker cannot hang the suite: the tests assert verdicts,
# and a busy machine (CI beside other work, the integration worker beside this one) is slow,
# not wrong. Far above what any of these checks takes on an idle machine (well under 1 s).
DECIDE_S = 300

# ---------------------------------------------------------------- histories from timed calls


def build(calls):
    """calls: dicts with process, client, f, key, value, start, end (None = never completed),
    type, out. Returns a History with events in time order (invokes first at ties)."""
    evs = []
    for c in calls:
        evs.append(
            (
                c["start"],
                0,
                Op(
                    0,
                    c["start"],
                    c["process"],
                    "invoke",
                    c["f"],
                    c.get("key"),
                    c.get("value"),
                    c.get("client"),
                ),
            )
        )
        if c["end"] is not None:
            evs.append(
                (
                    c["end"],
                    1,
                    Op(
                        0,
                        c["end"],
                        c["process"],
                        c["type"],
                        c["f"],
                        c.get("key"),
                        c.get("out"),
                        c.get("client"),
                    ),
                )
            )
    evs.sort(key=lambda e: (e[0], e[1]))
    ops = [e[2] for e in evs]
    for i, op in enumerate(ops):
        op.index = i
    return History(ops)


# ---------------------------------------------------------------- brute force


def brute_force(ops: list[LinOp], init) -> bool:
    """Every order of every subset of crashed ops: no memo, no list tricks. An op may come next
    iff no unplaced completed op returned before it was invoked."""
    n = len(ops)
    required = {i for i, o in enumerate(ops) if o.end is not None}

    def go(placed: frozenset, state) -> bool:
        if required <= placed:
            return True
        for i in range(n):
            if i in placed:
                continue
            if any(
                ops[j].end is not None and ops[j].end < ops[i].start
                for j in range(n)
                if j not in placed
            ):
                continue
            ns = ops[i].action.fn(state, ops[i].action.arg)
            if ns is not ILLEGAL and go(placed | {i}, ns):
                return True
        return False

    return go(frozenset(), init)


def random_register_history(rng: random.Random, n: int):
    calls = []
    for p in range(n):
        f = rng.choice(["read", "read", "write", "cas"])
        start = rng.randrange(0, 40)
        end = start + rng.randrange(0, 25)
        typ = rng.choices(["ok", "info", "fail"], [8, 2, 1])[0]
        if f == "read":
            value, out = None, rng.choice([None, 0, 1, 2])
        elif f == "write":
            value = out = rng.randrange(3)
        else:
            value = out = [rng.randrange(3), rng.randrange(3)]
        calls.append(
            {
                "process": p,
                "f": f,
                "value": value,
                "out": out,
                "start": start,
                "end": None if typ == "info" and rng.random() < 0.5 else end,
                "type": typ,
            }
        )
    return build(calls)


def wgl_and_brute(model_name: str, h: History, initial=None):
    model = make_model(model_name, initial)
    parts = prepare(h, model, reduce=False)  # brute force sees every op: checks Model.reduce
    ops = parts.get(None, [])
    return (Linearizable(model).check(h).valid, brute_force(ops, model.init()))


def test_wgl_agrees_with_brute_force_on_random_small_histories():
    rng = random.Random(1234)
    seen = {True: 0, False: 0}
    for _ in range(400):
        h = random_register_history(rng, rng.randrange(1, 9))
        for name in ("register", "etcd-cas-register"):
            wgl, brute = wgl_and_brute(name, h)
            assert wgl is brute, ([(o.process, o.type, o.f, o.value, o.time) for o in h], name)
            seen[wgl] += 1
    assert seen[True] > 50 and seen[False] > 50  # both kinds were exercised


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8))
def test_wgl_agrees_with_brute_force_hypothesis(seed, n):
    h = random_register_history(random.Random(seed), n)
    wgl, brute = wgl_and_brute("register", h)
    assert wgl is brute


def _random_op(model: str, rng: random.Random, r: int, p: int):
    choices = {
        "counter": [("add", 1, 1), ("read", None, r)],
        "mutex": [("acquire", None, None), ("release", None, None)],
        "set": [("add", r, r), ("read", None, sorted({r, p % 2}))],
        "fifo-queue": [("enqueue", r, r), ("dequeue", None, r), ("drain", None, [r] if r else [])],
        "multi-register": [
            ("txn", [["write", "x", r]], [["write", "x", r]]),
            (
                "txn",
                [["read", "x", None], ["read", "y", None]],
                [["read", "x", r], ["read", "y", 0]],
            ),
        ],
    }[model]
    return rng.choice(choices)


def random_calls(model: str, rng: random.Random, n: int):
    """Random (mostly wrong) ops for any model, with random intervals and outcomes."""
    calls = []
    for p in range(n):
        f, v, out = _random_op(model, rng, rng.randrange(3), p)
        start = rng.randrange(0, 40)
        typ = rng.choices(["ok", "info", "fail"], [8, 2, 1])[0]
        end = None if typ == "info" and rng.random() < 0.5 else start + rng.randrange(0, 25)
        calls.append(
            {"process": p, "f": f, "value": v, "out": out, "start": start, "end": end, "type": typ}
        )
    return build(calls)


def test_wgl_agrees_with_brute_force_for_every_model():
    rng = random.Random(99)
    for model in ("counter", "mutex", "set", "fifo-queue", "multi-register"):
        seen = {True: 0, False: 0}
        for _ in range(150):
            wgl, brute = wgl_and_brute(model, random_calls(model, rng, rng.randrange(1, 8)))
            assert wgl is brute, model
            seen[wgl] += 1
        assert seen[True] > 10 and seen[False] > 10, (model, seen)


# ---------------------------------------------------------------- sequential executions


def _sequential_step(model: str, state, rng: random.Random, k: int):
    """One op of a legal sequential execution: (f, key, invoke value, completion value,
    type, client, new state). A reference written independently of checker/models.py."""
    if model in ("register", "cas-register", "etcd-cas-register"):
        f = rng.choice(["read", "write", "cas"])
        if f == "read":
            return "read", None, None, state, "ok", None, state
        if f == "write":
            v = rng.randrange(4)
            return "write", None, v, v, "ok", None, v
        old, new = rng.choice([state, rng.randrange(4)]), rng.randrange(4)
        if old == state:
            return "cas", None, [old, new], [old, new], "ok", None, new
        return "cas", None, [old, new], [old, new], "fail", None, state
    if model == "counter":
        if rng.random() < 0.5:
            return "add", None, 1, 1, "ok", None, state + 1
        return "read", None, None, state, "ok", None, state
    if model == "mutex":
        return (
            ("release", None, None, None, "ok", None, False)
            if state
            else ("acquire", None, None, None, "ok", None, True)
        )
    if model == "fenced-mutex":
        holder, token = state
        if holder is None:
            c = rng.randrange(3)
            t = token + rng.randrange(1, 3)
            return "acquire", None, None, {"token": t}, "ok", c, (c, t)
        return "release", None, None, None, "ok", holder, (None, token)
    if model == "set":
        if rng.random() < 0.6:
            return "add", None, k, k, "ok", None, state | {k}
        return "read", None, None, sorted(state), "ok", None, state
    if model == "fifo-queue":
        r = rng.random()
        if r < 0.5:
            return "enqueue", None, k, k, "ok", None, state + (k,)
        if state:
            return "dequeue", None, None, state[0], "ok", None, state[1:]
        return "dequeue", None, None, None, "fail", None, state
    if model in ("kv", "kv-single"):
        key = rng.choice("abc")
        cur = dict(state).get(key, "")
        f = rng.choice(["get", "put", "append"])
        if f == "get":
            return "get", key, None, cur, "ok", None, state
        v = rng.choice(["x", "y", "z"])
        new = v if f == "put" else cur + v
        d = dict(state)
        d[key] = new
        return f, key, v, v, "ok", None, tuple(sorted(d.items()))
    if model == "multi-register":
        d = dict(state)
        mops_in, mops_out = [], []
        for _ in range(rng.randrange(1, 3)):
            k2 = rng.choice("xy")
            if rng.random() < 0.5:
                mops_in.append(["read", k2, None])
                mops_out.append(["read", k2, d[k2]])
            else:
                v = rng.randrange(3)
                d[k2] = v
                mops_in.append(["write", k2, v])
                mops_out.append(["write", k2, v])
        return "txn", None, mops_in, mops_out, "ok", None, tuple(sorted(d.items()))
    raise AssertionError(model)


INITIAL = {
    "register": None,
    "cas-register": 0,
    "etcd-cas-register": None,
    "counter": 0,
    "mutex": False,
    "fenced-mutex": (None, 0),
    "set": frozenset(),
    "fifo-queue": (),
    "kv": (),
    "kv-single": (),
    "multi-register": (("x", 0), ("y", 0)),
}


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(sorted(INITIAL)),
    seed=st.integers(0, 2**32),
    n=st.integers(1, 40),
    width=st.integers(1, 60),
    crash=st.floats(0, 0.3),
)
def test_histories_from_sequential_executions_are_linearizable(model, seed, n, width, crash):
    rng = random.Random(seed)
    state = INITIAL[model]
    calls = []
    for k in range(n):
        f, key, v, out, typ, client, state = _sequential_step(model, state, rng, k)
        point = 10 * k + 5  # the op's linearization point; its interval must contain it
        start = point - rng.randrange(width)
        end = point + rng.randrange(width)
        if typ == "ok" and rng.random() < crash:
            typ, end = "info", (None if rng.random() < 0.5 else end)
        calls.append(
            {
                "process": k,
                "client": client,
                "f": f,
                "key": key,
                "value": v,
                "out": out,
                "start": start,
                "end": end,
                "type": typ,
            }
        )
    initial = 0 if model == "cas-register" else None
    result = Linearizable(make_model(model, initial), time_limit=DECIDE_S).check(build(calls))
    if result.valid == "unknown":
        # Only when no op constrains the model (e.g. nothing but nil reads): nothing tested.
        assert "nothing was tested" in result.details["reason"], result.details
        assert result.details.get("ops", 0) == 0, result.details
    else:
        assert result.valid is True, result.details


# ---------------------------------------------------------------- lock checker vs brute force


def random_lock_history(rng: random.Random):
    """Clients each run acquire -> writes -> release cycles on their own clock, so holds overlap
    at random; tokens follow acquisition order as ZooKeeper's czxid would."""
    raw = []
    for c in range(rng.randrange(2, 5)):
        t = rng.randrange(0, 20)
        for _ in range(rng.randrange(1, 4)):
            a0, a1 = t, t + rng.randrange(1, 5)
            kind = rng.choices(["ok", "info", "fail"], [8, 1, 1])[0]
            writes = []
            w = a1
            for _ in range(rng.randrange(0, 3)):
                ws = w + rng.randrange(1, 4)
                we = ws + rng.randrange(1, 6)
                writes.append((ws, we, rng.choices(["ok", "fail", "info"], [6, 1, 1])[0]))
                w = we
            r0 = w + rng.randrange(1, 4)
            raw.append((a1, c, a0, kind, writes, r0))
            t = r0 + rng.randrange(1, 8)
    raw.sort()
    calls, holds = [], []
    for token, (a1, c, a0, kind, writes, r0) in enumerate(raw, 1):
        proc = 1000 * c + token
        calls.append(
            {
                "process": proc,
                "client": c,
                "f": "acquire",
                "key": "/l",
                "start": a0,
                "end": a1,
                "type": kind,
                "out": {"token": token} if kind == "ok" else None,
            }
        )
        if kind != "ok":
            continue
        holds.append((c, token, a1, r0))
        for ws, we, wt in writes:
            calls.append(
                {
                    "process": proc,
                    "client": c,
                    "f": "write",
                    "key": "/r",
                    "value": {"token": token},
                    "start": ws,
                    "end": we,
                    "type": wt,
                }
            )
            if wt == "info":
                proc += 100_000  # an info op retires its process; the client goes on
        calls.append(
            {
                "process": proc,
                "client": c,
                "f": "release",
                "key": "/l",
                "start": r0,
                "end": r0 + 1,
                "type": "ok",
            }
        )
    return build(calls), holds, calls


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32))
@example(216125)  # only an `info` acquire: unknown, not valid
def test_lock_checker_agrees_with_brute_force_interval_check(seed):
    h, holds, calls = random_lock_history(random.Random(seed))
    r = LockChecker(max_reported=10**6).check(h)
    got = {
        frozenset((o["holds"][0].token, o["holds"][1].token)) for o in r.details["belief_overlaps"]
    }
    want = {
        frozenset((t1, t2))
        for (c1, t1, s1, e1) in holds
        for (c2, t2, s2, e2) in holds
        if t1 < t2 and c1 != c2 and s1 < e2 and s2 < e1
    }
    assert got == want
    accepted = [
        (c["value"]["token"], c["start"], c["end"])
        for c in calls
        if c["f"] == "write" and c["type"] == "ok"
    ]
    bad = {
        (t, s, e) for (t, s, e) in accepted if any(t2 > t and s2 < e for (t2, s2, _) in accepted)
    }
    got_eff = {
        (o["writes"][0]["token"], o["writes"][0]["start"], o["writes"][0]["end"])
        for o in r.details["effect_overlaps"]
    }
    assert got_eff == bad
    definite = r.details["holds"] - r.details["maybe_holds"]
    if not definite and not want and not bad:
        # No acquire succeeded (failed, or only `info`: maybe held): nothing was tested.
        assert r.valid == "unknown"
    else:
        assert r.valid is (not want and not bad)
