"""Process faults: SIGKILL/restart and freeze/thaw of servers and of client processes.

A pause is `docker pause`, the cgroup freezer: every thread of the container stops at once, as in
a stop-the-world GC or a VM stall, and the kernel keeps its TCP connections open, so the peer
sees silence, not a reset. A kill is SIGKILL of the container's main process (the JVM or the
client's Python); `docker start` brings back a new process, which for a client means a new
session and a new process id in the history (client_main takes care of that).

Each records what it saw after it went in, the observation that makes it land
(faultkinds/landing.py): a pause the targets the engine says are paused (`frozen`: docker's
State.Paused, the cgroup freezer's state), a kill the targets whose process is gone (`killed`:
the container no longer running, or under the supervisor its JVM gone), and for the others
the state they were found in instead (`not_frozen` / `not_killed`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from zkjepsen.nemesis.arming import WENT_IN
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.targets import (
    NemesisContext,
    resolve_client,
    resolve_servers,
)


@dataclass(frozen=True)
class ProcessFault:
    """`action` ("kill" or "pause") on servers (`on="servers"`) or on one client (`on="client"`).
    A kill ends with a restart, a pause with a thaw."""

    action: str
    on: str
    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        if self.on == "client":
            client, how = resolve_client(ctx, target, rng)
            return [client], {"chosen": how, "session_timeout_s": ctx.session_timeout_of(client)}
        detail: Detail = {}
        if target == "leader":
            leader = ctx.backend.leader()
            detail["leader"] = leader.name if leader else None
        return resolve_servers(ctx, target, rng), detail

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        kill = self.action == "kill"
        snapshot = getattr(ctx.backend, "before_kill", None)
        if kill and self.on == "servers":
            if snapshot is not None:
                # What the servers held the instant before (e.g. Redis: each one's replication
                # offset and lock keys): did the kill catch a write its replicas had not seen?
                detail["before_kill"] = snapshot()
            # Who held at the kill (the instant rule, checker/power.py), read the instant
            # before it from the clients' own files (the run's live history, caught up
            # then): not who held at its start record.
            detail["holders_at_kill"] = [f"c{i}" for i in holders_now(ctx)]

        def one(name: str) -> None:
            if self.on == "client":
                h = ctx.client(name)
                h.kill() if kill else h.pause()
            elif kill:
                ctx.backend.kill(ctx.node(name))
            else:
                ctx.backend.pause(ctx.node(name))

        ctx.each(one, targets)
        if ctx.now_ns is not None:
            # in place now (docker pause returns once the cgroup is frozen, kill once the
            # signal is sent): the apply's return comes later, after the observation below
            # and the read of who held, which take seconds under load (arming.went_in)
            detail[WENT_IN] = ctx.now_ns()
        observe(ctx, targets, detail, "killed" if kill else "frozen", self.on == "client")
        if self.on == "client":
            note_holding(ctx, targets[0], detail)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        kill = self.action == "kill"

        def one(name: str) -> None:
            if self.on == "client":
                h = ctx.client(name)
                _start_client(h) if kill else h.resume()
            elif kill:
                ctx.backend.restart(ctx.node(name))
            else:
                ctx.backend.resume(ctx.node(name))

        ctx.each(one, targets)


OBSERVE_S = 3.0  # a SIGKILLed process is gone in ms; a loaded engine may take ~1 s to say so
GONE = ("exited", "dead", "removing", "missing")


def observe(
    ctx: NemesisContext, targets: list[str], detail: Detail, key: str, clients: bool
) -> None:
    """`detail[key]`: the targets seen frozen ("frozen") or gone ("killed"), read (docker
    inspect, at once for every target) until all are or for at most OBSERVE_S; `not_<key>`: the
    state the others were last found in. Never raises: an unreadable state is a state."""

    def state(name: str) -> str:
        try:
            s = ctx.client(name).status() if clients else ctx.backend.state(ctx.node(name))
        except Exception as e:  # noqa: BLE001 - a miss with why, not an error of the fault
            return f"unreadable: {type(e).__name__}"
        return s or "missing"

    def seen(s: str) -> bool:
        return s == "paused" if key == "frozen" else s in GONE

    last: dict[str, str] = {}
    pending, deadline = list(targets), time.monotonic() + OBSERVE_S
    while pending:
        last.update(zip(pending, ctx.each(state, pending), strict=True))
        pending = [t for t in pending if not seen(last[t])]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    detail[key] = [t for t in targets if t not in pending]
    if pending:
        detail[f"not_{key}"] = {t: last[t] for t in pending}


def holders_now(ctx: NemesisContext) -> list[int]:
    """The clients that believe they hold a lock now (the run's live history: who holds)."""
    live = ctx.live
    return sorted(live.holding().holders) if live is not None else []


def note_holding(ctx: NemesisContext, client: str, detail: Detail) -> None:
    """Did the fault land inside the target's critical section? (It was chosen holding, but
    docker takes 50-200 ms to act.) Read once the fault is in place; reported in the end op."""
    live = ctx.live
    if live is not None and detail.get("chosen") == "holder":
        detail["holding_when_hit"] = int(client.lstrip("c")) in live.holding().holders


def _start_client(h: Any) -> None:
    """A killed client restarts only while its run still has time left: client_main exits at
    once past its deadline, which is harmless."""
    if h.status() != "running":
        h.restart()


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Thaw every frozen container and start every server that is not running. Clients that
    exited are left alone (they may simply have finished); killed clients are restarted by their
    own fault's end. Returns what could not be healed."""
    problems: list[str] = []
    for node in ctx.backend.nodes:
        try:
            state = ctx.backend.state(node)
            if state == "paused":
                ctx.backend.resume(node)
            elif state in ("exited", "created"):
                ctx.backend.restart(node)
        except Exception as e:  # noqa: BLE001 - report, keep healing the rest
            problems.append(f"{node.name}: {e}")
    for h in ctx.clients():
        try:
            if h.status() == "paused":
                h.resume()
        except Exception as e:  # noqa: BLE001
            if "No such container" not in str(e):
                problems.append(f"{h.name}: {e}")
    return problems


# First of all heals: iptables cannot run in a frozen container, nor a clock be read in one.
PROCESS = FaultFamily("process", heal=heal, rank=0)
ProcessFault.family = PROCESS
