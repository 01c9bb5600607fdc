"""Triggered faults: arming a trigger and waiting for its event, and whether a fault aimed at
the client its trigger named landed while the state the event began was still on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from zkjepsen.backends.base import ListsChildren
from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.nemesis.triggers import LANDS, QueueWatch, Trigger, TriggerWatch


def await_trigger(
    ctx: NemesisContext, p: FaultOp, now: Callable[[], int], stop: threading.Event, limit_ns: int
) -> FaultOp | None:
    """Arm p's trigger now and wait (until `limit_ns` or a stop) for it to fire. Returns p
    with `fired` (when it was armed, when the event happened and was seen, who it names, when
    the fault starts after the delay) and `aim` (the target the event names, for a fault
    aimed at `trigger`); None if it never fired."""
    trigger = Trigger.from_json(dict(p.trigger or {}))
    live = ctx.live
    if live is None:  # (a leader change too: as it always was, a run with clients)
        raise NemesisError(f"trigger {trigger.describe()} needs the clients' histories")
    settled: dict[str, int] = {}
    if trigger.settled:
        began_ns = now()
        if not await_settled(ctx, stop, limit_ns):
            return None
        settled = {"settle_began_ns": began_ns, "settled_ns": now()}

    def leader() -> str | None:
        try:
            node = ctx.backend.leader()
        except Exception:  # noqa: BLE001 - mid-election or a frozen server: nobody leads yet
            return None
        return node.name if node else None

    armed_ns = now()
    queue = queue_watch(ctx, trigger)
    watch = TriggerWatch(trigger, live, leader=leader, now_ns=now)
    try:
        while True:
            fired = watch.poll()
            queued = queued_behind(queue, fired.client, now, stop) if fired and queue else {}
            if fired is not None and queued is not None:
                break  # (an acquire that queued behind nobody: wait for the next one)
            if time.monotonic_ns() >= limit_ns or stop.wait(0.01):
                return None
    finally:
        watch.close()
        if queue is not None:
            queue.session.stop()
            queue.session.close()
    seen_ns = now()
    seen: dict[str, Any] = {
        "armed_ns": armed_ns,
        "event_ns": fired.at_ns,
        "seen_ns": seen_ns,
        "client": fired.client,
        "node": fired.node,
        "start_at_ns": max(seen_ns, fired.at_ns + int(trigger.delay_s * 1e9)),
        **(queued or {}),
        **settled,
    }
    if p.target == "trigger":  # resolved afresh from the event
        aim = f"client:{fired.client}" if fired.client is not None else fired.node
        return replace(p, fired=seen, aim=aim, targets=None, detail=None)
    return replace(p, fired=seen)


def await_settled(ctx: NemesisContext, stop: threading.Event, limit_ns: int) -> bool:
    """Wait until the service is whole (its backend's `whole()`: every server serves, one
    leads); False if the time limit or a stop came first. A backend that cannot say is taken
    as whole."""
    whole = getattr(ctx.backend, "whole", None)
    while whole is not None:
        try:
            if whole():
                return True
        except Exception:  # noqa: BLE001 - a server mid-restart: not whole yet
            pass
        if time.monotonic_ns() >= limit_ns or stop.wait(0.1):
            return False
    return True


QUEUE_WAIT_S = 3.0  # a create takes ~10 ms idle, up to ~1 s on a loaded 2-core machine


def queue_watch(ctx: NemesisContext, trigger: Trigger) -> QueueWatch | None:
    """For a `waiting_in` trigger: a ZooKeeper session of the nemesis's own on that path."""
    if not trigger.waiting_in:
        return None
    session = ctx.backend.host_session(ctx.session_timeout_s)
    if not isinstance(session, ListsChildren):
        raise NemesisError(f"trigger {trigger.describe()} needs a ZooKeeper backend")
    session.start(timeout=15)
    live = ctx.live

    def sessions(client: int) -> set[int]:  # a client's node is the one its session owns
        session = live.holding().sessions.get(client) if live is not None else None
        return set(session.ids) if session is not None else set()

    return QueueWatch(session, trigger.waiting_in, sessions)


def queued_behind(
    queue: QueueWatch, client: int | None, now: Callable[[], int], stop: threading.Event
) -> dict[str, Any] | None:
    """Wait (at most QUEUE_WAIT_S) for the client's node to be queued behind another: where it
    is, or None if it got none in time or is first in line (it will hold, not wait)."""
    deadline = time.monotonic() + QUEUE_WAIT_S
    while client is not None and time.monotonic() < deadline and not stop.is_set():
        found = queue.find(client)
        if found is not None:
            name, ahead = found
            return {"queued": name, "ahead": ahead, "queued_ns": now()} if ahead else None
        stop.wait(0.02)
    return None


MISS_FIELDS = ("targets", "fired", "start_ns", "applied_ns", "end_ns")


def landed(ctx: NemesisContext, p: FaultOp, op: FaultOp) -> bool | None:
    """For a fault aimed at the client its trigger named: did it land (applied) while the
    state the event began was still on? None when that question does not apply."""
    fired = op.fired or {}
    client = fired.get("client")
    if not p.trigger or p.target != "trigger" or client is None or op.applied_ns is None:
        return None
    trigger = Trigger.from_json(dict(p.trigger))
    live = ctx.live
    if trigger.kind not in LANDS or op.targets != (f"c{client}",) or live is None:
        return None
    live.poll()
    records = live.records(client)
    return trigger.still_on(records, fired["event_ns"], went_in(op))


def went_in(op: FaultOp) -> int:
    """When the fault went in at its target: when its apply returned, or earlier, when its
    effect was seen at the target before that (`went_in_ns` in its detail, the history's
    time: a clock fault's apply waits for the program's clock to be read under the new
    setting, and a program whose clock now says its holder's lease is over may take the lock
    in that wait: the state then ended by the fault's own effect, inside it)."""
    seen = (op.detail or {}).get(WENT_IN)
    applied = int(op.applied_ns or 0)
    if isinstance(seen, int) and not isinstance(seen, bool):
        return min(applied, seen)
    return applied


WENT_IN = "went_in_ns"  # a fault's detail: when its effect was first seen at its target
