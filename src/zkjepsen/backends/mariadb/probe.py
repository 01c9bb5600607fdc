"""Is a MariaDB server ready for clients? Asked over the wire with the stdlib only (the host
needs no driver), as backends/postgres/probe.py asks PostgreSQL.

mariadbd opens its TCP port only once InnoDB has recovered and the server accepts clients;
then every connection is greeted with an initial handshake packet (protocol version 10). A
server that refuses the client instead (too many connections, a blocked host) greets it with an
error packet (0xFF): not ready. No account is needed, and the probe sends nothing: the server
ends the unauthenticated connection on its own.
"""

from __future__ import annotations

import socket

HANDSHAKE_V10 = 10
ERROR_PACKET = 0xFF


def greeting(host: str, port: int = 3306, timeout: float = 0.5) -> bytes | None:
    """The payload of the server's first packet (None: no server, or no whole packet)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:3], "little"):
                chunk = s.recv(4096)
                if not chunk:
                    return None
                buf += chunk
            return buf[4 : 4 + int.from_bytes(buf[:3], "little")]
    except OSError:
        return None


def ready(host: str, port: int = 3306, timeout: float = 0.5) -> bool:
    """True when the server greets a new client with a protocol-10 handshake."""
    payload = greeting(host, port, timeout)
    return payload is not None and payload[:1] == bytes([HANDSHAKE_V10])


def server_version(host: str, port: int = 3306, timeout: float = 0.5) -> str | None:
    """The server's version from its handshake ("10.11.6-MariaDB-0+deb12u1"), if any: MariaDB
    sends it after "5.5.5-", a prefix for clients that read the first number as MySQL's."""
    payload = greeting(host, port, timeout)
    if not payload or payload[0] != HANDSHAKE_V10:
        return None
    return payload[1:].split(b"\0", 1)[0].decode(errors="replace").removeprefix("5.5.5-")
