"""Process faults: SIGKILL/restart and freeze/thaw of servers and of client processes.

A pause is `docker pause`, the cgroup freezer: every thread of the container stops at once, as in
a stop-the-world GC or a VM stall, and the kernel keeps its TCP connections open, so the peer
sees silence, not a reset. A kill is SIGKILL of the container's main process (the JVM or the
client's Python); `docker start` brings back a new process, which for a client means a new
session and a new process id in the history (client_main takes care of that).
"""

from __future__ import annotations

import random
from typing import Any

from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.targets import NemesisContext, resolve_client, resolve_servers

SERVER_FAULTS = {"kill-one", "kill-leader", "kill-minority", "kill-majority", "pause-server",
                 "pause-leader"}
CLIENT_FAULTS = {"pause-client", "kill-client"}


def resolve(ctx: NemesisContext, f: str, target: str, rng: random.Random,
            params: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    if f in SERVER_FAULTS:
        detail: dict[str, Any] = {}
        if target == "leader":
            leader = ctx.ensemble.leader()
            detail["leader"] = leader.name if leader else None
        return resolve_servers(ctx, target, rng), detail
    if f in CLIENT_FAULTS:
        client, how = resolve_client(ctx, target, rng)
        return [client], {"chosen": how,
                          "session_timeout_s": ctx.session_timeout_of(client)}
    raise NemesisError(f"{f} is not a process fault")


def _handle(ctx: NemesisContext, name: str):
    return ctx.client(name) if name.startswith("c") else ctx.node(name)


def apply(ctx: NemesisContext, f: str, targets: list[str], detail: dict[str, Any]) -> None:
    ens = ctx.ensemble

    def one(name: str) -> None:
        if name.startswith("c"):
            h = ctx.client(name)
            h.kill() if f == "kill-client" else h.pause()
        elif f.startswith("kill-"):
            ens.kill(ctx.node(name))
        else:
            ens.pause(ctx.node(name))

    ctx.each(one, targets)
    if f in CLIENT_FAULTS:
        note_holding(ctx, targets[0], detail)


def note_holding(ctx: NemesisContext, client: str, detail: dict[str, Any]) -> None:
    """Did the fault land inside the target's critical section? (It was chosen holding, but
    docker takes 50-200 ms to act.) Read once the fault is in place; reported in the end op."""
    tracker = ctx.state.get("holders")
    if tracker is not None and detail.get("chosen") == "holder":
        detail["holding_when_hit"] = tracker.holding(int(client.lstrip("c")))


def undo(ctx: NemesisContext, f: str, targets: list[str], detail: dict[str, Any]) -> None:
    ens = ctx.ensemble

    def one(name: str) -> None:
        if name.startswith("c"):
            h = ctx.client(name)
            if f == "kill-client":
                _start_client(h)
            else:
                h.resume()
        elif f.startswith("kill-"):
            ens.restart(ctx.node(name))
        else:
            ens.resume(ctx.node(name))

    ctx.each(one, targets)


def _start_client(h) -> None:
    """A killed client restarts only while its run still has time left: client_main exits at
    once past its deadline, which is harmless."""
    if h.status() != "running":
        h.restart()


def heal(ctx: NemesisContext) -> list[str]:
    """Thaw every frozen container and start every server that is not running. Clients that
    exited are left alone (they may simply have finished); killed clients are restarted by their
    own fault's end. Returns what could not be healed."""
    problems: list[str] = []
    for node in ctx.ensemble.nodes:
        c = ctx.ensemble._container(node) if hasattr(ctx.ensemble, "_container") else None
        try:
            status = _status(c)
            if status == "paused":
                ctx.ensemble.resume(node)
            elif status in ("exited", "created"):
                ctx.ensemble.restart(node)
        except Exception as e:  # noqa: BLE001 - report, keep healing the rest
            problems.append(f"{node.name}: {e}")
    for h in (ctx.pool.handles if ctx.pool is not None else []):
        try:
            if h.status() == "paused":
                h.resume()
        except Exception as e:  # noqa: BLE001
            if "No such container" not in str(e):
                problems.append(f"{h.name}: {e}")
    return problems


def _status(container) -> str | None:
    if container is None:
        return None
    container.reload()
    return container.status
