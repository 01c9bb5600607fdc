"""ZooKeeper's four-letter-word commands over a plain socket (`srvr`, `mntr`, `ruok`, ...)."""

from __future__ import annotations

import socket


def four_letter(host: str, port: int, word: str, timeout: float = 0.5) -> str | None:
    """Send one four-letter word; the answer, or None if the server does not answer in time."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None
