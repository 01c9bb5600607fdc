"""The lock, election and counter client loops, driving a program through the client wire
protocol and recording exactly the history the in-process loops record (workloads/common.py,
lock.py, counter.py: same `f`, `key`, `value` and completion rules), so every checker works
unchanged. The recorder stamps `invoke` before it sends and completes after the answer.

Protocol faults (client/program_client.py) complete the op in flight as `info` (error
`client-error`), except a read, which has no effect and so `fail`s. Stdlib only.
"""

from __future__ import annotations

import json
from typing import Any

from zkjepsen.client.program import Stopped
from zkjepsen.client.program_client import ProgramClient
from zkjepsen.client.protocol import ProtocolFault, Reply, seq_of

# workload -> (acquire f, release f, default lock path, resource param, default resource path)
WORKLOADS = {
    "lock": ("acquire", "release", "/zkjepsen/lock", "resource_path", "/zkjepsen/resource"),
    "election": (
        "elected",
        "resign",
        "/zkjepsen/master_election",
        "resource_path",
        "/zkjepsen/resource",
    ),
    "counter": ("acquire", "release", "/zkjepsen/lock", "counter_path", "/zkjepsen/counter"),
}


def _p(params: dict[str, Any], name: str, default: Any) -> Any:
    """A parameter typed like its default (recipes.base.param, without importing kazoo)."""
    v = params.get(name, default)
    if v is None or isinstance(v, type(default)):
        return v
    if isinstance(default, bool):
        return str(v).lower() in ("1", "true", "yes", "on")
    return type(default)(v)


def paths(workload: str, params: dict[str, Any]) -> tuple[str, str]:
    _, _, lock, res_param, res = WORKLOADS[workload]
    return _p(params, "lock_path", lock), _p(params, res_param, res)


def _why(e: ProtocolFault) -> str:
    """The `error` of an op a protocol fault ended."""
    return "stopped" if isinstance(e, Stopped) else "client-error"


class Outcome:
    """How one recorded op ended: ('ok', value) / ('fail', error) / ('info', error)."""

    def __init__(self, type_: str, value: Any = None, error: str | None = None) -> None:
        self.type, self.value, self.error = type_, value, error


def _outcome(r: Reply) -> Outcome:
    return Outcome(r.type, r.value, r.error or (None if r.type == "ok" else r.type))


class RemoteLoop:
    def __init__(self, ctx: Any, client: ProgramClient, workload: str) -> None:
        self.ctx, self.client, self.workload = ctx, client, workload
        p = ctx.params
        self.acquire_f, self.release_f = WORKLOADS[workload][:2]
        self.lock, self.resource = paths(workload, p)
        self.mode = _p(p, "resource", "unguarded")
        self.hold_s, self.think_s = _p(p, "hold_s", 0.2), _p(p, "think_s", 0.05)
        self.writes = max(0, _p(p, "writes", 2))
        self.fixed = _p(p, "hold_fixed", False)
        self.timeout_s = _p(p, "acquire_timeout_s", 10.0)

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> None:
        ctx = self.ctx
        while ctx.running() and not self.client.stopped and self.client.start():
            try:
                tok = self.acquire()
                if tok is not None:
                    if self.workload == "counter":
                        self.counter_section(tok)
                    else:
                        self.lock_section(tok)
                    self.release()
            except ProtocolFault:
                # The op in flight is completed; now the client-error, which ends the dead
                # program's beliefs; the next start() runs a fresh program.
                self.client.note_fault()
            ctx.sleep(ctx.rng.uniform(0, 2 * self.think_s))
        self.client.close()

    def _alive(self) -> None:
        """After an op that met a protocol fault: leave the section (its lock died with it)."""
        if self.client.unrecorded is not None or self.client.stopped:
            raise ProtocolFault(self.client.unrecorded or "the run ended")

    def acquire(self) -> dict[str, Any] | None:
        ctx, client = self.ctx, self.client
        op = ctx.invoke(self.acquire_f, key=self.lock)
        try:
            r = client.call(
                "acquire",
                self.timeout_s + client.request_timeout_s,
                timeout_ms=int(self.timeout_s * 1000),
            )
        except ProtocolFault as e:
            op.info(error=_why(e))
            raise
        if r.type == "ok":
            v = r.value if isinstance(r.value, dict) else {}
            node, token = v.get("node"), v.get("token")
            if not isinstance(node, str) or not (token is None or isinstance(token, int)):
                op.info(error="client-error")
                raise client.fault(
                    f"acquire was answered ok with {r.value!r}, not "
                    "{token: int or null, node: path}"
                )
            seq = v.get("seq") if isinstance(v.get("seq"), int) else seq_of(node)
            tok = {"token": token, "seq": seq, "node": node}
            op.ok(tok)
            return tok
        if r.type == "fail":
            op.fail(error=r.error or "timeout")
        else:
            op.info(error=r.error or "info")
        return None

    def release(self) -> None:
        op = self.ctx.invoke(self.release_f, key=self.lock)
        try:
            r = self.client.call("release")
        except ProtocolFault as e:
            op.info(error=_why(e))
            raise
        if r.type == "ok":
            op.ok()
        else:  # a failed release leaves the holder's state unknown to us
            op.info(error=r.error or r.type)

    def holding(self) -> bool:
        r = self.client.call("holding")
        if r.type != "ok" or not isinstance(r.value, bool):
            raise self.client.fault(f"holding was answered {r.type} {r.value!r}, not ok true/false")
        return r.value

    def read(self, path: str, sync: bool = False) -> tuple[dict[str, Any], int] | Outcome:
        """The resource's document and version, or the Outcome of a failed read."""
        try:
            r = self.client.call("read", path=path, sync=sync)
        except ProtocolFault as e:
            return Outcome("fail", error=_why(e))
        if r.type != "ok":
            return _outcome(r)
        v = r.value if isinstance(r.value, dict) else {}
        data, version = v.get("data"), v.get("version")
        if not (data is None or isinstance(data, str)) or not isinstance(version, int):
            self.client.fault(
                f"read was answered ok with {r.value!r}, not {{data: string or null, version: int}}"
            )
            return Outcome("fail", error="client-error")
        try:
            doc = json.loads(data) if data else {}
        except ValueError:
            doc = {}
        return (doc if isinstance(doc, dict) else {}), version

    def write(self, doc: dict[str, Any], tok: dict[str, Any], version: int = -1) -> Outcome:
        """Write the resource the way `resource` says (workloads/common.py write_resource)."""
        body = {**doc, "token": tok["token"]}
        if self.mode != "token":
            return self._set(body, version, self.mode == "fenced")
        for _ in range(20):  # token mode: compare-and-set on the stored highest token
            if tok["token"] is None:
                return Outcome("fail", error="Rejected: no fencing token")
            got = self.read(self.resource)
            if isinstance(got, Outcome):
                return got
            stored, v = got
            top = stored.get("top_token") or 0
            if tok["token"] < top:
                return Outcome("fail", error=f"Rejected: token {tok['token']} < stored {top}")
            out = self._set(
                {**body, "top_token": tok["token"]}, v if version == -1 else version, False
            )
            if not (out.type == "fail" and version == -1 and "BadVersion" in (out.error or "")):
                return out
        return Outcome("fail", error="Rejected: resource kept changing under compare-and-set")

    def _set(self, body: dict[str, Any], version: int, fenced: bool) -> Outcome:
        try:
            r = self.client.call(
                "write", path=self.resource, data=json.dumps(body), version=version, fenced=fenced
            )
        except ProtocolFault as e:
            return Outcome("info", error=_why(e))
        if r.type == "ok":
            v = r.value.get("version") if isinstance(r.value, dict) else None
            if not isinstance(v, int):
                self.client.fault(f"write was answered ok with {r.value!r}, not {{version: int}}")
                return Outcome("info", error="client-error")
            return Outcome("ok", v)
        return _outcome(r)

    # -- critical sections ------------------------------------------------------------------
    def lock_section(self, tok: dict[str, Any]) -> None:
        """workloads/lock.py critical_section, through the program."""
        ctx = self.ctx
        hold = self.hold_s if self.fixed else ctx.rng.uniform(0, 2 * self.hold_s)
        if self.writes:
            # Recorded as workloads/multistep.py read_state does: checker/atomicity.py reads it.
            # (The ready-file protocol needs creates/deletes the wire protocol has not: it runs
            # in the in-process loop only.)
            rop = ctx.invoke("read", key=self.resource, value={"token": tok["token"]})
            got = self.read(self.resource)
            if isinstance(got, Outcome):
                rop.fail(None, error=got.error)
            else:
                d, version = got
                rop.ok(
                    {
                        "state": d.get("state"),
                        "step": d.get("step"),
                        "steps": d.get("steps"),
                        "writer": d.get("client"),
                        "writer_token": d.get("token"),
                        "version": version,
                    }
                )
                if d.get("state") == "half":
                    ctx.event("half-done-seen", {"token": tok["token"], "left_by": d.get("token")})
            self._alive()
        else:
            ctx.sleep(hold)
        for i in range(self.writes):
            if i:
                ctx.sleep(hold / max(1, self.writes - 1))
            if not self.holding():
                ctx.event("abandon", {"token": tok["token"], "after_writes": i})
                return
            value = {"token": tok["token"], "step": i + 1, "steps": self.writes}
            op = ctx.invoke("write", key=self.resource, value=value)
            doc = {
                "state": "done" if i == self.writes - 1 else "half",
                "client": ctx.client,
                "step": i + 1,
                "steps": self.writes,
            }
            out = self.write(doc, tok)
            if out.type == "ok":
                op.ok({**value, "version": out.value})
            elif out.type == "fail":
                op.fail(value, error=out.error)
            else:
                op.info(value, error=out.error)
            self._alive()

    def counter_section(self, tok: dict[str, Any]) -> None:
        """workloads/counter.py add_one, through the program: read, hold, write value + 1."""
        ctx = self.ctx
        if not self.holding():
            ctx.event("abandon", {"token": tok["token"], "after_writes": 0})
            return
        op = ctx.invoke("add", key=self.resource, value=1)
        got = self.read(self.resource)
        if isinstance(got, Outcome):  # nothing written yet: certainly no effect
            op.fail(1, error=got.error)
            self._alive()
            return
        doc, version = got
        ctx.sleep(ctx.rng.uniform(0, 2 * self.hold_s))
        value = int(doc.get("value", 0) or 0) + 1
        out = self.write(
            {"value": value, "client": ctx.client},
            tok,
            version=version if self.mode == "token" else -1,
        )
        if out.type == "ok":
            op.ok(1, read=value - 1)
        elif out.type == "fail":
            op.fail(1, error=out.error)
        else:
            op.info(1, error=out.error)
        self._alive()
