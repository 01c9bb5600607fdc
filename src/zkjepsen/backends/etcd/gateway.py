"""etcd's v3 API through its own JSON gateway (`POST /v3/...` on the client port), with the
standard library only: what the host asks of the members (health, status, leader) and what
the protected resource's session needs (range, put, txn). The same requests etcdctl sends
over gRPC, translated by the member itself, so no gRPC on the host.

Keys and values travel base64-encoded, int64 fields as strings, and proto3's JSON leaves out
fields that hold their zero value (`succeeded: false`, `version: 0`): `num()` reads them.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

CLIENT_PORT = 2379


class Unreachable(Exception):
    """No answer from the member (down, paused, cut off, or its answer was lost)."""


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def field(d: dict[str, Any] | None, name: str) -> Any:
    """`name` (snake_case, as etcd 3.4's gateway writes) or its lowerCamelCase spelling."""
    d = d or {}
    if name in d:
        return d[name]
    head, *rest = name.split("_")
    return d.get(head + "".join(p.title() for p in rest))


def num(d: dict[str, Any] | None, name: str) -> int:
    return int(field(d, name) or 0)


def call(address: str, path: str, body: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
    """POST `body` to `http://address/v3/path`; the decoded answer. An HTTP error with a JSON
    body is etcd's own error (raised as RuntimeError with its message); no answer: Unreachable."""
    req = urllib.request.Request(
        f"http://{address}/{path.lstrip('/')}",
        data=json.dumps(body or {}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        text = e.read().decode(errors="replace")
        raise RuntimeError(f"etcd refused {path}: HTTP {e.code} {text[:200]}") from None
    except (OSError, ValueError) as e:  # refused, timed out, reset, a cut-off answer
        raise Unreachable(f"{address}: {type(e).__name__}: {e}") from None


def health(address: str, timeout: float = 0.5) -> bool:
    """`GET /health`: the member is connected to a leader and serves (etcd's own answer)."""
    try:
        with urllib.request.urlopen(f"http://{address}/health", timeout=timeout) as resp:
            return json.loads(resp.read()).get("health") == "true"
    except (OSError, ValueError):
        return False


def version(address: str, timeout: float = 0.5) -> str | None:
    """`GET /version`'s etcdserver ("3.4.23"); None when the member does not answer."""
    try:
        with urllib.request.urlopen(f"http://{address}/version", timeout=timeout) as resp:
            return json.loads(resp.read()).get("etcdserver")
    except (OSError, ValueError):
        return None


def status(address: str, timeout: float = 0.5) -> dict[str, Any] | None:
    """`Maintenance.Status` (what `etcdctl endpoint status` shows): member_id, leader,
    raft_term, ...; None when the member does not answer."""
    try:
        out = call(address, "v3/maintenance/status", {}, timeout)
    except (Unreachable, RuntimeError):
        return None
    return {
        "member_id": field(out.get("header"), "member_id"),
        "leader": out.get("leader"),
        "raft_term": num(out, "raft_term"),
        "raft_index": num(out, "raft_index"),
    }


def kv(d: dict[str, Any]) -> dict[str, Any]:
    """One key-value of a range answer, decoded."""
    return {
        "key": unb64(d.get("key")),
        "value": unb64(d.get("value")),
        "create_revision": num(d, "create_revision"),
        "mod_revision": num(d, "mod_revision"),
        "version": num(d, "version"),
        "lease": num(d, "lease"),
    }
