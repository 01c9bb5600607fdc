"""The lock seam: what a lock-shaped workload's loop (client/loop.py) needs of a lock service,
whichever way it reaches it. Two implementations: `WireLockClient` here (a program under test
behind the client wire protocol, docs/client-protocol.md) and the in-process one
(workloads/inprocess.py: a recipe object and the client's own session, called directly).

Every call answers with an `Answer` (ok / fail = certainly no effect / info = unknown), which
the loop records as it is: so the two modes record the same history for the same outcomes, and
only the error names differ (the program's, or the Python exception's). A broken program raises
`ProtocolFault` (already noted by the ProgramClient); the loop completes its op `info` and
starts over. Session events (`session`, `session-state`) are recorded by the client itself,
as they happen. Stdlib only: it runs inside the client containers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from zkjepsen.client.program import Stopped
from zkjepsen.client.program_client import ProgramClient
from zkjepsen.client.protocol import ProtocolFault, Reply, seq_of


@dataclass(frozen=True)
class Answer:
    """How one call to the lock service ended. `value`: acquire's token
    `{"token", "seq", "node"}`, read's `Doc`, write's resource version (None: not known).
    `detail`: the exception's message when there is one (the lock workload records it)."""

    type: str  # ok / fail / info
    value: Any = None
    error: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.type == "ok"

    def full_error(self) -> str | None:
        return f"{self.error}: {self.detail}" if self.detail else self.error


@dataclass(frozen=True)
class Doc:
    """A read of the protected resource: its JSON document, its version (the order in which
    it accepted writes), and, under the ready-file protocol, whether `ready` was there."""

    data: dict[str, Any]
    version: int | None
    ready: bool | None = None


class LockClient(Protocol):
    """One client's lock and protected resource (the `lock`, `election` and `counter`
    workloads). The methods with a body are optional capabilities, no-ops by default."""

    def start(self) -> bool:
        """Be ready for the next attempt (a running program, a recipe object); False: give up."""
        return True

    def acquire(self, timeout: float) -> Answer: ...
    def release(self) -> Answer: ...

    def holding(self) -> bool:
        """Does the application still believe it holds the lock?"""
        ...

    def read(self, key: str, sync: bool = False, ready: str | None = None) -> Answer: ...

    def write(
        self, key: str, doc: dict[str, Any], tok: dict[str, Any], mode: str, version: int = -1
    ) -> Answer:
        """Write `doc` (with our token) the way `mode` says: unguarded, fenced or token
        (workloads/common.py write_resource has the three)."""
        ...

    def alive(self) -> None:
        """Raise ProtocolFault when a call of the op just recorded broke the client."""

    def note_fault(self) -> None:
        """After a ProtocolFault: record it (the op in flight is already completed)."""

    def close(self) -> None:
        """End of the run: give up what is held, unrecorded."""

    # -- the ready-file protocol and the nested acquire (in-process only) -----------------
    ready_files: bool = False

    def set_ready(self, key: str, present: bool) -> Answer:
        return Answer("fail", error="unsupported")

    def acquire_nested(self, timeout: float) -> Answer:
        return Answer("fail", error="unsupported")

    def release_nested(self) -> Answer:
        return Answer("fail", error="unsupported")


# An acquire's answer may name the servers that granted it (`ip:port`, Redlock's masters that
# said yes: recipes/base.py `Token.granted`, docs/client-protocol.md). The client loop records
# them beside the op's value, as the record's own field (`acquired_record`).
GRANTED = "granted"
# An acquire's answer may say when its lease's validity ends, in ms by the holder's own clock
# after it was asked for the lock (a lock without renewal: Redlock's validity;
# recipes/base.py `Token.valid_ms`, docs/client-protocol.md): kept in the op's value, where
# the lock checker reads it.
VALID_MS = "valid_ms"


def acquired_record(value: Any) -> tuple[Any, dict[str, Any]]:
    """An acquire's answered value split in two: the value the checkers read (token, seq,
    node...) and the fields recorded beside it (`granted`, when the answer names them)."""
    if not isinstance(value, dict) or GRANTED not in value:
        return value, {}
    rest = {k: v for k, v in value.items() if k != GRANTED}
    granted = value[GRANTED]
    return rest, ({GRANTED: list(granted)} if granted else {})


def why(e: ProtocolFault) -> str:
    """The `error` of an op a protocol fault ended."""
    return "stopped" if isinstance(e, Stopped) else "client-error"


def _answer(r: Reply) -> Answer:
    return Answer(r.type, r.value, r.error or (None if r.type == "ok" else r.type))


class WireLockClient(LockClient):
    """The LockClient of a program under test, over its ProgramClient. `mode` (the rwlock's
    read or write): every acquire, release and holding request names it, so one program serves
    both sides of its lock (docs/client-protocol.md)."""

    def __init__(self, client: ProgramClient, mode: str | None = None) -> None:
        self.client = client
        self.side: dict[str, Any] = {} if mode is None else {"mode": mode}

    def start(self) -> bool:
        return not self.client.stopped and self.client.start()

    def acquire(self, timeout: float) -> Answer:
        client = self.client
        r = client.call(
            "acquire",
            timeout + client.request_timeout_s,
            timeout_ms=int(timeout * 1000),
            **self.side,
        )
        if r.type == "ok":
            v = r.value if isinstance(r.value, dict) else {}
            node, token = v.get("node"), v.get("token")
            if not isinstance(node, str) or not (token is None or isinstance(token, int)):
                raise client.fault(
                    f"acquire was answered ok with {r.value!r}, not "
                    "{token: int or null, node: path}"
                )
            seq = v.get("seq") if isinstance(v.get("seq"), int) else seq_of(node)
            granted = v.get(GRANTED)
            if granted is not None and not (
                isinstance(granted, list) and all(isinstance(g, str) for g in granted)
            ):
                raise client.fault(
                    f"acquire was answered ok with granted {granted!r}, not a list of the "
                    "servers' addresses (ip:port)"
                )
            valid_ms = v.get(VALID_MS)
            if valid_ms is not None and not (
                isinstance(valid_ms, (int, float))
                and not isinstance(valid_ms, bool)
                and 0 <= valid_ms < 1e12
            ):
                raise client.fault(
                    f"acquire was answered ok with valid_ms {valid_ms!r}, not when its lease "
                    "ends, in ms after the request (a number >= 0)"
                )
            value = {"token": token, "seq": seq, "node": node}
            if valid_ms is not None:
                value[VALID_MS] = valid_ms
            return Answer("ok", value | ({GRANTED: granted} if granted else {}))
        if r.type == "fail":
            return Answer("fail", error=r.error or "timeout")
        return Answer("info", error=r.error or "info")

    def release(self) -> Answer:
        r = self.client.call("release", **self.side)
        return Answer("ok") if r.type == "ok" else Answer("info", error=r.error or r.type)

    def holding(self) -> bool:
        r = self.client.call("holding", **self.side)
        if r.type != "ok" or not isinstance(r.value, bool):
            raise self.client.fault(f"holding was answered {r.type} {r.value!r}, not ok true/false")
        return r.value

    def read(self, key: str, sync: bool = False, ready: str | None = None) -> Answer:
        try:
            r = self.client.call("read", path=key, sync=sync)
        except ProtocolFault as e:
            return Answer("fail", error=why(e))
        if r.type != "ok":
            return _answer(r)
        v = r.value if isinstance(r.value, dict) else {}
        data, version = v.get("data"), v.get("version")
        if not (data is None or isinstance(data, str)) or not isinstance(version, int):
            self.client.fault(
                f"read was answered ok with {r.value!r}, not {{data: string or null, version: int}}"
            )
            return Answer("fail", error="client-error")
        try:
            doc = json.loads(data) if data else {}
        except ValueError:
            doc = {}
        return Answer("ok", Doc(doc if isinstance(doc, dict) else {}, version))

    def write(
        self, key: str, doc: dict[str, Any], tok: dict[str, Any], mode: str, version: int = -1
    ) -> Answer:
        body = {**doc, "token": tok["token"]}
        if mode != "token":
            return self._set(key, body, version, mode == "fenced")
        for _ in range(20):  # token mode: compare-and-set on the stored highest token
            if tok["token"] is None:
                return Answer("fail", error="Rejected: no fencing token")
            got = self.read(key)
            if not got.ok:
                return got
            top = got.value.data.get("top_token") or 0
            if tok["token"] < top:
                return Answer("fail", error=f"Rejected: token {tok['token']} < stored {top}")
            want = got.value.version if version == -1 else version
            out = self._set(key, {**body, "top_token": tok["token"]}, want, False)
            if not (out.type == "fail" and version == -1 and "BadVersion" in (out.error or "")):
                return out
        return Answer("fail", error="Rejected: resource kept changing under compare-and-set")

    def _set(self, key: str, body: dict[str, Any], version: int, fenced: bool) -> Answer:
        try:
            r = self.client.call(
                "write", path=key, data=json.dumps(body), version=version, fenced=fenced
            )
        except ProtocolFault as e:
            return Answer("info", error=why(e))
        if r.type == "ok":
            v = r.value.get("version") if isinstance(r.value, dict) else None
            if not isinstance(v, int):
                self.client.fault(f"write was answered ok with {r.value!r}, not {{version: int}}")
                return Answer("info", error="client-error")
            return Answer("ok", v)
        return _answer(r)

    def alive(self) -> None:
        if self.client.unrecorded is not None or self.client.stopped:
            raise ProtocolFault(self.client.unrecorded or "the run ended")

    def note_fault(self) -> None:
        self.client.note_fault()

    def close(self) -> None:
        self.client.close()
