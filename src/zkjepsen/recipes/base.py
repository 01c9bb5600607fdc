"""The `Recipe` interface every lock under test implements, its `Token`, and shared helpers.

A recipe is a *test subject*: each module ports an algorithm as its source describes it, bugs
included. The helpers here only do what every port needs identically (parse a sequence suffix,
read a node's czxid for the fencing token) so a port's module shows just its own algorithm.

Runs inside client containers: stdlib and kazoo only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kazoo.exceptions import NoNodeError

from zkjepsen.backends.session import lock_node


@dataclass(frozen=True)
class Token:
    """What an acquisition yields. `token` is the fencing token: the lock node's czxid (the zxid
    of the transaction that created it; it grows in creation order across the whole ensemble).
    None when the recipe believes it holds but its node is already gone (a finding, recorded
    as-is). `seq` is the sequence suffix for sequential recipes, else None."""

    token: int | None
    seq: int | None
    node: str
    # The servers that granted it, by address (`ip:port`), where a lock lives on several
    # independent ones (Redlock: the masters that said yes). The client loop records them
    # beside the op's value (its `granted` field), where the nemesis reads them: the
    # `shared-master` target (nemesis/redlock.py).
    granted: tuple[str, ...] = ()
    # For a lock without renewal whose acquire knows how long its lease is valid (Redlock's
    # validity: the TTL less the acquisition's time and the clock drift): when it ends, in ms
    # by the holder's own clock after the acquire was CALLED (not after it returned: the
    # answer's way to the record is no part of it). Its `holding()` says no after that; the
    # checkers end its belief there, counted from the acquire's invoke, which is recorded
    # before the call (checker/nature.py `own_lease`).
    valid_ms: int | None = None

    def to_value(self, **extra: Any) -> dict[str, Any]:
        """The `value` of an `acquire` ok answer (the checkers read token, seq, node and, when
        the recipe knows it, `valid_ms`; `granted`, when there is one, is moved beside the
        value by the client loop)."""
        out = {"token": self.token, "seq": self.seq, "node": self.node, **extra}
        if self.valid_ms is not None:
            out["valid_ms"] = self.valid_ms
        if self.granted:
            out["granted"] = list(self.granted)
        return out


@runtime_checkable
class Recipe(Protocol):
    """`acquire(timeout)`: a Token when held, None when not acquired within `timeout` seconds
    (certainly not holding), or a kazoo exception (outcome unknown). `release()`: give it up.
    `holding()`: does the *application* believe it holds? (kazoo's Lock keeps saying True after
    its session is lost - that is the point of testing it.) Optional: `close()` to drop listeners,
    own sessions or a node a failed acquire left behind - never another client's node (the
    harness calls `release()` only while `holding()`); `single_use = True` when one object
    serves one acquisition only; `own_session()` when it locks on a session of its own, not
    the driver's (a `session` event's value, `{"session_id": "0x…", "timeout_ms": …}`)."""

    def acquire(self, timeout: float | None) -> Token | None: ...
    def release(self) -> None: ...
    def holding(self) -> bool: ...


class RecipeBase:
    """The constructor every recipe shares (recipes/__init__.py `make_recipe` calls it): the
    client's session with the service (a kazoo client for ZooKeeper, a service session for
    Redis and PostgreSQL), the lock path, and the options. A port puts the rest of its own
    construction in `setup()`, so each module shows only its algorithm."""

    def __init__(
        self,
        session: Any,
        path: str,
        *,
        hosts: str = "",
        identifier: str = "",
        params: dict[str, Any] | None = None,
    ) -> None:
        self.session = session
        self.path = path
        self.hosts = hosts
        self.identifier = identifier
        self.params = params or {}
        self.setup()

    def setup(self) -> None:
        """The port's own construction (nothing by default)."""


class ZkRecipe(RecipeBase):
    """A ZooKeeper recipe: its session is a kazoo client, `self.zk`."""

    @property
    def zk(self) -> Any:
        return self.session


class RedisRecipe(RecipeBase):
    """A Redis recipe: the lock's key and its TTL (`lock_ttl_s`, else the session's timeout)."""

    def setup(self) -> None:
        self.key = self.session.lock_key(self.path)
        self.ttl_ms = int(param(self.params, "lock_ttl_s", self.session.timeout) * 1000)


_SEQ = re.compile(r"(\d{10})$")  # sequence overflow to negative (2^31 creates) ignored


def seq_of(name: str) -> int | None:
    """The 10-digit sequence suffix ZooKeeper appends to a sequential node name."""
    m = _SEQ.search(name)
    return int(m.group(1)) if m else None


def sort_by_seq(children: list[str]) -> list[str]:
    """Children that carry a sequence suffix, in sequence order (names may carry a host or GUID
    prefix, so a plain string sort would be wrong)."""
    return sorted((c for c in children if seq_of(c) is not None), key=lambda c: seq_of(c) or 0)


def token_for(zk: Any, node: str) -> Token:
    """The fencing token of a node we believe we hold: read its czxid. A vanished node gives
    token None (the recipe still believes; the workload records that belief)."""
    try:
        stat = zk.exists(node)
    except NoNodeError:
        stat = None
    return Token(stat.czxid if stat is not None else None, seq_of(node), node)


def service_token(path: str, token: int) -> Token:
    """An acquisition's token drawn from another lock service (Redis INCR, a PostgreSQL
    sequence: client/services): it is the fencing token and the order alike."""
    return Token(token, token, lock_node(path, token))


def delete_quietly(zk: Any, node: str | None) -> None:
    """Delete one's own node; already gone (session expired, or deleted by someone) is fine,
    and so is none (None: never created)."""
    if node is None:
        return
    try:
        zk.delete(node)
    except NoNodeError:
        pass


def param(params: dict[str, Any] | None, name: str, default: Any) -> Any:
    """A workload/recipe parameter, typed like its default (CLI values may arrive as strings)."""
    v = (params or {}).get(name, default)
    if v is None or default is None or isinstance(v, type(default)):
        return v
    if isinstance(default, bool):
        return str(v).lower() in ("1", "true", "yes", "on")
    return type(default)(v)
