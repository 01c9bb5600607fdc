"""Triggered faults and proxy faults through a whole run: the fault fires on the event, after its
delay, at the client the event names; a lost create reply is the proxy's, with its evidence."""

from __future__ import annotations

import json

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire, on_release
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec


def _records(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]


def _fault_records(run_dir):
    """The nemesis's own records in nemesis.jsonl (the observer's readings of who holds are
    appended beside them: run/observer.py)."""
    return [x for x in _records(run_dir / "nemesis.jsonl") if x.get("process") == "nemesis"]


def test_triggered_pause_and_lost_create_hit_the_client_the_event_names(zk_image, store_root):
    spec = TestSpec(
        recipe="kazoo",
        workload="lock",
        nemesis=["pause-client"],
        nodes=3,
        clients=3,
        time_limit_s=14,
        recovery_s=3,
        session_timeout_s=3,
        seed=1,
        image=zk_image,
        proxy=True,
        params={"resource": "unguarded", "hold_s": 0.3},
    )
    gen = steps(
        sleep(2),
        on(on_acquire(delay_s=0.2), fault("pause-client", duration=1.0)),
        on(on_release(), fault("proxy-lose-create", duration=2.0)),
    )
    r = run_test(spec, store_root, gen=gen)
    sched = json.loads((r.store_dir / "schedule.json").read_text())
    pause, lose = sched["faults"]
    # The pause: armed after 2 s, fired on an acquire ok of the client it then froze.
    assert pause["trigger"] == {"kind": "acquired", "k": 1, "delay_s": 0.2}
    fired = pause["fired"]
    assert (
        pause["targets"] == [f"c{fired['client']}"] and pause["aim"] == f"client:{fired['client']}"
    )
    hist = _records(
        r.store_dir / "clients" / f"c{fired['client']}" / f"client-{fired['client']}.jsonl"
    )
    assert any(
        x["f"] == "acquire" and x["type"] == "ok" and x["time"] == fired["event_ns"] for x in hist
    )
    assert fired["armed_ns"] <= fired["event_ns"]
    assert pause["start_ns"] >= fired["event_ns"] + 0.2e9 - 1e6
    # The lost create: armed after the pause ended, on a release; the aimed client's proxy lost
    # the reply to its next create (the lock node of its next acquire), and says so.
    assert lose["start_ns"] >= pause["end_ns"] and lose["fired"]["event_ns"] >= pause["end_ns"]
    c = lose["fired"]["client"]
    assert lose["targets"] == [f"c{c}"]
    events = _records(r.store_dir / "clients" / f"c{c}" / "proxy-events.jsonl")
    lost = [e for e in events if e["event"] == "create-reply-lost"]
    assert len(lost) == 1 and lost[0]["path"].startswith("/zkjepsen/lock/")
    recs = _fault_records(r.store_dir)
    assert [x["value"]["phase"] for x in recs] == ["start", "end", "start", "end"]
    assert recs[0]["value"]["fired"]["client"] == fired["client"]
    # kazoo's Lock finds its node by its uuid prefix after the lost reply: no split, no stall.
    assert r.results["lock"]["valid"] is True, r.results["lock"]
    assert r.results["liveness"]["valid"] is True


def test_a_re_armed_pause_lands_inside_a_hold_and_says_where_each_attempt_landed(
    zk_image, store_root
):
    """Short holds (mean 0.1 s) often end before docker pause lands: each miss is undone and the
    trigger re-armed; the attempt that counts froze the client before it invoked its release."""
    spec = TestSpec(
        recipe="kazoo",
        workload="counter",
        nemesis=["pause-client"],
        nodes=3,
        clients=3,
        time_limit_s=14,
        recovery_s=3,
        session_timeout_s=2,
        seed=3,
        image=zk_image,
        params={"resource": "unguarded", "hold_s": 0.05},
    )
    gen = steps(sleep(2), on(on_acquire(retries=20), fault("pause-client", duration="1.5x")))
    r = run_test(spec, store_root, gen=gen)
    (pause,) = json.loads((r.store_dir / "schedule.json").read_text())["faults"]
    assert pause["landed"] is True and pause["attempt"] == len(pause.get("missed", [])) + 1

    def released_before(attempt):
        c, fired = attempt["fired"]["client"], attempt["fired"]["event_ns"]
        hist = _records(r.store_dir / "clients" / f"c{c}" / f"client-{c}.jsonl")
        return any(
            x["f"] == "release" and x["type"] == "invoke" and fired < x["time"] <= applied
            for x in hist
            for applied in [attempt["applied_ns"]]
        )

    assert not released_before(pause)  # frozen inside the hold the acquire began
    assert all(released_before(m) for m in pause.get("missed", []))  # each miss really missed
    ends = [x["value"] for x in _fault_records(r.store_dir) if x["value"]["phase"] == "end"]
    assert [e["landed"] for e in ends] == [False] * (len(ends) - 1) + [True]
    # Judged from the clients' history alone: the frozen holder's belief outlived its session.
    assert "lock" in r.results and r.results["lock"]["valid"] is False, r.results["lock"]


def test_a_trigger_per_client_faults_each_client_on_its_own_acquires_side_by_side(
    zk_image, store_root
):
    """`fault_trigger = "acquired-each"` and `locks` (the gate's client scenarios): one lane
    per client, each pausing its own client whenever it acquires, on two independent locks.
    While one holder is frozen past its session, another client is granted a lock and is paused
    in its own lane, which one nemesis (one fault after another) never does."""
    spec = TestSpec(
        recipe="kazoo",
        workload="lock",
        nemesis=["pause-client"],
        fault_trigger="acquired-each",
        nodes=3,
        clients=4,
        time_limit_s=14,
        recovery_s=2,
        session_timeout_s=3,
        interval_s=0.5,
        seed=2,
        image=zk_image,
        params={"resource": "fenced", "property": "effect", "writes": 1, "hold_s": 1.5,
                "hold_fixed": True, "locks": 2},
    )  # fmt: skip
    r = run_test(spec, store_root)
    for c in (1, 2, 3, 4):  # client c took lock (c-1) mod 2 and wrote that lock's resource
        recs = _records(r.store_dir / "clients" / f"c{c}" / f"client-{c}.jsonl")
        keys = {x["key"] for x in recs if x.get("f") in ("acquire", "write") and "key" in x}
        k = (c - 1) % 2
        assert keys == {f"/zkjepsen/lock-{k}", f"/zkjepsen/resource-{k}"}, (c, keys)
    faults = json.loads((r.store_dir / "schedule.json").read_text())["faults"]
    assert faults, r.results
    for f in faults:  # lane i fires on client i+1's acquires and hits that client only
        client = f.get("lane", 0) + 1
        assert f["trigger"]["client"] == client and f["targets"] == [f"c{client}"], f
    assert len({f.get("lane", 0) for f in faults}) >= 2, faults
    # Another client was granted the lock while one was frozen (its session expired after
    # T, the pause lasts 1.5 T), and that acquire fired its own lane's trigger, armed before the
    # frozen one's pause ended: one nemesis arms the next fault only after the last has ended.
    overlapping = [
        (a["fault_id"], b["fault_id"])
        for a in faults
        for b in faults
        if a.get("lane", 0) != b.get("lane", 0)
        and b["fired"]["armed_ns"] < a["end_ns"]
        and a["start_ns"] < b["fired"]["event_ns"] < a["end_ns"]
    ]
    assert overlapping, [(f["fault_id"], f["start_ns"], f["end_ns"]) for f in faults]
    assert r.valid is not False, r.results  # kazoo's fenced resource keeps lock order


def test_a_waiter_queued_by_curator_is_found_by_its_session_and_killed(zk_image, tmp_path):
    """blog-waiter-crash's trigger on Curator's InterProcessMutex: its lock node holds its
    host's address (Curator's default data), not `client-N`; the waiter's node is found by the
    session that owns it, and the kill lands while it waits (it was "no fault ran" before)."""
    from zkjepsen.reproduce.scenarios import get_scenario

    s = get_scenario("blog-waiter-crash")
    spec = s.spec("curator-java", seed=1)
    spec.image = zk_image
    r = run_test(spec, tmp_path, gen=s.schedule)
    sched = json.loads((r.store_dir / "schedule.json").read_text())
    (kill,) = sched["faults"]
    fired = kill["fired"]
    assert fired["queued"].startswith("_c_") and fired["ahead"] >= 1, fired  # Curator's node
    assert kill["targets"] == [f"c{fired['client']}"] and kill.get("landed") is True, kill
    assert s.expect["curator-java"].judge(r.valid, r.results)[0], r.results
