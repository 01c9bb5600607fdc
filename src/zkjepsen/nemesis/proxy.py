"""Proxy faults: what no packet filter can aim, done by the ZooKeeper wire proxy that runs inside
a client's own container (see `client.zkproxy`; the run needs `proxy = true`).

The nemesis sends one command to the proxy's control port on the client's address: lose the
reply to the client's n-th `create` (the server applied it), delay one reply, answer pings
itself so the servers expire an idle session, close the connection right after an op, or close
it instead of forwarding an op (the server never sees it), or cut the client off while keeping
its session alive on the servers (a client that gives its session up itself meets its old
nodes). The
end of the fault disarms whatever has not happened yet. What the proxy did is appended to
`proxy-events.jsonl` in the client's own out dir, as evidence beside its history; the fault
lands when the proxy acted (faultkinds/landing.py): its end records the events of the act it
armed that the proxy appended between the command and the heal (`acted`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from zkjepsen.client.zkproxy import CONTROL_PORT, command
from zkjepsen.history.jsonl import Tailer
from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.targets import NemesisContext, resolve_client

# fault name -> (proxy command, default parameters)
# proxy command -> the event the proxy notes when it acts on it (client/zkproxy.py)
ACTS = {
    "lose-create-reply": "create-reply-lost",
    "delay-reply": "reply-delayed",
    "drop-pings": "ping-dropped",
    "close-after": "closed-after",
    "drop-request": "request-dropped",
    "hold-session": "session-held",
}
ARMED = "proxy:armed"  # ctx.state: client -> its proxy's control address, while a fault is armed
SHOWN = 5  # acts kept in the detail (a proxy answering pings acts every few seconds)
COMMANDS: dict[str, tuple[str, dict[str, Any]]] = {
    "proxy-lose-create": ("lose-create-reply", {"n": 1}),
    "proxy-delay-reply": ("delay-reply", {"seconds": 2.0}),
    "proxy-drop-pings": ("drop-pings", {}),
    "proxy-close-after": ("close-after", {"op": "create", "n": 1}),
    "proxy-drop-request": ("drop-request", {"op": "delete", "n": 1}),
    "proxy-hold-session": ("hold-session", {}),
}


@dataclass(frozen=True)
class ProxyFault:
    """One proxy command on one client (`holder`, `client:N`, `random`...)."""

    fault: str  # a key of COMMANDS
    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        client, how = resolve_client(ctx, target, rng)
        name, defaults = COMMANDS[self.fault]
        h = ctx.client(client)
        return [client], {
            "chosen": how,
            "command": {"fault": name, **defaults, **params},
            "control": f"{h.ip}:{CONTROL_PORT}",
        }

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        events = _events(ctx, targets[0])
        if events is not None:  # from the end of what it did before
            events.poll()
            ctx.state[f"proxy-events:{targets[0]}"] = events
        # armed until its undo says the proxy healed (else the family's heal); one dict
        # operation each, so lanes side by side need no lock
        ctx.state.setdefault(ARMED, {})[targets[0]] = detail["control"]
        _send(detail, detail["command"], ctx.client(targets[0]).proxy_token)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        try:
            _send(detail, {"fault": "heal"}, ctx.client(targets[0]).proxy_token)
            ctx.state.get(ARMED, {}).pop(targets[0], None)
        finally:
            # after the heal: every act before it is in the file (noted before it is done)
            events = ctx.state.pop(f"proxy-events:{targets[0]}", None)
            if events is not None:
                act = ACTS.get(str(detail["command"].get("fault")))
                did = [e for e in events.poll() if e.get("event") == act]
                detail["acted"], detail["acts"] = did[:SHOWN], len(did)


def _events(ctx: NemesisContext, client: str) -> Tailer | None:
    """A reader of the client's proxy-events.jsonl (None: the run keeps no client folders)."""
    if ctx.run_dir is None:
        return None
    return Tailer(ctx.run_dir.client_history(int(client.lstrip("c"))).parent / "proxy-events.jsonl")


def _send(detail: Detail, cmd: dict[str, Any], token: str) -> None:
    """`token`: the client's proxy obeys only its nemesis (client/zkproxy.py), not its program."""
    try:
        answer = command(detail["control"], cmd, token=token)
    except OSError as e:
        raise NemesisError(
            f"the client's proxy at {detail['control']} did not answer ({e}); "
            "does the run have proxy = true?"
        ) from None
    if not answer.get("ok"):
        raise NemesisError(f"the proxy refused {cmd}: {answer.get('error')}")


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Disarm every proxy a fault armed and whose undo did not say it healed (an undo that
    failed, a run interrupted mid-apply). A proxy whose client is gone went with it."""
    armed = dict(ctx.state.pop(ARMED, {}))
    problems = []
    for name, control in sorted(armed.items()):
        try:
            h = ctx.client(name)
            if h.status() != "running":
                continue
        except Exception:  # noqa: BLE001 - no such client any more: its proxy went with it
            continue
        try:
            _send({"control": control}, {"fault": "heal"}, h.proxy_token)
        except NemesisError as e:
            problems.append(f"{name}'s proxy: {e}")
    return problems


# After the partitions' heal: the proxy's control port must be reachable from the host.
PROXY = FaultFamily("proxy", heal=heal, rank=3)
ProxyFault.family = PROXY
