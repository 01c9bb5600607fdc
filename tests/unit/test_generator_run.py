"""run_nemesis without Docker: a fake fault family records what it is asked to do, so the
executor's promises (records, schedule.json, replay, heal on every exit path) are checked fast."""

from __future__ import annotations

import json
import random
import threading
import time
from types import SimpleNamespace

import pytest

from zkjepsen.faultkinds import KINDS, instant, kind
from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis import schedule
from zkjepsen.nemesis.family import FaultFamily
from zkjepsen.nemesis.faults import FAULTS, BoundFault
from zkjepsen.nemesis.targets import NemesisContext, resolve_servers
from zkjepsen.store import RunDir


class FakeFamily:
    family = FaultFamily("fake", heal=lambda ctx, everything: [], rank=0)

    def __init__(self, fail_apply: bool = False, raise_in_apply: type | None = None) -> None:
        self.calls: list[tuple] = []
        self.fail_apply = fail_apply
        self.raise_in_apply = raise_in_apply
        self.observe = False  # apply records that it saw its targets gone (as a kill does)

    def resolve(self, ctx, target, rng, params):
        return [f"n{rng.randint(1, 3)}"], {"target": target}

    def apply(self, ctx, targets, detail):
        self.calls.append(("apply", tuple(targets)))
        if self.raise_in_apply:
            raise self.raise_in_apply()
        if self.fail_apply:
            raise RuntimeError("docker said no")
        if self.observe:
            detail["killed"] = list(targets)

    def undo(self, ctx, targets, detail):
        self.calls.append(("undo", tuple(targets)))


@pytest.fixture
def fake(monkeypatch):
    fam = FakeFamily()
    healed: list[bool] = []
    for name in ("kill-one", "partition-one"):  # the kinds the plans below use
        fake_kind = kind(name, "process", "one", "fake", instant(), observer="killed")
        monkeypatch.setitem(FAULTS, name, BoundFault(fake_kind, fam))
        monkeypatch.setitem(KINDS, name, fake_kind)  # how it lands, for the nemesis's judgement
    monkeypatch.setattr(
        schedule, "heal_context", lambda ctx, everything=False: healed.append(1) or []
    )
    ens = SimpleNamespace(
        nodes=[SimpleNamespace(name=f"n{i}") for i in (1, 2, 3)],
        run_id="zkj-test",
        leader=lambda: None,
    )
    return fam, healed, ens


def _run(ens, tmp_path, **kw):
    args = dict(
        seed=3,
        time_limit_s=1.0,
        t0_ns=time.monotonic_ns(),
        files=RunDir(tmp_path),
        session_timeout_s=0.2,
        fault_duration_s=0.05,
    )
    args |= kw
    gen = args.pop(
        "gen",
        g.phases(
            g.delay(
                0.05,
                g.time_limit(
                    0.6,
                    g.mix(
                        g.fault("kill-one", duration=0.05), g.fault("partition-one", duration=0.05)
                    ),
                ),
            ),
            g.final_heal(),
        ),
    )
    files, stop = args.pop("files"), args.pop("stop_event", None)
    plan = schedule.NemesisPlan(["kill-one", "partition-one"], gen=gen, **args)
    return schedule.run_nemesis(ens, None, plan, files=files, stop_event=stop)


def test_records_pairs_and_schedule(fake, tmp_path):
    fam, healed, ens = fake
    executed = _run(ens, tmp_path)
    assert executed and healed == [1]
    recs = [json.loads(x) for x in (tmp_path / "nemesis.jsonl").read_text().splitlines()]
    assert all(r["process"] == "nemesis" and r["type"] == "info" for r in recs)
    by_id: dict = {}
    for r in recs:
        by_id.setdefault(r["value"]["fault_id"], []).append(r)
    assert all(
        [x["value"]["phase"] for x in v] == ["start", "end"] and v[0]["time"] < v[1]["time"]
        for v in by_id.values()
    )
    sched = json.loads((tmp_path / "schedule.json").read_text())
    assert [f["fault_id"] for f in sched["faults"]] == sorted(by_id)
    assert sched["seed"] == 3 and sched["final_heal"]["problems"] == []
    assert [c[0] for c in fam.calls] == ["apply", "undo"] * len(executed)


def test_same_seed_same_targets(fake, tmp_path):
    _, _, ens = fake
    a = _run(ens, tmp_path / "a")
    b = _run(ens, tmp_path / "b")
    assert [(e.f, e.targets) for e in a] == [(e.f, e.targets) for e in b]


def test_replay_uses_recorded_targets_and_times(fake, tmp_path):
    fam, _, ens = fake
    a = _run(ens, tmp_path / "a")
    sched = json.loads((tmp_path / "a" / "schedule.json").read_text())
    fam.calls.clear()
    b = schedule.run_nemesis(
        ens,
        None,
        schedule.NemesisPlan(
            [], seed=999, time_limit_s=1.0, t0_ns=time.monotonic_ns(), schedule=sched
        ),
        files=RunDir(tmp_path / "b"),
    )
    assert [(e.f, e.targets) for e in b] == [(e.f, e.targets) for e in a]
    for x, y in zip(a, b, strict=True):
        # never early (late by scheduling lag: load-dependent, not asserted)
        assert (y.start_ns or 0) >= (x.start_ns or 0) - 0.005e9, (x, y)
    assert all((x.end_ns or 0) <= (y.start_ns or 0) for x, y in zip(b, b[1:], strict=False)), b


def test_failed_apply_is_recorded_not_hidden(fake, tmp_path):
    fam, healed, ens = fake
    fam.fail_apply = True
    executed = _run(ens, tmp_path)
    assert executed and all("docker said no" in e.error for e in executed)
    assert healed == [1]
    missed = {"landed": False, "why": "never went in: RuntimeError: docker said no"}
    assert all(e.observed == missed for e in executed)


def test_the_end_record_and_the_schedule_say_whether_it_landed(fake, tmp_path):
    """The nemesis judges each fault with the power line's predicate on its own two records
    (faultkinds.landing); a replay starts without the observations of the run it replays."""
    fam, _, ens = fake
    fam.observe = True
    a = _run(ens, tmp_path / "a")
    landed = {"landed": True, "why": "seen gone"}
    assert a and all(e.observed == landed for e in a)
    recs = [json.loads(x) for x in (tmp_path / "a" / "nemesis.jsonl").read_text().splitlines()]
    ends = [r["value"] for r in recs if r["value"]["phase"] == "end"]
    assert len(ends) == len(a) and all(v["observed"] == landed for v in ends)
    sched = json.loads((tmp_path / "a" / "schedule.json").read_text())
    assert all(f["observed"] == landed and f["detail"]["killed"] for f in sched["faults"])
    fam.observe = False  # the replay's apply sees nothing: its faults must not land
    b = schedule.run_nemesis(
        ens,
        None,
        schedule.NemesisPlan(
            [], seed=999, time_limit_s=1.0, t0_ns=time.monotonic_ns(), schedule=sched
        ),
        files=RunDir(tmp_path / "b"),
    )
    assert len(b) == len(a)
    assert all(e.observed == {"landed": False, "why": "no observation recorded"} for e in b)
    assert all("killed" not in e.detail for e in b)


def test_heals_on_interrupt_inside_a_fault(fake, tmp_path):
    fam, healed, ens = fake
    fam.raise_in_apply = KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        _run(ens, tmp_path)
    assert healed == [1]
    sched = json.loads((tmp_path / "schedule.json").read_text())
    assert len(sched["faults"]) == 1 and sched["faults"][0].get("interrupted")
    assert fam.calls[-1][0] == "undo"  # the fault in progress was ended before the heal
    recs = (tmp_path / "nemesis.jsonl").read_text().splitlines()
    assert [json.loads(r)["value"]["phase"] for r in recs] == ["start", "end"]


def test_heals_on_exception_outside_a_fault(fake, tmp_path, monkeypatch):
    fam, healed, ens = fake

    def boom(*a, **k):
        raise RuntimeError("resolve failed")

    monkeypatch.setattr(fam, "resolve", boom)
    with pytest.raises(RuntimeError):
        _run(ens, tmp_path)
    assert healed == [1] and fam.calls == []


def test_stop_event_ends_the_fault_early(fake, tmp_path):
    _, healed, ens = fake
    stop = threading.Event()
    asked: list[int] = []
    t0 = time.monotonic_ns()

    def ask() -> None:
        asked.append(time.monotonic_ns() - t0)
        stop.set()

    threading.Timer(0.3, ask).start()
    gen = g.phases(g.sleep(0.05), g.once(g.Fault("kill-one", duration=30)))
    executed = _run(ens, tmp_path, gen=gen, stop_event=stop, time_limit_s=60, t0_ns=t0)
    assert len(executed) == 1 and healed == [1]
    # In this order: the fault started, the stop was asked, the fault ended; before its 30 s.
    (op,) = executed
    f = op.to_json()  # as schedule.json holds it
    assert f["start_ns"] < asked[0] <= f["end_ns"] < f["start_ns"] + 30e9, (f, asked)


def test_resolve_servers_sizes():
    ens = SimpleNamespace(
        nodes=[SimpleNamespace(name=f"n{i}") for i in range(1, 6)], leader=lambda: None
    )
    ctx = NemesisContext(ens)
    rng = random.Random(1)
    assert len(resolve_servers(ctx, "minority", rng)) == 2
    assert len(resolve_servers(ctx, "majority", rng)) == 3
    assert len(resolve_servers(ctx, "all", rng)) == 5
    assert resolve_servers(ctx, "n2,n4", rng) == ["n2", "n4"]
    assert len(resolve_servers(ctx, "leader", rng)) == 1  # nobody leads: a random one
    assert len(resolve_servers(ctx, "follower", rng)) == 1  # nobody leads: any one follows


def test_a_follower_is_never_the_leader():
    nodes = [SimpleNamespace(name=f"n{i}") for i in range(1, 4)]
    ctx = NemesisContext(SimpleNamespace(nodes=nodes, leader=lambda: nodes[1]))
    rng = random.Random(1)
    hit = {resolve_servers(ctx, "follower", rng)[0] for _ in range(60)}
    assert hit == {"n1", "n3"}  # both followers, over 60 draws; never n2, which leads


def test_heal_between_phases_runs_mid_plan(fake, tmp_path):
    _, healed, ens = fake
    gen = g.phases(
        g.once(g.Fault("kill-one", duration=0.05)),
        g.final_heal(),
        g.sleep(0.1),
        g.once(g.Fault("kill-one", duration=0.05)),
        g.final_heal(),
    )
    executed = _run(ens, tmp_path, gen=gen, time_limit_s=0.5)
    sched = json.loads((tmp_path / "schedule.json").read_text())
    assert len(executed) == 2 and len(sched["heals"]) == 1 and healed == [1, 1]


class AimRecorder(FakeFamily):
    def resolve(self, ctx, target, rng, params):
        return [f"c{target.split(':')[1]}" if target.startswith("client:") else target], {}


def test_a_triggered_fault_waits_for_its_event_and_hits_the_client_it_names(monkeypatch, tmp_path):
    from zkjepsen.nemesis.triggers import on_acquire
    from zkjepsen.store import RunDir

    fam = AimRecorder()
    monkeypatch.setitem(
        FAULTS,
        "pause-client",
        BoundFault(
            kind("pause-client", "process", "holder", "f", instant(), observer="frozen"), fam
        ),
    )
    monkeypatch.setattr(schedule, "heal_context", lambda ctx, everything=False: [])
    run_dir = RunDir(tmp_path / "run")
    hist = run_dir.client_history(2)
    hist.parent.mkdir(parents=True)
    hist.write_text(json.dumps({"time": 1, "type": "ok", "f": "acquire"}) + "\n")  # before arming
    pool = SimpleNamespace(run_dir=run_dir, handles=[], live=LiveHistory.of_run(run_dir))
    ens = SimpleNamespace(nodes=[], run_id="zkj-test", leader=lambda: None)
    t0 = time.monotonic_ns()

    def acquire_later():
        time.sleep(0.3)
        with open(hist, "a") as f:
            f.write(
                json.dumps({"time": time.monotonic_ns() - t0, "type": "ok", "f": "acquire"}) + "\n"
            )

    threading.Thread(target=acquire_later).start()
    gen = g.steps(
        g.sleep(0.05), g.on(on_acquire(delay_s=0.1), g.fault("pause-client", duration=0.05))
    )
    executed = schedule.run_nemesis(
        ens,
        pool,
        schedule.NemesisPlan([], seed=1, time_limit_s=2.0, t0_ns=t0, gen=gen),
        files=RunDir(tmp_path),
    )
    assert fam.calls == [("apply", ("c2",)), ("undo", ("c2",))]
    (op,) = executed
    f = op.to_json()  # as schedule.json holds it
    fired = f["fired"]
    assert f["target"] == "trigger" and f["aim"] == "client:2" and fired["client"] == 2
    assert fired["event_ns"] >= 0.3e9 and f["start_ns"] >= fired["event_ns"] + 0.1e9
    stored = json.loads((tmp_path / "schedule.json").read_text())
    assert stored["faults"][0]["trigger"] == {"kind": "acquired", "k": 1, "delay_s": 0.1}
    assert stored["faults"][0]["fired"]["event_ns"] == fired["event_ns"]
    # Replayed, it is re-armed and waits for a new event: none comes, so it never fires.
    fam.calls.clear()
    again = schedule.run_nemesis(
        ens,
        pool,
        schedule.NemesisPlan(
            [], seed=1, time_limit_s=0.5, t0_ns=t0, schedule={"faults": [{**f, "targets": None}]}
        ),
        files=RunDir(tmp_path / "replay"),
    )
    assert again == [] and fam.calls == []
    meta = json.loads((tmp_path / "replay" / "schedule.json").read_text())
    assert meta["unfired"][0]["trigger"]["kind"] == "acquired"


class LandsLate(AimRecorder):
    """A fault whose apply takes as long as docker's: the client's history moves on meanwhile
    (the first time it releases before the fault is in place, the second time it does not)."""

    def __init__(self, hist, t0):
        super().__init__()
        self.hist, self.t0 = hist, t0

    def apply(self, ctx, targets, detail):
        applies = sum(1 for c in self.calls if c[0] == "apply")
        if applies == 0:
            with open(self.hist, "a") as f:
                now = time.monotonic_ns() - self.t0
                f.write(json.dumps({"time": now, "type": "invoke", "f": "release"}) + "\n")
        time.sleep(0.05)
        super().apply(ctx, targets, detail)


def test_a_triggered_fault_that_lands_after_the_hold_is_undone_and_re_armed(monkeypatch, tmp_path):
    from zkjepsen.history import Op, fault_windows
    from zkjepsen.history.jsonl import read_records
    from zkjepsen.nemesis.triggers import on_acquire
    from zkjepsen.store import RunDir

    run_dir = RunDir(tmp_path / "run")
    hist = run_dir.client_history(3)
    hist.parent.mkdir(parents=True)
    hist.write_text("")
    t0 = time.monotonic_ns()
    fam = LandsLate(hist, t0)
    monkeypatch.setitem(
        FAULTS,
        "pause-client",
        BoundFault(
            kind("pause-client", "process", "holder", "f", instant(), observer="frozen"), fam
        ),
    )
    monkeypatch.setattr(schedule, "heal_context", lambda ctx, everything=False: [])
    pool = SimpleNamespace(run_dir=run_dir, handles=[], live=LiveHistory.of_run(run_dir))
    ens = SimpleNamespace(nodes=[], run_id="zkj-test", leader=lambda: None)

    def acquire_twice():
        for _ in range(2):
            time.sleep(0.3)
            with open(hist, "a") as f:
                now = time.monotonic_ns() - t0
                f.write(json.dumps({"time": now, "type": "ok", "f": "acquire"}) + "\n")

    threading.Thread(target=acquire_twice).start()
    gen = g.steps(g.on(on_acquire(retries=3), g.fault("pause-client", duration=0.1)))
    executed = schedule.run_nemesis(
        ens,
        pool,
        schedule.NemesisPlan([], seed=1, time_limit_s=2.0, t0_ns=t0, gen=gen),
        files=RunDir(tmp_path),
    )
    # Missed once (the hold ended before the fault was in place): undone at once, re-armed,
    # and the second acquire's hold is where it landed.
    assert [c[0] for c in fam.calls] == ["apply", "undo", "apply", "undo"]
    (op,) = executed
    f = op.to_json()  # as schedule.json holds it
    assert f["landed"] is True and f["attempt"] == 2 and len(f["missed"]) == 1
    miss = f["missed"][0]
    assert miss["end_ns"] < f["start_ns"] and miss["fired"]["event_ns"] < f["fired"]["event_ns"]
    # Both attempts are in the nemesis history, each with where it landed.
    ops = read_records(tmp_path / "nemesis.jsonl")
    ends = [o["value"] for o in ops if o["value"]["phase"] == "end"]
    assert [(e["attempt"], e["landed"]) for e in ends] == [(1, False), (2, True)]
    assert len(fault_windows([Op.from_dict({**o, "index": i}) for i, o in enumerate(ops)])) == 2
    # What replays is the fault with its trigger (retries included), not the missed attempt.
    stored = json.loads((tmp_path / "schedule.json").read_text())
    assert [x["trigger"] for x in stored["faults"]] == [
        {"kind": "acquired", "k": 1, "delay_s": 0.0, "retries": 3}
    ]


class FailsFirst(AimRecorder):
    """docker pause under load: `OCI runtime pause failed: unable to freeze` the first time."""

    def apply(self, ctx, targets, detail):
        if not any(c[0] == "apply" for c in self.calls):
            self.calls.append(("apply", targets))
            raise RuntimeError("Cannot pause container: unable to freeze")
        super().apply(ctx, targets, detail)


def test_a_triggered_fault_whose_apply_failed_is_re_armed(monkeypatch, tmp_path):
    from zkjepsen.nemesis.triggers import on_acquire
    from zkjepsen.store import RunDir

    run_dir = RunDir(tmp_path / "run")
    hist = run_dir.client_history(3)
    hist.parent.mkdir(parents=True)
    hist.write_text("")
    t0 = time.monotonic_ns()
    fam = FailsFirst()
    monkeypatch.setitem(
        FAULTS,
        "pause-client",
        BoundFault(
            kind("pause-client", "process", "holder", "f", instant(), observer="frozen"), fam
        ),
    )
    monkeypatch.setattr(schedule, "heal_context", lambda ctx, everything=False: [])
    pool = SimpleNamespace(run_dir=run_dir, handles=[], live=LiveHistory.of_run(run_dir))
    ens = SimpleNamespace(nodes=[], run_id="zkj-test", leader=lambda: None)

    def acquire_twice():
        for _ in range(2):
            time.sleep(0.3)
            with open(hist, "a") as f:
                now = time.monotonic_ns() - t0
                f.write(json.dumps({"time": now, "type": "ok", "f": "acquire"}) + "\n")

    threading.Thread(target=acquire_twice).start()
    gen = g.steps(g.on(on_acquire(retries=3), g.fault("pause-client", duration=0.1)))
    (op,) = schedule.run_nemesis(
        ens,
        pool,
        schedule.NemesisPlan([], seed=1, time_limit_s=2.0, t0_ns=t0, gen=gen),
        files=RunDir(tmp_path),
    )
    f = op.to_json()
    assert f["attempt"] == 2 and f["landed"] is True and not f.get("error")
    assert len(f["missed"]) == 1


def test_every_server_kill_records_who_held_the_instant_before_it(tmp_path):
    """The instant rule's at-risk clients (checker/power.py): read before each kill from the
    clients' own files, by a tracker that follows what they appended since the last kill."""
    from zkjepsen.docker.cluster import Node
    from zkjepsen.nemesis.process import ProcessFault

    run_dir = RunDir(tmp_path / "run")
    hist = {i: run_dir.client_history(i) for i in (1, 2)}
    for path in hist.values():
        path.parent.mkdir(parents=True)

    def append(i: int, t: int, typ: str, f: str) -> None:
        with open(hist[i], "a") as out:
            out.write(json.dumps({"time": t, "type": typ, "f": f}) + "\n")

    killed: list[str] = []
    ens = SimpleNamespace(
        nodes=[Node("n1", 1, "10.0.0.11", 2181)], run_id="zkj-test", kill=killed.append
    )
    ctx = NemesisContext(
        ens, SimpleNamespace(run_dir=run_dir, handles=[], live=LiveHistory.of_run(run_dir))
    )
    kill = ProcessFault("kill", "servers")
    append(1, 1, "ok", "acquire")
    append(2, 2, "invoke", "acquire")  # waiting, not holding
    first: dict = {}
    kill.apply(ctx, ["n1"], first)
    append(1, 3, "invoke", "release")
    append(2, 4, "ok", "acquire")
    second: dict = {}
    kill.apply(ctx, ["n1"], second)
    assert first["holders_at_kill"] == ["c1"] and second["holders_at_kill"] == ["c2"]
    assert len(killed) == 2 and "before_kill" not in first  # no snapshot: not Redis
