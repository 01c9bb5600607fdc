"""A ZooKeeper wire proxy between one client and the servers, for faults no packet filter can aim.

The client's connect string points at the proxy (one local port per server); the proxy forwards
every byte, parsing the length-prefixed jute frames just enough to know each request's xid and
opcode and each reply's xid. On command it:
- `lose-create-reply n`: the server applies the client's n-th create, the proxy closes the
  connection instead of forwarding the reply: the client sees ConnectionLoss and retries without
  knowing its node exists (the ZOOKEEPER-1262 class of bug: a lock without a GUID orphans a node);
- `delay-reply d [op]`: hold the next reply (of opcode `op`, or any) for d seconds;
- `drop-pings`: answer the client's pings itself and never forward them, so an idle session
  expires on the servers while the client's connection stays healthy;
- `close-after op n`: forward the reply to the client's n-th `op`, then close the connection;
- `drop-request op n`: close the connection instead of forwarding the client's n-th `op`: the
  server never sees it, the client sees ConnectionLoss and (within its session) reconnects to
  the same session, e.g. a release whose delete failed while its node lives on (CURATOR-678);
- `hold-session`: cut the client off (close its connection, refuse new ones) while the proxy
  keeps its server connection and pings the servers itself, so the old session and its
  ephemeral nodes live on the servers while the client cannot reach them: a client that gives
  its session up on its own clock (Curator's injected expiry) meets its old session's nodes
  from a new session (CURATOR-604). The heal closes the held connections: the servers expire
  the old session one session timeout later.

It runs inside the client's own container (stdlib only), so a pause or a kill of the client
freezes or kills it too. The nemesis drives it over a control port on the container's address
with one JSON object per line; what it did is appended to an events file as evidence.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CONTROL_PORT = 7181
PING_XID, WATCH_XID, AUTH_XID, SET_WATCHES_XID = -2, -1, -4, -8
PING = struct.pack(">iii", 8, PING_XID, 11)  # a client's ping request: header only
OPCODES = {
    1: "create",
    2: "delete",
    3: "exists",
    4: "getData",
    5: "setData",
    8: "getChildren",
    9: "sync",
    11: "ping",
    12: "getChildren2",
    13: "check",
    14: "multi",
    15: "create2",
    19: "createContainer",
    21: "createTTL",
    -11: "closeSession",
}
CREATES = {"create", "create2", "createContainer", "createTTL"}
MAX_FRAME = 64 << 20


def read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
    return bytes(buf)


def read_frame(sock: socket.socket) -> bytes:
    """One length-prefixed jute frame, prefix included."""
    head = read_exact(sock, 4)
    (n,) = struct.unpack(">i", head)
    if not 0 <= n <= MAX_FRAME:
        raise ConnectionError(f"bad frame length {n}")
    return head + read_exact(sock, n)


def request_header(frame: bytes) -> tuple[int, int]:
    """(xid, opcode) of a request frame after the handshake."""
    return struct.unpack(">ii", frame[4:12])


def create_path(frame: bytes) -> str | None:
    """The path of a create request (the body starts with it as a jute string)."""
    try:
        (n,) = struct.unpack(">i", frame[12:16])
        return frame[16 : 16 + n].decode(errors="replace")
    except struct.error:
        return None


def ping_reply(zxid: int) -> bytes:
    """A reply to a ping, as the server sends it: xid -2, the last zxid, no error."""
    body = struct.pack(">iqi", PING_XID, zxid, 0)
    return struct.pack(">i", len(body)) + body


@dataclass
class Plan:
    """The faults armed right now (all off by default)."""

    lose_create_reply: int | None = None  # the n-th create (counted from arming) loses its reply
    delay_s: float = 0.0
    delay_op: str | None = None  # None: any reply
    drop_pings: bool = False
    close_after: tuple[str, int] | None = None  # (op, n)
    drop_request: tuple[str, int] | None = None  # (op, n)
    hold_session: bool = False  # the client is cut off; its session is kept alive by the proxy
    counts: dict[str, int] = field(default_factory=dict)  # ops seen since arming, by name

    def seen(self, op: str) -> int:
        self.counts[op] = self.counts.get(op, 0) + 1
        return self.counts[op]


class Link:
    """One client connection and its server connection, pumped by two threads."""

    def __init__(
        self, proxy: ZkProxy, client: socket.socket, server: socket.socket, server_name: str
    ) -> None:
        self.proxy, self.client, self.server, self.server_name = proxy, client, server, server_name
        self.pending: dict[int, tuple[str, str | None, int]] = {}  # xid -> (op, path, n-th)
        self.lock = threading.Lock()  # the client socket is written by both pumps
        self.last_zxid = 0
        self.closed = threading.Event()
        self.held = threading.Event()  # hold-session: the client side is gone, the server's stays
        self.server_lock = threading.Lock()  # the server socket is written by pump and keepalive
        self.session: tuple[int, int] | None = None  # (session id, timeout ms) once connected

    def start(self) -> None:
        for target, side in ((self.upstream, "client"), (self.downstream, "server")):
            threading.Thread(target=self._guard(target, side), daemon=True).start()

    def _guard(self, pump: Callable[[], None], side: str) -> Callable[[], None]:
        def run() -> None:
            try:
                pump()
            except (OSError, ConnectionError):
                pass
            finally:
                self.close(side)

        return run

    def close(self, side: str = "both") -> None:
        """Close the link; while it is held, the client side's end closes only the client."""
        if self.held.is_set() and side == "client":
            _shut(self.client)
            return
        if not self.closed.is_set():
            self.closed.set()
            self.held.clear()
            for s in (self.client, self.server):
                _shut(s)
            self.proxy.forget(self)

    def hold(self) -> None:
        """Cut the client off and keep its session alive on the servers with our own pings."""
        if self.closed.is_set() or self.held.is_set():
            return
        self.held.set()
        _shut(self.client)
        sid, timeout_ms = self.session or (0, 0)
        self.proxy.note("session-held", session_id=f"0x{sid:x}", server=self.server_name)
        threading.Thread(target=self._keepalive, args=(timeout_ms,), daemon=True).start()

    def _keepalive(self, timeout_ms: int) -> None:
        # A third of the session timeout, as a client pings an idle connection.
        every = min(1.0, max(0.1, timeout_ms / 3000)) if timeout_ms else 0.5
        try:
            while self.held.is_set() and not self.closed.is_set():
                with self.server_lock:
                    self.server.sendall(PING)
                time.sleep(every)
        except OSError:
            self.close()

    def to_client(self, data: bytes) -> None:
        with self.lock:
            self.client.sendall(data)

    def upstream(self) -> None:
        self.server.sendall(read_frame(self.client))  # ConnectRequest
        while True:
            frame = read_frame(self.client)
            xid, opcode = request_header(frame)
            op = OPCODES.get(opcode, str(opcode))
            plan = self.proxy.plan
            if xid == PING_XID and plan.drop_pings:
                self.to_client(ping_reply(self.last_zxid))
                self.proxy.note("ping-dropped", server=self.server_name)
                continue
            kind = "create" if op in CREATES else op
            with self.proxy.plan_lock:
                nth = plan.seen(kind)
                drop = plan.drop_request == (kind, nth)
                if drop:
                    plan.drop_request = None
            if drop:
                self.proxy.note("request-dropped", op=op, n=nth, xid=xid, server=self.server_name)
                return  # closes both sides: the server never saw it
            self.pending[xid] = (op, create_path(frame) if op in CREATES else None, nth)
            with self.server_lock:
                self.server.sendall(frame)

    def downstream(self) -> None:
        frame = read_frame(self.server)  # ConnectResponse: protocol version, timeout, session id
        if len(frame) >= 20:
            _, timeout_ms, sid = struct.unpack(">iiq", frame[4:20])
            self.session = (sid, timeout_ms)
        self.to_client(frame)
        while True:
            frame = read_frame(self.server)
            if self.held.is_set():
                continue  # replies to our keepalive pings (and whatever was in flight)
            xid, zxid = struct.unpack(">iq", frame[4:16])
            if zxid > 0:
                self.last_zxid = zxid
            op, path, nth = self.pending.pop(xid, ("?", None, 0))
            plan = self.proxy.plan
            kind = "create" if op in CREATES else op
            if kind == "create" and plan.lose_create_reply == nth:
                plan.lose_create_reply = None
                self.proxy.note(
                    "create-reply-lost", path=path, xid=xid, zxid=zxid, server=self.server_name
                )
                return  # closes both sides: the server applied it, the client never hears
            if plan.delay_s > 0 and xid >= 0 and plan.delay_op in (None, op):
                d, plan.delay_s = plan.delay_s, 0.0
                self.proxy.note("reply-delayed", op=op, seconds=d, xid=xid)
                time.sleep(d)
            try:
                self.to_client(frame)
            except OSError:
                if self.held.is_set():
                    continue
                raise
            if plan.close_after and plan.close_after == (kind, nth):
                plan.close_after = None
                self.proxy.note("closed-after", op=op, n=nth, server=self.server_name)
                return


class ZkProxy:
    """Listens on 127.0.0.1:<base+i> for server i; `connect_string()` is what the client uses."""

    def __init__(
        self,
        servers: list[str],
        base_port: int = 21810,
        events: Callable[[dict[str, Any]], None] = lambda e: None,
        listen_host: str = "127.0.0.1",
    ) -> None:
        self.servers = servers
        self.base_port = base_port
        self.listen_host = listen_host
        self.events = events
        self.plan = Plan()
        self.plan_lock = threading.Lock()
        self.links: set[Link] = set()
        self.links_lock = threading.Lock()
        self.listeners: list[socket.socket] = []

    def connect_string(self) -> str:
        return ",".join(f"{self.listen_host}:{p}" for p in self.ports())

    def ports(self) -> list[int]:
        return [s.getsockname()[1] for s in self.listeners]

    def start(self) -> ZkProxy:
        for i, server in enumerate(self.servers):
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((self.listen_host, self.base_port + i if self.base_port else 0))
            ls.listen(16)
            self.listeners.append(ls)
            threading.Thread(target=self._accept, args=(ls, server), daemon=True).start()
        return self

    def _accept(self, ls: socket.socket, server: str) -> None:
        host, _, port = server.rpartition(":")
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            if self.plan.hold_session:  # cut off: the client cannot reach any server
                self.note("connection-refused", server=server)
                c.close()
                continue
            try:
                s = socket.create_connection((host, int(port)), timeout=5)
                s.settimeout(None)
            except OSError:
                c.close()  # the server is down: the client tries the next one, as it would
                continue
            for sock in (c, s):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = Link(self, c, s, server)
            with self.links_lock:
                self.links.add(link)
            link.start()

    def forget(self, link: Link) -> None:
        with self.links_lock:
            self.links.discard(link)

    def note(self, what: str, **detail: Any) -> None:
        self.events({"event": what, **detail, "at_ns": time.monotonic_ns()})

    def arm(self, command: dict[str, Any]) -> dict[str, Any]:
        """Apply one control command; returns the plan as armed (or an error)."""
        with self.plan_lock:
            p = self.plan
            f = command.get("fault")
            if f == "lose-create-reply":
                p.counts.clear()
                p.lose_create_reply = int(command.get("n", 1))
            elif f == "delay-reply":
                p.delay_s, p.delay_op = float(command["seconds"]), command.get("op")
            elif f == "drop-pings":
                p.drop_pings = bool(command.get("on", True))
            elif f == "close-after":
                p.counts.clear()
                p.close_after = (str(command["op"]), int(command.get("n", 1)))
            elif f == "drop-request":
                p.counts.clear()
                p.drop_request = (str(command["op"]), int(command.get("n", 1)))
            elif f == "hold-session":
                p.hold_session = True
                with self.links_lock:
                    links = list(self.links)
                for link in links:
                    link.hold()
            elif f == "heal":
                self.plan = Plan()
                with self.links_lock:
                    held = [link for link in self.links if link.held.is_set()]
                for link in held:
                    self.note("session-released", server=link.server_name)
                    link.close()
            else:
                return {"ok": False, "error": f"unknown proxy fault {f!r}"}
            return {"ok": True, "plan": repr(self.plan)}

    def serve_control(
        self, host: str = "0.0.0.0", port: int = CONTROL_PORT, token: str = ""
    ) -> None:
        """Accept control connections: one JSON command per line, one JSON answer per line.
        `token`: a command must carry it (`"token"`), or it is refused. The program under test
        shares this proxy's network namespace, so it can reach the port; the token, which only
        the nemesis and the recorder know, keeps it from arming faults on itself."""
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port))
        ls.listen(4)
        self.listeners_control = ls

        def handle(c: socket.socket) -> None:
            with c, c.makefile("rwb") as fh:
                for line in fh:
                    try:
                        cmd = json.loads(line)
                        if cmd.pop("token", "") != token:
                            answer = {"ok": False, "error": "not the nemesis (no or wrong token)"}
                        else:
                            answer = self.arm(cmd)
                    except (ValueError, KeyError, TypeError, AttributeError) as e:
                        answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                    fh.write((json.dumps(answer) + "\n").encode())
                    fh.flush()

        def accept() -> None:
            while True:
                try:
                    c, _ = ls.accept()
                except OSError:
                    return
                threading.Thread(target=handle, args=(c,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()

    def stop(self) -> None:
        for ls in [*self.listeners, getattr(self, "listeners_control", None)]:
            if ls is not None:
                ls.close()
        with self.links_lock:
            links = list(self.links)
        for link in links:
            link.close()


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


def command(
    address: str, cmd: dict[str, Any], timeout_s: float = 5.0, token: str = ""
) -> dict[str, Any]:
    """Send one control command to the proxy at host[:port] (host side, for the nemesis)."""
    host, _, port = address.partition(":")
    with socket.create_connection((host, int(port or CONTROL_PORT)), timeout=timeout_s) as s:
        s.sendall((json.dumps({**cmd, "token": token}) + "\n").encode())
        return json.loads(s.makefile("rb").readline())
