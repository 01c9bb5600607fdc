"""When a triggered fault went in (nemesis/arming.py `went_in`): a clock fault's apply waits
until the program's clock is read under the new setting, and a program whose clock now says the
holder's lease is over takes the lock inside that wait (the zoo's redis_client_clock, run
2026-11-29: c2's acquire invoked at 16.430 s, the skew started at 16.631 s, c2's clock first
read under it at 16.691 s, c2 granted at 16.786 s beside the live holder, the apply returned
after that): the state the trigger began ended by the fault's own effect. Judged at the apply's
return, the fault "missed: its trigger's state had ended"; judged when its effect was first seen
at the target, it landed."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from zkjepsen.faultkinds.landing import unobserved
from zkjepsen.nemesis import arming, client_clock
from zkjepsen.nemesis.executed import FaultOp

S = 1_000_000_000
MS = 1_000_000
TRIGGER = {"kind": "invoked", "f": "acquire", "delay_s": 0.2, "retries": 10}


class Live:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.recs = records

    def poll(self) -> None:
        pass

    def records(self, client: int) -> list[dict[str, Any]]:
        return self.recs


def judged(detail: dict[str, Any]) -> bool | None:
    records = [  # c2's own history, as the run recorded it
        {"time": 16430 * MS, "type": "invoke", "f": "acquire"},
        {"time": 16691 * MS, "type": "event", "f": "clock", "value": {"gen": 2}},
        {"time": 16786 * MS, "type": "ok", "f": "acquire", "value": {"token": 5}},
    ]
    planned = FaultOp("clock-skew-client", 1, target="trigger", trigger=TRIGGER)
    fired = {"client": 2, "event_ns": 16430 * MS}
    ran = FaultOp(
        "clock-skew-client",
        1,
        target="trigger",
        trigger=TRIGGER,
        targets=("c2",),
        fired=fired,
        start_ns=16631 * MS,
        applied_ns=16800 * MS,  # the measurement complete: after the grant
        detail=detail,
    )
    return arming.landed(SimpleNamespace(live=Live(records)), planned, ran)


def test_a_clock_fault_whose_effect_ended_the_state_it_aimed_at_landed_inside_it():
    """Mutant: `went_in` returning the apply's return (applied_ns) alone fails it."""
    assert judged({"offset_s": 4, arming.WENT_IN: 16691 * MS}) is True
    assert judged({"offset_s": 4}) is False  # no sighting recorded: the apply's return, as before
    # a sighting after the state ended does not move it later than the apply's return
    assert judged({"offset_s": 4, arming.WENT_IN: 16900 * MS}) is False


def fast(gen: int) -> list[dict[str, Any]]:
    return [
        {"time": 5, "type": "event", "f": "clock", "value": {"gen": gen - 1, "samples": [
            ["monotonic", 0, 0]]}},
        {"time": 7, "type": "event", "f": "clock", "value": {"gen": gen, "samples": [
            ["realtime", 100 * S, 104 * S], ["monotonic", S, S]]}},
        {"time": 9, "type": "event", "f": "clock", "value": {"gen": gen, "samples": [
            ["realtime", 101 * S, 105 * S], ["monotonic", 2 * S, 2 * S]]}},
    ]  # fmt: skip


class Tail:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.recs = records

    def poll(self) -> list[dict[str, Any]]:
        out, self.recs = self.recs, []
        return out


def test_the_first_record_of_the_clock_under_the_new_setting_is_when_it_went_in():
    """Mutant: `first_ns` taken from the last record (or one of the old generation) fails it."""
    got = client_clock.await_seen(Tail(fast(3)), 3, rate=False, wait_s=0.1)
    assert got["offset_s"] == 4.0 and got["first_ns"] == 7

    class Handle:
        gen = 0

        def set_clock(self, spec: str) -> int:
            self.gen += 1
            return self.gen

    handle = Handle()

    class Later:  # what the recorder writes after the control file's write, once
        sent = False

        def poll(self) -> list[dict[str, Any]]:
            if self.sent or handle.gen == 0:
                return []
            self.sent = True
            return fast(handle.gen)

    ctx = SimpleNamespace(
        lock=threading.Lock(),
        dirty_clocks=set(),
        client=lambda name: handle,
        live=SimpleNamespace(cursor=lambda i, from_now: Later()),
    )
    detail: dict[str, Any] = {"offset_s": 4, arming.WENT_IN: 1}  # a replay's: dropped
    client_clock.ClientClock("skew").apply(ctx, ["c1"], detail)
    assert detail[arming.WENT_IN] == 7
    assert arming.WENT_IN not in unobserved(detail)  # a replay starts without it
