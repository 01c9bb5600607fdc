"""The online lock checker against the offline one, on random histories.

Each history has 2-4 clients looping acquire -> writes -> release (some acquires fail or end
`info`, some writes too, some clients die with a client-error), nemesis kill-client ops, tokens
in acquisition order with the odd reused or stale one, and, in half of them, a resource that
records its version. Times are unique across sources (as ns timestamps are in a real run).

What is shown: fed the merged history record by record, the online checker ends with exactly the
offline checker's belief overlaps, effect overlaps and reused tokens; its first report comes at
the record that completes the evidence, not one earlier (the violation is in the offline
verdict of that prefix and of every longer one) and not later; fed the sources in any
interleaving that keeps each source's order, it finds the same, each only once every record of
the sources involved below its time has been fed.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.online import OnlineLockChecker, online_checker
from zkjepsen.history import NEMESIS, History, Op

INF = float("inf")


def _client_records(rng: random.Random, c: int, holds: list, writes: list) -> list[dict]:
    """One client's records, in its own time order (times = 8k + c: unique across sources)."""
    out: list[dict] = []
    t = rng.randrange(0, 20)
    proc = 1000 * c

    def rec(typ, f, key=None, value=None):
        nonlocal t
        t += rng.randrange(1, 6)
        r = {"time": 8 * t + c, "process": proc, "type": typ, "f": f, "client": c}
        if key is not None:
            r["key"] = key
        if value is not None or typ in ("invoke", "ok"):
            r["value"] = value
        out.append(r)
        return r

    for _ in range(rng.randrange(1, 5)):
        rec("invoke", "acquire", "/l")
        kind = rng.choices(["ok", "info", "fail"], [8, 1, 1])[0]
        done = rec(kind, "acquire", "/l", {} if kind == "ok" else None)
        if kind == "info":
            proc += 100_000  # an info op retires its process; the client goes on
        if kind != "ok":
            continue
        holds.append(done)
        for _ in range(rng.randrange(0, 3)):
            inv = rec("invoke", "write", "/r", {"hold": done})
            wt = rng.choices(["ok", "fail", "info"], [6, 1, 1])[0]
            comp = rec(wt, "write", "/r", {} if wt == "ok" else None)
            writes.append((inv, comp))
            if wt == "info":
                proc += 100_000
        if rng.random() < 0.1:  # the program died: it believes nothing any more
            rec("event", "client-error", None, "program exited")
            proc += 100_000
            continue
        rec("invoke", "release", "/l")
        rec("ok", "release", "/l")
    return out


def random_history(seed: int) -> list[dict]:
    rng = random.Random(seed)
    holds: list[dict] = []
    writes: list[tuple[dict, dict]] = []
    records = []
    nclients = rng.randrange(2, 5)
    for c in range(1, nclients + 1):
        records += _client_records(rng, c, holds, writes)
    # tokens in acquisition order, now and then one granted twice
    for i, h in enumerate(sorted(holds, key=lambda r: r["time"]), 1):
        h["value"] = {"token": i - 1 if i > 1 and rng.random() < 0.05 else i}
    for inv, _ in writes:
        token = inv["value"].pop("hold")["value"]["token"]
        inv["value"]["token"] = token - 2 if rng.random() < 0.1 else token  # a stale token
    if rng.random() < 0.5:  # the resource records its version: its acceptance order
        accepted = sorted((c for _, c in writes if c["type"] == "ok"), key=lambda r: r["time"])
        for v, comp in enumerate(accepted, 1):
            comp["value"] = {"version": v}
    for k in range(rng.randrange(0, 3)):
        at = 8 * rng.randrange(0, 60) + 7
        target = f"c{rng.randrange(1, nclients + 1)}"
        value = {"fault_id": k, "phase": "start", "targets": [target]}
        records.append({"time": at, "process": NEMESIS, "type": "info", "f": "kill-client"})
        records[-1]["value"] = value
        records.append(
            {
                "time": at + 8 * rng.randrange(1, 6),
                "process": NEMESIS,
                "type": "info",
                "f": "kill-client",
                "value": {**value, "phase": "end"},
            }
        )
    records.sort(key=lambda r: r["time"])
    for i, r in enumerate(records):
        r["index"] = i
    return records


def _source(r: dict):
    return NEMESIS if r["process"] == NEMESIS else r["client"]


def offline(records: list[dict]) -> dict[str, set]:
    """The offline checkers' findings, as comparable keys."""
    h = History([Op.from_dict(dict(r)) for r in records])
    lock = LockChecker(max_reported=10**6).check(h).details
    fencing = FencingChecker(max_reported=10**6).check(h).details
    return {
        "belief": {
            frozenset((x.client, x.start) for x in o["holds"]) for o in lock["belief_overlaps"]
        },
        "effect": {
            (o["writes"][0]["client"], o["writes"][0]["start"]) for o in lock["effect_overlaps"]
        },
        "reused-token": {(r["lock"], r["token"]) for r in fencing["reused_tokens"]},
    }


def online_key(v) -> tuple:
    if v.kind == "belief":
        return "belief", frozenset(zip(v.clients, v.evidence["starts"], strict=True))
    if v.kind == "effect":
        w = v.evidence["writes"][0]
        return "effect", (w["client"], w["start"])
    return "reused-token", (v.evidence["lock"], v.evidence["token"])


def feed_in_order(records: list[dict]):
    """The merged history record by record; after each, every source is known up to its time
    (a merged stream). Returns the checker (finished) and (index, violation) per report."""
    chk = OnlineLockChecker()
    sources = {_source(r) for r in records} | {NEMESIS}
    reports = []
    for i, r in enumerate(records):
        chk.feed(r)
        for s in sources:
            chk.advance(s, r["time"])
        reports += [(i, v) for v in chk.confirmed()]
    chk.finish()
    reports += [(len(records), v) for v in chk.confirmed()]
    return reports


def found(reports) -> dict[str, set]:
    out: dict[str, set] = {"belief": set(), "effect": set(), "reused-token": set()}
    for _, v in reports:
        kind, key = online_key(v)
        out[kind].add(key)
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
def test_online_finds_what_offline_finds_and_never_early(seed):
    records = random_history(seed)
    reports = feed_in_order(records)
    want = offline(records)
    assert found(reports) == want
    if not reports:
        return
    i, first = reports[0]
    kind, key = online_key(first)
    n = len(records)
    # the evidence is complete at record i: that prefix and every longer one show it
    for j in sorted({i + 1, min(n, i + 2), (i + 1 + n) // 2, n}):
        assert key in offline(records[:j])[kind], (j, first)
    # ... and not before: a belief pair needs a record past its later start (an end at that
    # very time would undo it); an effect or a reused token needs the record that completes it
    if kind == "belief":
        assert i == n or records[i]["time"] > first.start
        assert i == 0 or records[i - 1]["time"] <= first.start
    else:
        assert key not in offline(records[:i])[kind]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 2**32))
def test_any_interleaving_of_sources_finds_the_same_only_on_complete_evidence(seed, order):
    records = random_history(seed)
    rng = random.Random(order)
    queues: dict = {}
    for r in records:
        queues.setdefault(_source(r), []).append(r)
    queues.setdefault(NEMESIS, [])
    chk = OnlineLockChecker()
    fed: set[int] = set()
    reports = []

    def nemesis_clock():  # the live glue knows the nemesis's clock: below its next record
        q = queues[NEMESIS]
        chk.advance(NEMESIS, q[0]["time"] if q else INF)

    nemesis_clock()
    while any(queues.values()):
        s = rng.choice([s for s, q in queues.items() if q])
        r = queues[s].pop(0)
        chk.feed(r)
        fed.add(r["index"])
        nemesis_clock()
        for v in chk.confirmed():
            reports.append(v)
            if v.kind == "belief":  # every record of its sources at or below its time is in
                involved = {NEMESIS, *v.clients}
                assert all(
                    x["index"] in fed
                    for x in records
                    if _source(x) in involved and x["time"] <= v.start
                )
    chk.finish()
    reports += chk.confirmed()
    assert found([(0, v) for v in reports]) == offline(records)


def test_a_paused_holder_is_judged_once_it_writes_again():
    """The case a stop-on-violation run meets: c1 holds and is frozen, c2 gets the lock; the
    overlap is certain only when c1 writes again (before that, c1 might have released at a time
    it has not written yet)."""
    chk = OnlineLockChecker()
    recs = [
        {"time": 10, "process": 1, "client": 1, "type": "invoke", "f": "acquire", "key": "/l"},
        {"time": 20, "process": 1, "client": 1, "type": "ok", "f": "acquire", "key": "/l",
         "value": {"token": 1}},
        {"time": 30, "process": 2, "client": 2, "type": "invoke", "f": "acquire", "key": "/l"},
        {"time": 90, "process": 2, "client": 2, "type": "ok", "f": "acquire", "key": "/l",
         "value": {"token": 2}},
        {"time": 95, "process": 2, "client": 2, "type": "invoke", "f": "write", "key": "/r",
         "value": {"token": 2}},
    ]  # fmt: skip
    for r in recs:
        chk.feed(r)
    chk.advance(NEMESIS, 100)
    assert chk.confirmed() == []  # c1 has written nothing since 20: it may have released
    chk.feed({"time": 120, "process": 1, "client": 1, "type": "invoke", "f": "write",
              "key": "/r", "value": {"token": 1}})  # fmt: skip
    (v,) = chk.confirmed()
    assert v.kind == "belief" and v.clients == (1, 2) and v.start == 90


def test_a_release_before_the_second_grant_is_no_violation():
    chk = OnlineLockChecker()
    for r in [
        {"time": 1, "process": 1, "client": 1, "type": "invoke", "f": "acquire", "key": "/l"},
        {"time": 2, "process": 1, "client": 1, "type": "ok", "f": "acquire", "key": "/l"},
        {"time": 3, "process": 2, "client": 2, "type": "invoke", "f": "acquire", "key": "/l"},
        {"time": 5, "process": 2, "client": 2, "type": "ok", "f": "acquire", "key": "/l"},
        {"time": 4, "process": 1, "client": 1, "type": "invoke", "f": "release", "key": "/l"},
        {"time": 9, "process": 2, "client": 2, "type": "invoke", "f": "release", "key": "/l"},
    ]:
        chk.feed(r)
    chk.finish()
    assert chk.confirmed() == []


def test_online_checker_follows_the_kinds_the_run_fails_on():
    assert online_checker({"lock": LockChecker(fail_on=("careful",))}) is None
    chk = online_checker({"lock": LockChecker(), "fencing": FencingChecker()})
    assert chk is not None and chk.kinds == {"belief", "effect", "reused-token"}
    from zkjepsen.checker.counter import CounterChecker

    assert online_checker({"counter": CounterChecker()}).kinds == {"read-out-of-bounds"}


# ---------------------------------------------------------------- the counter's reads


def random_counter_history(seed: int) -> list[dict]:
    """Clients adding 1-3 and reading; some adds fail or end `info`; each read returns a value
    near its true bounds (so some are out of them)."""
    rng = random.Random(seed)
    records, reads = [], []
    for c in range(1, rng.randrange(2, 5) + 1):
        t, proc = rng.randrange(0, 10), 100 * c
        for _ in range(rng.randrange(2, 9)):
            f = rng.choice(["add", "add", "read"])
            t += rng.randrange(1, 6)
            inv = {"time": 8 * t + c, "process": proc, "type": "invoke", "f": f, "client": c}
            inv["value"] = rng.randrange(1, 4) if f == "add" else None
            t += rng.randrange(1, 9)
            typ = "ok" if f == "read" else rng.choices(["ok", "fail", "info"], [6, 1, 1])[0]
            comp = {"time": 8 * t + c, "process": proc, "type": typ, "f": f, "client": c}
            records += [inv, comp]
            if f == "read":
                reads.append((inv, comp))
            if typ == "info":
                proc += 1000
    adds = {}
    for r in records:
        if r["f"] == "add":
            adds.setdefault(r["process"], []).append(r)
    pairs = []
    for rs in adds.values():
        pairs += [(rs[i], rs[i + 1]) for i in range(0, len(rs), 2)]
    for inv, comp in reads:
        lower = sum(i["value"] for i, c in pairs if c["type"] == "ok" and c["time"] < inv["time"])
        upper = sum(
            i["value"] for i, c in pairs if c["type"] != "fail" and i["time"] <= comp["time"]
        )
        comp["value"] = rng.randrange(lower - 1, upper + 2)
    records.sort(key=lambda r: r["time"])
    for i, r in enumerate(records):
        r["index"] = i
    return records


def counter_offline(records: list[dict]) -> set:
    from zkjepsen.checker.counter import CounterChecker

    h = History([Op.from_dict(dict(r)) for r in records])
    errors = CounterChecker(max_reported=10**6).check(h).details["errors"]
    return {(e["client"], e["start"], e["end"]) for e in errors}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 2**32))
def test_online_counter_reads_agree_with_offline_in_any_interleaving(seed, order):
    from zkjepsen.checker.online_counter import OnlineCounterChecker

    records = random_counter_history(seed)
    want = counter_offline(records)
    clients = {r["client"] for r in records}
    # the merged stream: each report at the record that completes its evidence, not before
    chk = OnlineCounterChecker(clients=clients)
    got = set()
    for i, r in enumerate(records):
        chk.feed(r)
        for c in clients:
            chk.advance(c, r["time"])
        for v in chk.confirmed():
            key = (v.clients[0], v.start, v.end)
            got.add(key)
            assert key in counter_offline(records[: i + 1]), (i, v)
            if v.evidence["upper"] is not None:  # above the upper bound: every add invoke
                assert r["time"] > v.end  # at or before its end had to be in
    chk.finish()
    got |= {(v.clients[0], v.start, v.end) for v in chk.confirmed()}
    assert got == want
    # any interleaving that keeps each client's order finds the same
    rng = random.Random(order)
    queues: dict = {}
    for r in records:
        queues.setdefault(r["client"], []).append(r)
    chk = OnlineCounterChecker(clients=clients)
    got = set()
    while any(queues.values()):
        c = rng.choice([c for c, q in queues.items() if q])
        chk.feed(queues[c].pop(0))
        got |= {(v.clients[0], v.start, v.end) for v in chk.confirmed()}
    chk.finish()
    got |= {(v.clients[0], v.start, v.end) for v in chk.confirmed()}
    assert got == want


def test_a_counter_run_is_followed_for_its_lock_and_its_reads():
    from zkjepsen.checker.counter import CounterChecker

    chk = online_checker({"lock": LockChecker(fail_on=("belief",)), "counter": CounterChecker()})
    assert chk.kinds == {"belief", "read-out-of-bounds"}


def test_versions_given_again_after_a_restart_order_nothing():
    """A restart that forgot the resource gives its versions again: a write before it (token 3,
    version 3) and one after (token 4, version 1) are in token order in real time, not out of
    it; the offline checker (lock.in_version_order) then orders by real time, and so does this
    one from the first version that comes twice."""

    def write(t, client, token, version):
        inv = {"time": t, "process": client, "client": client, "type": "invoke", "f": "write"}
        inv.update(key="/r", value={"token": token})
        ok = {"time": t + 1, "process": client, "client": client, "type": "ok", "f": "write"}
        ok.update(key="/r", value={"version": version})
        return [inv, ok]

    records = write(10, 1, 1, 1) + write(20, 1, 2, 2) + write(30, 1, 3, 3)
    records += write(40, 2, 4, 1) + write(50, 2, 5, 2)  # after the restart
    for i, r in enumerate(records):
        r["index"] = i
    chk = OnlineLockChecker(kinds=("effect",))
    for r in records:
        chk.feed(r)
    chk.finish()
    assert chk.confirmed() == []
    assert offline(records)["effect"] == set()
