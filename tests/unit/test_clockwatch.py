"""The evidence a client clock fault landed (client/clockwatch.py, nemesis/client_clock.py,
nemesis/clock.py's heal step), from observation pages built by hand with struct.pack as the
layout in client/drivers/timewarp/timewarp.h says, and from hand-made histories: no Docker."""

from __future__ import annotations

import struct
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from zkjepsen.client import clockwatch as cw
from zkjepsen.docker import timewarp as tw
from zkjepsen.faultkinds import landing
from zkjepsen.history.jsonl import Appender, Tailer
from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis import client_clock, clock

S = 1_000_000_000
MS = 1_000_000


def page(
    slots: dict[str, tuple[int, int, int, int]],
    injected: list[tuple[int, str]] = (),  # type: ignore[assignment]
    busy: tuple[str, ...] = (),
) -> bytes:
    """An observation page: slots clock -> (gen, real_ns, read_ns, count), the ring."""
    out = bytearray(4096)  # TW_OBSERVE_BYTES
    struct.pack_into("<8sQ", out, 0, b"ZKJSEEN1", len(injected))
    for i, name in enumerate(cw.CLOCKS):
        if name in slots:
            gen, real, read, count = slots[name]
            at = 16 + 64 * i
            struct.pack_into("<QQqqQ", out, at, int(name in busy), gen, real, read, count)
    base = 16 + 64 * 3
    for k, (pid, exe) in enumerate(injected):
        struct.pack_into("<q56s", out, base + (k % 32) * 64, pid, exe.encode())
    return bytes(out)


def test_a_page_built_by_hand_reads_as_its_slots(tmp_path):
    where = tmp_path / "seen"
    where.write_bytes(
        page(
            {"realtime": (3, 100 * S, 3700 * S, 5), "monotonic": (3, 7 * S, 7 * S, 9)},
            injected=[(41, "/bin/sh"), (-42, "/usr/bin/python3.11")],
            busy=("monotonic",),
        )
    )
    got = cw.read_page(str(where))
    assert got is not None
    assert got.clocks == {"realtime": tw.Reading(3, 100 * S, 3700 * S, 5)}  # busy: left out
    assert got.injected == ((41, "/bin/sh"),) and got.missed == ((42, "/usr/bin/python3.11"),)
    nothing = cw.read_page(str(tmp_path / "none"))  # not created yet: nothing seen
    assert nothing is not None and not nothing.clocks and not nothing.injections
    (tmp_path / "half").write_bytes(b"\0" * 10)
    assert cw.read_page(str(tmp_path / "half")) is None  # being created


def seen(clocks: dict[str, tuple[int, int, int]], injected=(), missed=(), n: int = 0) -> tw.Seen:
    return tw.Seen({k: tw.Reading(*v, 1) for k, v in clocks.items()}, injected, missed, n)


def feed(sampler: cw.PageSampler, gen: int, real: int, read: int) -> list:
    return sampler.feed(seen({"monotonic": (gen, real, read)}))


def test_the_sampler_writes_a_few_spaced_readings_per_generation():
    s = cw.PageSampler()
    first = feed(s, 1, 10 * S, 10 * S)
    assert first == [
        {
            "via": "timewarp",
            "gen": 1,
            "rate_on": "monotonic",
            "samples": [["monotonic", 10 * S, 10 * S]],
        }
    ]
    assert feed(s, 1, 10 * S, 10 * S) == []  # the same reading: nothing new
    assert feed(s, 1, 10 * S + 10 * MS, 0) == []  # too close to the last one
    written = [feed(s, 1, 10 * S + k * 200 * MS, k) for k in range(1, 6)]
    assert [len(w) for w in written] == [1, 1, 0, 0, 0]  # SAMPLES (3) in all
    again = feed(s, 2, 12 * S, 48 * S)  # a new generation: at once
    assert again[0]["gen"] == 2 and again[0]["samples"] == [["monotonic", 12 * S, 48 * S]]


def test_the_sampler_says_each_process_the_launcher_reached_once():
    s = cw.PageSampler()
    p1 = seen({}, ((5, "/bin/sh"), (6, "/usr/bin/python3")), (), 2)
    said = [{"via": "timewarp", "injected": [[5, "/bin/sh"], [6, "/usr/bin/python3"]]}]
    assert s.feed(p1) == said
    assert s.feed(p1) == []
    p2 = seen({}, ((5, "/bin/sh"), (6, "/usr/bin/python3")), ((7, "/opt/x32"),), 3)
    assert s.feed(p2) == [{"via": "timewarp", "missed": [[7, "/opt/x32"]]}]
    restarted = seen({}, ((5, "/bin/sh"),), (), 1)  # the program started again: a new page
    assert s.feed(restarted) == [{"via": "timewarp", "injected": [[5, "/bin/sh"]]}]


def test_measure_takes_the_offset_of_the_last_wall_reading_and_the_rate_over_the_widest_span():
    values = [
        {"via": "timewarp", "gen": 4, "rate_on": "monotonic", "samples": [
            ["realtime", 100 * S, 3700 * S], ["monotonic", 10 * S, 10 * S]]},
        {"via": "timewarp", "gen": 4, "samples": [
            ["realtime", 101 * S, 3701 * S], ["monotonic", 10 * S + 500 * MS, 12 * S]]},
    ]  # fmt: skip
    got = cw.measure(values)
    assert got == {
        "offset_s": 3600.0, "rate": 4.0, "via": "timewarp", "samples": 4, "at_ns": 10 * S + 500 * MS
    }  # fmt: skip


def test_measure_says_nothing_it_cannot_know():
    nothing = {"offset_s": None, "rate": None, "via": "", "samples": 0, "at_ns": None}
    assert cw.measure([]) == nothing
    short = [{"samples": [["monotonic", S, S], ["monotonic", S + 10 * MS, S + 40 * MS]]}]
    assert cw.measure(short)["rate"] is None  # 10 ms of real time: noise, not a rate
    wall_only = [{"rate_on": "realtime", "samples": [
        ["realtime", 100 * S, 100 * S], ["realtime", 100 * S + 300 * MS, 100 * S + 1200 * MS],
        ["monotonic", S, S], ["monotonic", S + 300 * MS, S + 300 * MS]]}]  # fmt: skip
    assert cw.measure(wall_only)["rate"] == 4.0  # Python under libfaketime: the wall clock


def test_probe_lines_become_samples_on_real_time():
    out = "junk\n1000 5000 1000 1200 5 0\n1300 6200 1600 1800 6 0\n"
    got = cw.probe_samples(out, delta_ns=4000)
    assert got == [
        ["realtime", 5000, 5000], ["monotonic", 1000, 1000],
        ["realtime", 5300, 6200], ["monotonic", 1300, 1600],
    ]  # fmt: skip


def test_the_probe_runs_with_the_programs_environment_only_when_the_file_changes(tmp_path):
    control = tmp_path / "faketime-c1"
    control.write_text("+0 x1\n")
    calls: list[dict] = []

    def run(argv, **kw):
        calls.append({"argv": argv, **kw})
        return SimpleNamespace(stdout="100 200 100 100 0 0\n400 1400 400 400 0 0\n", returncode=0)

    env = {"LD_PRELOAD": "libfaketime.so.1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    w = cw.ProbeWatch(str(control), env, uid=65534, run=run)
    first = w.poll()
    assert [v["gen"] for v in first] == ["+0 x1"] and first[0]["rate_on"] == "realtime"
    assert w.poll() == []  # unchanged: no probe
    control.write_text("+0 x4\n")
    assert [v["gen"] for v in w.poll()] == ["+0 x4"]
    assert len(calls) == 2
    assert calls[0]["argv"][0] == cw.PROBE and calls[0]["env"] is env
    assert calls[0]["user"] == 65534 and calls[0]["extra_groups"] == []


def test_the_watch_writes_what_the_page_says_as_events(tmp_path):
    where = tmp_path / "seen"
    where.write_bytes(page({"realtime": (2, 100 * S, 160 * S, 1)}))
    emitted: list[dict] = []
    cw.ClockWatch(emitted.append, threading.Event(), page=str(where)).poll()
    assert emitted == [
        {
            "via": "timewarp",
            "gen": 2,
            "rate_on": "monotonic",
            "samples": [["realtime", 100 * S, 160 * S]],
        }
    ]
    cw.ClockWatch(emitted.append, threading.Event(), page=str(tmp_path / "none")).poll()
    assert len(emitted) == 1  # no page (the launcher did not run): nothing, no error


# ---- the nemesis side: waiting for the events, recording what they show --------------------


class Handle:
    """A client whose program, on each control write, has its recorder write `events(gen)`."""

    def __init__(self, history: Path, events, warp: Path | None = None) -> None:
        self.out, self.events, self.gen = Appender(history), events, 0
        self.warp_file = str(warp) if warp else ""
        self.name, self.index = "c1", 1

    def set_clock(self, spec: str) -> int:
        self.gen += 1
        for t, v in enumerate(self.events(self.gen, spec)):
            self.out.write({"time": t, "type": "event", "f": "clock", "value": v})
        return self.gen

    def wall_lead_s(self) -> float | None:
        return None


def ctx_with(tmp_path: Path, handle: Handle) -> Any:
    return SimpleNamespace(
        lock=threading.Lock(),
        dirty_clocks=set(),
        state={},
        live=LiveHistory(lambda: sorted(tmp_path.glob("client-*.jsonl"))),
        client=lambda name: handle,
        clients=lambda: [handle],
    )


def fast(gen: int, spec: str) -> list[dict]:
    k = 4.0 if "x4" in spec else 1.0
    return [
        {"via": "timewarp", "gen": gen - 1, "samples": [["monotonic", 0, 0]]},  # the old gen
        {"via": "timewarp", "gen": gen, "samples": [
            ["realtime", 100 * S, 100 * S], ["monotonic", S, S]]},
        {"via": "timewarp", "gen": gen, "samples": [["monotonic", 2 * S, int(S + k * S)]]},
    ]  # fmt: skip


def end_record(detail: dict[str, Any]) -> dict[str, Any]:
    """The nemesis's end record of a fault on c1 (its `value`)."""
    return {"fault_id": 1, "phase": "end", "targets": ["c1"], "detail": detail}


def test_a_rate_fault_records_the_rate_its_programs_clock_was_seen_at(tmp_path):
    ctx = ctx_with(tmp_path, Handle(tmp_path / "client-1.jsonl", fast))
    detail: dict[str, Any] = {"rate": 4.0, "clock_seen": {"c1": "from the run a replay copies"}}
    client_clock.ClientClock("rate").apply(ctx, ["c1"], detail)
    seen = detail["clock_seen"]["c1"]
    assert seen["rate"] == 4.0 and seen["offset_s"] == 0.0 and seen["samples"] == 3
    assert landing("clock-rate-client", {}, end_record(detail)).landed
    client_clock.ClientClock("rate").undo(ctx, ["c1"], detail)
    assert detail["clock_healed"]["c1"]["rate"] == 1.0


def test_a_program_whose_clock_is_never_seen_is_a_missed_fault_not_an_error(tmp_path):
    detail: dict[str, Any] = {"offset_s": 3600}
    tail = Tailer(tmp_path / "client-1.jsonl")
    got = client_clock.await_seen(tail, 7, rate=False, wait_s=0.2)
    assert got == {
        "offset_s": None, "rate": None, "via": "", "samples": 0, "at_ns": None, "first_ns": None
    }  # fmt: skip
    detail["clock_seen"] = {"c1": got}
    assert not landing("clock-skew-client", {}, end_record(detail)).landed


def test_events_of_another_generation_are_not_evidence(tmp_path):
    history = tmp_path / "client-1.jsonl"
    out = Appender(history)
    out.write({"time": 1, "type": "event", "f": "clock", "value": {
        "gen": 3, "samples": [["realtime", 100 * S, 3700 * S]]}})  # fmt: skip
    got = client_clock.await_seen(Tailer(history), 4, rate=False, wait_s=0.1)
    assert got["offset_s"] is None


def test_the_heal_step_of_a_rate_under_timewarp_is_the_lead_in_its_control_lines(tmp_path):
    warp = tmp_path / "timewarp-c1"
    tw.blank(warp)
    tw.apply(warp, "+0 x4")
    handle = Handle(tmp_path / "client-1.jsonl", fast, warp)
    handle.wall_lead_s = lambda: 12.5  # type: ignore[method-assign]
    ctx = ctx_with(tmp_path, handle)
    detail: dict[str, Any] = {"rate": 4.0}
    clock.remember_rate(ctx, "c1", detail)
    clock.rate_ended(ctx, "c1", detail)
    clock.record_heal_steps(ctx, ["c1"], {"c1": handle}, at_normal=0.0)
    assert detail["heal_step_s"] == -12.5 and detail["heal_step_via"] == "the control lines"
    assert not ctx.state[clock.RATES]  # each step is said once


def test_a_skews_end_after_a_rate_is_the_backward_step_of_the_rates_lead(tmp_path):
    handle = Handle(tmp_path / "client-1.jsonl", fast)
    handle.wall_lead_s = lambda: 9.0  # type: ignore[method-assign]
    ctx = ctx_with(tmp_path, handle)
    rate: dict[str, Any] = {"rate": 4.0}
    client_clock.ClientClock("rate").apply(ctx, ["c1"], rate)
    client_clock.ClientClock("rate").undo(ctx, ["c1"], rate)  # x1: the lead stays
    skew: dict[str, Any] = {"offset_s": 60}
    client_clock.ClientClock("skew").apply(ctx, ["c1"], skew)
    assert "heal_step_s" not in rate
    client_clock.ClientClock("skew").undo(ctx, ["c1"], skew)  # `+0`: the lead goes with it
    assert rate["heal_step_s"] == -9.0 and "heal_step_s" not in skew


def test_the_heal_step_under_libfaketime_is_the_rate_times_the_time_in_force(tmp_path):
    handle = Handle(tmp_path / "client-1.jsonl", fast)
    ctx = ctx_with(tmp_path, handle)
    first: dict[str, Any] = {"rate": 4.0}
    second: dict[str, Any] = {"rate": 2.0}
    ctx.state[clock.RATES] = {"c1": [[first, 10.0, 12.0], [second, 20.0, None]]}
    clock.record_heal_steps(ctx, ["c1"], {"c1": handle}, at_normal=25.0)
    # (4 - 1) x 2 s + (2 - 1) x 5 s (the second ran until the heal's x1): on the last fault
    assert second["heal_step_s"] == -11.0 and second["heal_step_via"] == "rate x time in force"
    assert "heal_step_s" not in first


def test_the_wall_lead_a_client_handle_reads_from_its_control_lines(tmp_path):
    from zkjepsen.client.pool import ClientHandle

    warp = tmp_path / "tw"
    tw.blank(warp)
    tw.write(warp, [(0, 0, tw.ONE, 0), tw.IDENTITY, tw.IDENTITY])  # the wall clock on real time
    h = ClientHandle(1, "", "", container=None, warp_file=str(warp))  # type: ignore[arg-type]
    assert h.wall_lead_s() == 0.0
    lines = tw.read(warp)
    tw.write(warp, [(lines[0][0] + 30 * S, 0, tw.ONE, 0), *lines[1:]])
    assert 29.9 < (h.wall_lead_s() or 0) < 30.1
    seqs = [h.set_clock("+5"), h.set_clock("+0")]
    assert seqs == [tw.seq(warp) - 2, tw.seq(warp)]
