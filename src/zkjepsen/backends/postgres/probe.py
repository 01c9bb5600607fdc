"""Is a PostgreSQL server ready for queries? Asked over the wire with the stdlib only (the host
needs no driver), the way backends/zookeeper/fourlw.py asks ZooKeeper `srvr`.

A postmaster that is still starting up (or recovering) accepts the TCP connection and then
refuses the startup message with an `E` ("the database system is starting up"), so a bare TCP
connect is not enough: we send a protocol-3 startup message and wait for `ReadyForQuery`.
"""

from __future__ import annotations

import socket
import struct

PROTOCOL_3 = 196608  # 3 << 16


def startup_message(user: str, database: str) -> bytes:
    body = struct.pack("!I", PROTOCOL_3)
    for k, v in (("user", user), ("database", database)):
        body += k.encode() + b"\0" + v.encode() + b"\0"
    body += b"\0"
    return struct.pack("!I", len(body) + 4) + body


def ready(host: str, port: int = 5432, timeout: float = 0.5, user: str = "postgres") -> bool:
    """True when the server answers a trust-authenticated startup with ReadyForQuery."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(startup_message(user, user))
            buf = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    return False
                buf += chunk
                while len(buf) >= 5:
                    kind, size = buf[:1], struct.unpack("!I", buf[1:5])[0]
                    if len(buf) < 1 + size:
                        break
                    if kind == b"E":
                        return False  # starting up, shutting down, in recovery, ...
                    if kind == b"Z":
                        s.sendall(b"X\0\0\0\4")  # Terminate: leave no half-open session
                        return True
                    buf = buf[1 + size :]
    except OSError:
        return False
