"""`zkjepsen client check CMD`: drive a program through the client wire protocol against a live
ensemble and say, one sentence each, what it got wrong (docs/client-protocol.md).

Two instances, A and B, of the program: A takes the lock, reads and writes (fenced), B must time
out on the lock, see `holding` false and have its fenced write refused; a write with a wrong
version must be refused; after A's release B gets the lock; both close and exit. What the program
answers is checked against what the service shows (client/serverview.py: on ZooKeeper the token
is its node's czxid and the node exists; on every service the written version and data are
there). A protocol fault (silence, junk, an answer out of order,
death) ends the check: nothing after it could be trusted.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.client.program import Program
from zkjepsen.client.protocol import VERSION, Event, ProtocolFault, Reply
from zkjepsen.client.serverview import ServerView


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    steps: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


class _Abort(Exception):
    pass


class Conformance:
    def __init__(
        self,
        argv: Sequence[str],
        hosts: str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        session_timeout_s: float = 4.0,
        init_timeout_s: float = 20.0,
        request_timeout_s: float = 15.0,
        view: ServerView | None = None,
        log: Any = None,
        log_dir: Path | None = None,
    ) -> None:
        self.argv, self.hosts, self.cwd, self.env = list(argv), hosts, cwd, env
        self.session_timeout_s = session_timeout_s
        self.init_timeout_s, self.request_timeout_s = init_timeout_s, request_timeout_s
        self.view = view  # reads the service itself, to verify the answers
        self.log = log or (lambda _msg: None)  # run.log: each request and its answer
        self.log_dir = log_dir  # program-A.log, program-B.log: the programs' stderr
        self.stderr: list[Any] = []
        base = f"/zkjepsen-check/{uuid.uuid4().hex[:8]}"
        self.lock_path, self.resource = f"{base}/lock", f"{base}/resource"
        self.report = Report()
        self.events: dict[str, list[Event]] = {"A": [], "B": []}
        self.programs: dict[str, Program] = {}

    # -- helpers ------------------------------------------------------------------------------
    def problem(self, sentence: str) -> None:
        self.report.problems.append(sentence)

    def verify(self, method: str, *args: Any) -> Any:
        """Ask the service itself (the view's `method`); a service that cannot be read ends
        the check with one sentence (e.g. --hosts names another service's servers)."""
        if self.view is None:
            raise _Abort()
        try:
            return getattr(self.view, method)(*args)
        except Exception as e:  # noqa: BLE001 - any client library's error, said in a sentence
            self.problem(
                f"could not read {self.view.service} to verify the answers "
                f"({type(e).__name__}: {e}); is it the service the program speaks to?"
            )
            raise _Abort() from None

    def call(self, who: str, op: str, timeout_s: float | None = None, **fields: Any) -> Reply:
        self.report.steps += 1
        try:
            r = self.programs[who].call(op, timeout_s or self.request_timeout_s, **fields)
            self.log(f"{who} {op}: {r.type} {r.value!r}" + (f" ({r.error})" if r.error else ""))
            return r
        except ProtocolFault as e:
            self.log(f"{who} {op}: {e}")
            sentence = str(e)
            if op == "init" and "hung" in sentence:
                sentence = f"init was never answered within {timeout_s:g} s"
            self.problem(f"{sentence} ({op}, instance {who})" if op != "init" else sentence)
            raise _Abort() from None

    def expect(self, who: str, r: Reply, want: str, what: str) -> bool:
        if r.type != want:
            self.problem(
                f"{what}: expected {want}, got {r.type}"
                + (f" ({r.error})" if r.error else "")
                + f" (instance {who})"
            )
            return False
        return True

    def start(self, who: str) -> dict[str, Any]:
        if self.log_dir is not None:
            self.stderr.append((self.log_dir / f"program-{who}.log").open("ab"))
        p = Program(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            on_event=lambda e: self.events[who].append(e),
            stop=threading.Event(),
            stderr=self.stderr[-1] if self.log_dir is not None else None,
        )
        self.programs[who] = p
        try:
            p.start()
        except ProtocolFault as e:
            self.problem(str(e))
            raise _Abort() from None
        r = self.call(
            who,
            "init",
            self.init_timeout_s,
            protocol=VERSION,
            servers=self.hosts,
            session_timeout_ms=int(self.session_timeout_s * 1000),
            client=1 if who == "A" else 2,
            workload="lock",
            lock_path=self.lock_path,
            params={"resource": "fenced", **(self.view.params if self.view else {})},
        )
        if not self.expect(who, r, "ok", "init"):
            raise _Abort()
        v = r.value if isinstance(r.value, dict) else {}
        if not isinstance(v.get("session_id"), str) or not isinstance(v.get("timeout_ms"), int):
            self.problem(f'init answered {r.value!r}, not {{session_id: "0x…", timeout_ms: int}}')
        return v

    # -- the script ---------------------------------------------------------------------------
    def run(self) -> Report:
        try:
            self._script()
        except _Abort:
            pass
        finally:
            for p in self.programs.values():
                p.kill()
            if self.view is not None:
                self.view.close(self.lock_path.rsplit("/", 1)[0])
            for f in self.stderr:
                f.close()
        return self.report

    def _script(self) -> None:
        self.start("A")
        self.start("B")  # before A holds: a slow container start must not eat A's lock TTL
        r = self.call("A", "acquire", 5 + self.request_timeout_s, timeout_ms=5000)
        if not self.expect("A", r, "ok", "acquire of a free lock"):
            raise _Abort()
        self._check_token(r.value)
        self.verify("create_resource", self.resource, b"{}")
        r = self.call("A", "holding")
        if r.type != "ok" or r.value is not True:
            self.problem(f"holding right after acquire answered {r.type} {r.value!r}, not ok true")
        # The check created the resource on its own session, maybe through another server:
        # without `sync` a follower behind the leader may not have it yet (NoNodeError, a
        # fresh clone's suite at load 3, 2026-11-30), a stale read ZooKeeper allows.
        r = self.call("A", "read", path=self.resource, sync=True)
        if self.expect("A", r, "ok", "read of the resource"):
            v = r.value if isinstance(r.value, dict) else {}
            if v.get("data") != "{}" or not isinstance(v.get("version"), int):
                self.problem(f'read answered {r.value!r}, not {{data: "{{}}", version: 0}}')
        r = self.call("A", "write", path=self.resource, data="A1", version=-1, fenced=True)
        if self.expect("A", r, "ok", "fenced write by the holder"):
            self._check_write(r.value, b"A1")
        r = self.call("A", "write", path=self.resource, data="A2", version=999, fenced=False)
        self.expect("A", r, "fail", "write with a wrong version (999)")
        t = time.monotonic()
        r = self.call("B", "acquire", 1 + self.request_timeout_s, timeout_ms=1000)
        took = time.monotonic() - t
        if r.type == "ok":
            self.problem("acquire succeeded while another instance held the lock")
            raise _Abort()
        self.expect("B", r, "fail", "acquire of a held lock with timeout 1 s")
        if took > 1.0 + 3.0:
            self.problem(f"acquire with timeout 1 s took {took:.1f} s to give up")
        r = self.call("B", "holding")
        if r.type != "ok" or r.value is not False:
            self.problem(f"holding without the lock answered {r.type} {r.value!r}, not ok false")
        r = self.call("B", "write", path=self.resource, data="B1", version=-1, fenced=True)
        if r.type == "ok":
            self.problem("a fenced write by an instance that holds no lock was accepted")
        else:
            self.expect("B", r, "fail", "fenced write without the lock")
        r = self.call("A", "release")
        self.expect("A", r, "ok", "release by the holder")
        if self._node and self.verify("node_left", self._node) is False:
            self.problem(f"after release the lock node {self._node} still exists")
        r = self.call("A", "holding")
        if r.type != "ok" or r.value is not False:
            self.problem(f"holding after release answered {r.type} {r.value!r}, not ok false")
        r = self.call("B", "acquire", 5 + self.request_timeout_s, timeout_ms=5000)
        self.expect("B", r, "ok", "acquire after the holder released")
        if r.type == "ok":
            self.call("B", "release")
        for who in ("A", "B"):
            self._close(who)
        sessions = self.view is None or self.view.service == "ZooKeeper"  # others: no session
        for who in ("A", "B") if sessions else ():
            states = [e.value for e in self.events[who] if e.name == "session-state"]
            if not states:
                self.report.notes.append(
                    f"instance {who} sent no session-state events (the checkers use SUSPENDED/LOST)"
                )

    _node: str | None = None

    def _check_token(self, value: Any) -> None:
        v = value if isinstance(value, dict) else {}
        node, token = v.get("node"), v.get("token")
        if not isinstance(node, str) or not isinstance(token, int):
            self.problem(f"acquire answered ok with {value!r}, not {{token: int, node: path}}")
            raise _Abort()
        self._node = node
        if not node.startswith(self.lock_path + "/"):
            self.problem(
                f"acquire returned node {node}, which is not under the lock path {self.lock_path}"
            )
        sentence = self.verify("token_problem", self.lock_path, node, token)
        if sentence:
            self.problem(sentence)

    def _check_write(self, value: Any, data: bytes) -> None:
        got, version = self.verify("resource", self.resource)
        v = value.get("version") if isinstance(value, dict) else None
        if got != data:
            self.problem(f"the write was answered ok but the resource holds {got!r}, not {data!r}")
        if v != version:
            self.problem(
                f"write answered version {v!r}, but the resource's version after it is {version}"
            )

    def _close(self, who: str) -> None:
        p = self.programs[who]
        r = self.call(who, "close", 5.0)
        self.expect(who, r, "ok", "close")
        proc = p.proc
        try:
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()
                proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired, a closed pipe
            self.problem(f"the program did not exit within 5 s of close (instance {who})")
