"""The one client loop of the lock-shaped workloads (`lock`, `election`, `counter`, and the
in-process `rwlock`): it turns the workload's steps into recorded calls on a `LockClient`
(client/lockclient.py), whichever way the client reaches its lock service: a program behind the
wire protocol (client/main.py) or a recipe object in this process (workloads/inprocess.py). So
both modes record one history shape by construction.

History conventions (exact; checker/lock.py, fencing.py, atomicity.py, counter.py read them):
- `acquire` / `release` ops carry `key` = the lock path; an `ok` acquire has
  `value = {"token", "seq", "node"}`; `fail` = certainly not acquired, `info` = unknown.
- a holder of `lock` first reads the resource (`f: "read"`, value what it found: state, step,
  steps, writer, writer_token, version, and `ready` under the ready-file protocol), records
  `half-done-seen` when it finds a half-done update, then writes `writes` steps
  (`f: "write"`, value `{"token", "step", "steps"}` + the resource's version when ok), checking
  `holding()` before each (an `abandon` event when it no longer believes it holds).
- a holder of `counter` records `add` 1: read, hold, write value + 1 (`read` = what it read).

The ready-file protocol (param `ready_file`, the ZooKeeper paper's recipe for multi-znode
updates, recommended by the lecture notes on the paper lock): a `ready` znode beside the resource
means "the resource is complete". The writer deletes `ready` (op `unready`), writes its steps,
and re-creates `ready` (op `ready`); a reader trusts the resource only when `ready` exists, and
sets a watch on it before reading the data so a writer that starts meanwhile is noticed. A holder
that dies between its steps leaves `ready` absent: the next holder reads `ready: false`, knows
the state is half-done and redoes the whole update.
It needs creates and deletes the wire protocol has not: in-process only (`ready_files`).
Stdlib only: it runs inside the client containers.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.client.lockclient import Answer, Doc, LockClient, acquired_record, why
from zkjepsen.client.protocol import ProtocolFault

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
    "rwlock": (
        "acquire",
        "release",
        "/zkjepsen/shared_lock",
        "resource_path",
        "/zkjepsen/resource",
    ),
    # permits' holders share what they guard: an empty critical section (writes 0)
    "semaphore": (
        "acquire",
        "release",
        "/zkjepsen/semaphore",
        "resource_path",
        "/zkjepsen/resource",
    ),
}


def param(params: dict[str, Any], name: str, default: Any) -> Any:
    """A parameter typed like its default (recipes.base.param, without importing kazoo)."""
    v = params.get(name, default)
    if v is None or isinstance(v, type(default)):
        return v
    if isinstance(default, bool):
        return str(v).lower() in ("1", "true", "yes", "on")
    return type(default)(v)


def paths(workload: str, params: dict[str, Any]) -> tuple[str, str]:
    _, _, lock, res_param, res = WORKLOADS[workload]
    return param(params, "lock_path", lock), param(params, res_param, res)


MANY_LOCKS = ("lock", "election")  # the workloads whose `locks` param may exceed 1


def all_paths(workload: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """Every lock's (lock path, resource path): one, or with `locks` = n > 1 the lock and
    resource paths suffixed -0 .. -(n-1), each lock with a resource of its own."""
    lock, res = paths(workload, params)
    n = param(params, "locks", 1)
    if n <= 1 or workload not in MANY_LOCKS:
        return [(lock, res)]
    return [(f"{lock}-{k}", f"{res}-{k}") for k in range(n)]


def client_params(workload: str, params: dict[str, Any], client: int) -> dict[str, Any]:
    """Client `client`'s own parameters (taken once, where a client's context is made): with
    `locks` = n > 1 it takes lock (client - 1) mod n, and writes that lock's resource."""
    if workload not in MANY_LOCKS or param(params, "locks", 1) <= 1:
        return params  # (also every workload without a lock path: ping, register, queue ...)
    every = all_paths(workload, params)
    lock, res = every[(client - 1) % len(every)]
    return {**params, "lock_path": lock, WORKLOADS[workload][3]: res, "locks": 1}


def ready_path(params: dict[str, Any], resource: str) -> str | None:
    """The ready node's path when the ready-file protocol is on (above)."""
    if not param(params, "ready_file", False):
        return None
    return param(params, "ready_path", resource + "-ready")


class LockLoop:
    """One client's loop: acquire, the workload's critical section, release, think.

    With `modes` (the rwlock: a LockClient for each of `read` and `write`), every attempt first
    picks its mode (`read` with probability `read_frac`) and goes through that mode's client;
    its acquire and release records carry `"mode"`, a reader reads the resource while it holds
    and a writer runs the lock section with one write."""

    def __init__(
        self,
        ctx: Any,
        client: LockClient,
        workload: str,
        modes: dict[str, LockClient] | None = None,
    ) -> None:
        self.ctx, self.client, self.workload = ctx, client, workload
        self.modes = modes
        self.mode: str | None = None
        p = ctx.params
        self.acquire_f, self.release_f = WORKLOADS[workload][:2]
        self.lock, self.resource = paths(workload, p)
        self.resource_mode = param(p, "resource", "unguarded")
        # A mean hold of 0.2 s: a real critical section, and long enough that a fault aimed at
        # the holder (docker pause takes ~0.1 s to land) usually finds it still holding. The
        # rwlock keeps the 0.05 s its own loop had.
        self.hold_s = param(p, "hold_s", 0.05 if modes else 0.2)
        self.think_s = param(p, "think_s", 0.05)
        self.read_frac = param(p, "read_frac", 0.6)
        # 0: an empty critical section; an rwlock writer writes one step
        self.writes = (
            1 if modes else 0 if workload == "semaphore" else max(0, param(p, "writes", 2))
        )
        self.fixed = param(p, "hold_fixed", False)  # hold exactly hold_s (scripted scenarios)
        self.timeout_s = param(p, "acquire_timeout_s", 10.0)
        self.nested = workload in ("lock", "election") and param(p, "nested", False)
        multi = workload != "counter" and self.writes > 1 and client.ready_files
        self.ready = ready_path(p, self.resource) if multi else None

    def next_client(self) -> LockClient:
        """The client of the next attempt: the rwlock's picks its mode first."""
        if self.modes is None:
            return self.client
        self.mode = mode = "read" if self.ctx.rng.random() < self.read_frac else "write"
        return self.modes[mode]

    def run(self) -> None:
        ctx = self.ctx
        while ctx.running():
            client = self.client = self.next_client()
            if not client.start():
                break
            try:
                tok = self.acquire()
                if tok is not None:
                    self.section(tok)
                    self.release()
            except ProtocolFault:
                # The op in flight is completed; now the client-error, which ends the dead
                # program's beliefs; the next start() runs a fresh program.
                client.note_fault()
            ctx.sleep(ctx.rng.uniform(0, 2 * self.think_s))
        for client in (self.modes or {"": self.client}).values():
            client.close()

    def section(self, tok: dict[str, Any]) -> None:
        if self.workload == "counter":
            self.counter_section(tok)
            return
        hold = self.hold_s if self.fixed else self.ctx.rng.uniform(0, 2 * self.hold_s)
        if self.mode == "read":
            self.read_section(hold)
            return
        if self.nested:
            self.nested_section()
        self.lock_section(tok, self.writes, hold, self.ready)

    def acquire(self) -> dict[str, Any] | None:
        extra = None if self.mode is None else {"mode": self.mode}
        op = self.ctx.invoke(self.acquire_f, key=self.lock, value=extra)
        try:
            a = self.client.acquire(self.timeout_s)
        except ProtocolFault as e:
            op.info(extra, error=why(e))
            raise
        if a.ok:
            value, beside = acquired_record(a.value)  # the granting servers, beside its value
            op.ok(value if extra is None else {**value, **extra}, **beside)
            return value
        (op.fail if a.type == "fail" else op.info)(extra, error=a.error)
        return None

    def release(self) -> None:
        extra = None if self.mode is None else {"mode": self.mode}
        op = self.ctx.invoke(self.release_f, key=self.lock, value=extra)
        try:
            a = self.client.release()
        except ProtocolFault as e:
            op.info(extra, error=why(e))
            raise
        if a.ok:
            op.ok(extra)
        else:  # a failed release leaves the holder's state unknown to us
            op.info(extra, error=a.error)

    def record(self, op: Any, value: Any, a: Answer, full: bool = True) -> None:
        """Complete a write-shaped op with the client's answer."""
        error = a.full_error() if full else a.error
        if a.ok:
            op.ok(value if a.value is None else {**value, "version": a.value})
        else:
            (op.fail if a.type == "fail" else op.info)(value, error=error)

    # -- lock / election ------------------------------------------------------------------
    def read_state(self, tok: dict[str, Any], ready: str | None) -> Doc | None:
        """Record one read of the resource (and of `ready`); None when the read failed."""
        ctx = self.ctx
        op = ctx.invoke("read", key=self.resource, value={"token": tok["token"]})
        a = self.client.read(self.resource, ready=ready)
        if not a.ok:
            op.fail(None, error=a.error)
            return None
        d: Doc = a.value
        value = {
            "state": d.data.get("state"),
            "step": d.data.get("step"),
            "steps": d.data.get("steps"),
            "writer": d.data.get("client"),
            "writer_token": d.data.get("token"),
            "version": d.version,
        }
        if ready is not None:
            value["ready"] = d.ready
        op.ok(value)
        return d

    def read_section(self, hold: float) -> None:
        """An rwlock reader's hold: one read of the resource (recorded as found), then hold."""
        op = self.ctx.invoke("read", key=self.resource)
        a = self.client.read(self.resource)
        if a.ok:
            op.ok(a.value.data)
        else:
            op.fail(error=a.error)
        self.ctx.sleep(hold)

    def set_ready(self, ready: str, present: bool, token: Any) -> bool:
        """Delete (`unready`) or create (`ready`) the ready node; True when it is as wanted."""
        op = self.ctx.invoke("ready" if present else "unready", key=ready, value={"token": token})
        a = self.client.set_ready(ready, present)
        if not a.ok:  # unknown outcome: the caller stops its update
            op.info({"token": token}, error=a.error)
            return False
        op.ok({"token": token})
        return True

    def lock_section(
        self, tok: dict[str, Any], writes: int, hold: float, ready: str | None
    ) -> None:
        """The holder's work: read the resource, then `writes` steps over `hold` seconds (the
        ready-file protocol around them when `ready` names the ready node), stopping once it
        stops holding."""
        ctx, client, token = self.ctx, self.client, tok["token"]
        if writes:
            d = self.read_state(tok, ready)
            if d is not None and d.data.get("state") == "half":
                seen = {"token": token, "left_by": d.data.get("token")}
                ctx.event("half-done-seen", seen if ready is None else {**seen, "ready": d.ready})
            client.alive()
        else:
            ctx.sleep(hold)
        if ready is not None and writes and not self.set_ready(ready, False, token):
            ctx.event("abandon", {"token": token, "after_writes": 0})
            return
        for i in range(writes):
            if i or writes == 1:  # one write comes at the end of the hold, as an add does
                ctx.sleep(hold / max(1, writes - 1))
            if not client.holding():
                ctx.event("abandon", {"token": token, "after_writes": i})
                return
            value = {"token": token, "step": i + 1, "steps": writes}
            op = ctx.invoke("write", key=self.resource, value=value)
            doc = {
                "state": "done" if i == writes - 1 else "half",
                "client": ctx.client,
                "step": i + 1,
                "steps": writes,
            }
            a = client.write(self.resource, doc, tok, self.resource_mode)
            self.record(op, value, a)
            client.alive()
            if not a.ok and ready is not None:
                return  # the update did not complete: `ready` stays absent
        if ready is not None and writes and client.holding():
            self.set_ready(ready, True, token)

    def nested_section(self) -> None:
        """A helper the holder calls that takes the lock itself (`with lock:` inside `with
        lock:`): acquire again, one write, release that inner level. The outer level still
        believes it holds afterwards (kazoo issue 291). Recorded as `acquire-nested` /
        `release-nested`, which the lock checkers do not count as holds of their own."""
        ctx = self.ctx
        op = ctx.invoke("acquire-nested", key=self.lock)
        a = self.client.acquire_nested(self.timeout_s)
        if not a.ok:  # a lock that is not re-entrant (kazoo today) ends here
            (op.fail if a.type == "fail" else op.info)(None, error=a.error)
            return
        op.ok({"token": a.value["token"]})
        self.lock_section(a.value, 1, 0.0, None)
        op = ctx.invoke("release-nested", key=self.lock)
        a = self.client.release_nested()
        (op.ok(None) if a.ok else op.info(None, error=a.error))

    # -- counter --------------------------------------------------------------------------
    def counter_section(self, tok: dict[str, Any]) -> None:
        """Read, hold, write value + 1: two holders that read the same n lose one add."""
        ctx, client = self.ctx, self.client
        if not client.holding():
            ctx.event("abandon", {"token": tok["token"], "after_writes": 0})
            return
        op = ctx.invoke("add", key=self.resource, value=1)
        got = client.read(self.resource)
        if not got.ok:  # nothing written yet: certainly no effect
            op.fail(1, error=got.error)
            client.alive()
            return
        d: Doc = got.value
        ctx.sleep(ctx.rng.uniform(0, 2 * self.hold_s))
        value = int(d.data.get("value", 0) or 0) + 1
        # token mode: conditional on the version read, so the check covers the whole update
        version = d.version if self.resource_mode == "token" and d.version is not None else -1
        a = client.write(
            self.resource,
            {"value": value, "client": ctx.client},
            tok,
            self.resource_mode,
            version=version,
        )
        if a.ok:
            op.ok(1, read=value - 1)
        else:
            (op.fail if a.type == "fail" else op.info)(1, error=a.error)
        client.alive()
