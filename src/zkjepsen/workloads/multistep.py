"""Multi-step updates of the `lock` workload's resource, and the ready-file protocol.

A holder's update is `writes` steps: step i of n stores `{"state": "half"|"done", "step": i,
"steps": n, "client", "token"}`. Before its first step a holder reads the resource (`f: "read"`,
recorded with what it found), so a half-done state left by a previous holder is in the history
as data, which `checker/atomicity.py` judges.

The ready-file protocol (param `ready_file`, the ZooKeeper paper's recipe for multi-znode
updates, recommended by the lecture notes on the paper lock): a `ready` znode beside the resource
means "the resource is complete". The writer deletes `ready` (op `unready`), writes its steps,
and re-creates `ready` (op `ready`); a reader trusts the resource only when `ready` exists, and
sets a watch on it before reading the data so a writer that starts meanwhile is noticed. A holder
that dies between its steps leaves `ready` absent: the next holder reads `ready: false`, knows
the state is half-done and redoes the whole update.

Runs inside client containers: stdlib and kazoo only.
"""

from __future__ import annotations

import threading
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import error_name, read_resource


def ready_path(params: dict[str, Any], resource: str) -> str | None:
    """The ready node's path when the protocol is on, else None."""
    if not param(params, "ready_file", False):
        return None
    return param(params, "ready_path", resource + "-ready")


def read_state(ctx: Any, tok: Any, resource: str, ready: str | None) -> dict[str, Any] | None:
    """Record one read of the resource (and of the ready node when the protocol is on); returns
    what was read, or None when the read failed."""
    op = ctx.invoke("read", key=resource, value={"token": tok.token})
    try:
        seen = None
        if ready is not None:
            fired = threading.Event()
            seen = ctx.zk.exists(ready, watch=lambda _e: fired.set()) is not None
        stored, stat = read_resource(ctx.zk, resource)
        if ready is not None and fired.is_set():
            seen = False  # a writer deleted `ready` while we read: do not trust the data
    except Exception as e:  # noqa: BLE001 - a read changes nothing: its failure is definite
        op.fail(None, error=error_name(e))
        return None
    value = {
        "state": stored.get("state"),
        "step": stored.get("step"),
        "steps": stored.get("steps"),
        "writer": stored.get("client"),
        "writer_token": stored.get("token"),
        "version": getattr(stat, "version", None),
    }
    if ready is not None:
        value["ready"] = seen
    op.ok(value)
    return value


def set_ready(ctx: Any, ready: str, present: bool, token: Any) -> bool:
    """Delete (`unready`) or create (`ready`) the ready node; True when it is as wanted."""
    op = ctx.invoke("ready" if present else "unready", key=ready, value={"token": token})
    try:
        if present:
            try:
                ctx.zk.create(ready, b"", makepath=True)
            except NodeExistsError:
                pass
        else:
            try:
                ctx.zk.delete(ready)
            except NoNodeError:
                pass
    except Exception as e:  # noqa: BLE001 - unknown outcome: the caller stops its update
        op.info({"token": token}, error=error_name(e))
        return False
    op.ok({"token": token})
    return True
