"""What the lock-shaped workloads share: outcome classification (of an acquire and a release on a
recipe object too), the protected resource and how it is written.

Conventions (exact; checker/lock.py and checker/fencing.py read them):
- `acquire` / `release` ops carry `key` = the lock path; an `ok` acquire has
  `value = {"token": czxid, "seq": seq, "node": path}` (plus `mode` for the rwlock);
  `fail` = certainly not acquired (timeout), `info` = unknown.
- critical-section writes: `f: "write"`, `key` = resource path, `value = {"token": t}`;
  `ok` = the resource accepted it, `fail` = rejected (fencing), `info` = unknown.
Runs inside client containers: stdlib and kazoo only.
"""

from __future__ import annotations

import json
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    LockTimeout,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)
from kazoo.retry import KazooRetry

from zkjepsen.client.lockclient import Answer
from zkjepsen.recipes.base import Token, param

# A definite "no": the server refused, nothing changed. Everything else (ConnectionLoss,
# OperationTimeout, SessionExpired, a closed client, our own bugs) leaves the outcome unknown.
DEFINITE = (BadVersionError, NoNodeError, NodeExistsError, RolledBackError, LockTimeout)
RESOURCE_MODES = ("unguarded", "fenced", "token")


class Rejected(Exception):
    """The resource refused a write (fencing): a definite failure."""


def error_name(e: BaseException) -> str:
    return type(e).__name__


def is_definite(e: BaseException) -> bool:
    return isinstance(e, (*DEFINITE, Rejected)) or type(e).__name__ == "AcquireHung"


def resource_mode(params: dict[str, Any]) -> str:
    mode = param(params, "resource", "unguarded")
    if mode not in RESOURCE_MODES:
        raise ValueError(f"resource must be one of {', '.join(RESOURCE_MODES)}, not {mode!r}")
    return mode


def read_resource(zk: Any, path: str) -> tuple[dict[str, Any], Any]:
    data, stat = zk.get(path)
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    return (doc if isinstance(doc, dict) else {}), stat


def retrying(retry: bool) -> Any:
    """How the application calls ZooKeeper for its protected writes. With `retry` (the default,
    param `retry_writes`) it does what kazoo recommends, `KazooRetry` with `ignore_expire=True`:
    a write cut off by a connection loss or a session expiry is sent again once the client has
    reconnected - on a NEW session, so a holder whose lock node is gone still writes. That is how
    real applications end up with lost updates after a pause."""
    if not retry:
        return lambda func, *a, **kw: func(*a, **kw)

    return KazooRetry(max_tries=10, delay=0.1, backoff=2, max_delay=1.0, ignore_expire=True)


def write_resource(
    zk: Any,
    path: str,
    doc: dict[str, Any],
    tok: Token | None,
    mode: str,
    version: int = -1,
    retry: bool = False,
) -> Any:
    """Write `doc` (with our token) to the resource the way `mode` says; raise Rejected (or a
    definite kazoo error) when fencing refuses, any other exception when the outcome is unknown.
    Returns the resource's ZnodeStat after the write: its `version` is the order in which the
    resource accepted writes, which the lock checker uses to order accepted writes exactly.

    - unguarded: `set_data(version)`, whoever holds what.
    - fenced: one transaction that checks our own lock node still exists, then sets the data:
      once our session is gone (node deleted), the write is refused.
    - token: compare-and-set on the resource's stored highest token: refuse a lower token; the
      set is conditional on the version we read, so no write slips between check and set.
    """
    token = tok.token if tok else None
    body = {**doc, "token": token}
    call = retrying(retry)
    if mode == "unguarded":
        return call(zk.set, path, json.dumps(body).encode(), version=version)
    if mode == "fenced":
        if tok is None:
            raise Rejected("no lock node to fence with")

        def fenced_set() -> Any:
            t = zk.transaction()
            t.check(tok.node, -1)
            t.set_data(path, json.dumps(body).encode(), version=version)
            results = t.commit()
            for r in results:
                if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                    raise r
            return results[-1]  # the set_data's stat

        return call(fenced_set)
    return call(_token_set, zk, path, body, token, version)


def _token_set(zk: Any, path: str, body: dict[str, Any], token: int | None, version: int) -> Any:
    for _ in range(20):  # token mode; a BadVersion means someone wrote between: look again
        if token is None:
            raise Rejected("no fencing token")
        stored, stat = read_resource(zk, path)
        top = stored.get("top_token") or 0
        if token < top:
            raise Rejected(f"token {token} < stored {top}")
        want = stat.version if version == -1 else version
        try:
            return zk.set(path, json.dumps({**body, "top_token": token}).encode(), version=want)
        except BadVersionError:
            if version != -1:
                raise
    raise Rejected("resource kept changing under compare-and-set")


def single_use(recipe: Any) -> bool:
    return bool(getattr(recipe, "single_use", False))


def acquire_answer(recipe: Any, timeout: float) -> tuple[Answer, bool]:
    """One acquire on a recipe object, classified (the one classification of the in-process
    client, workloads/inprocess.py, and the Python driver, workloads/driver/server.py): a
    definite refusal `fail`s, anything else is unknown. Also returns whether the recipe object
    is still usable: after an unknown outcome it must be replaced (it may hold a half-made
    node), and a single-use one after any failure."""
    try:
        tok = recipe.acquire(timeout)
    except Exception as e:  # noqa: BLE001 - classified below; the loop must go on
        if is_definite(e):
            hung = type(e).__name__ == "AcquireHung"
            return Answer("fail", error="hung" if hung else error_name(e)), not single_use(recipe)
        return Answer("info", error=error_name(e)), False
    if tok is None:
        return Answer("fail", error="timeout"), True
    return Answer("ok", tok.to_value()), True


def release_answer(recipe: Any) -> tuple[Answer, bool]:
    """One release on a recipe object, classified, and whether the object is still usable."""
    try:
        recipe.release()
    except Exception as e:  # noqa: BLE001 - the holder's state is unknown now
        return Answer("info", error=error_name(e)), False
    return Answer("ok"), not single_use(recipe)


def discard(recipe: Any) -> None:
    """Best effort: drop a recipe object we no longer trust. Release only if it believes it
    holds (a non-holder's release can delete *another* client's node: `exclusive` and
    `election` delete the shared node whoever made it); `close()` drops only its own leftovers."""
    try:
        if recipe.holding():
            recipe.release()
    except Exception:  # noqa: BLE001 - it is being thrown away
        pass
    try:
        getattr(recipe, "close", lambda: None)()
    except Exception:  # noqa: BLE001
        pass


def ensure(zk: Any, path: str, data: bytes = b"") -> None:
    """Create `path` (and parents) with `data` unless it exists."""
    zk.ensure_path(path.rsplit("/", 1)[0] or "/")
    try:
        zk.create(path, data)
    except NodeExistsError:
        pass
