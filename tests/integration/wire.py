"""A minimal speaker of the client wire protocol (docs/client-protocol.md) for driver tests: it
starts a program (on the host, or with `docker exec` inside a container of the image), sends
requests one at a time and collects replies and events. Not the recorder: tests only."""

from __future__ import annotations

import json
import queue
import socket
import struct
import subprocess
import threading
import time
from typing import Any

PROGRAM_ENV = {"HOME": "/tmp", "TMPDIR": "/tmp"}  # client/main.py's program_environment


class WireProgram:
    def __init__(self) -> None:
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.junk: list[str] = []
        self.stderr: list[str] = []
        self._next_id = 0
        self._buf = {1: b"", 2: b""}

    # -- transports -------------------------------------------------------------------------
    @classmethod
    def on_host(cls, argv: list[str]) -> WireProgram:
        self = cls()
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._write = lambda b: (self._proc.stdin.write(b), self._proc.stdin.flush())
        threading.Thread(target=self._pump_pipe, args=(self._proc.stdout, 1), daemon=True).start()
        threading.Thread(target=self._pump_pipe, args=(self._proc.stderr, 2), daemon=True).start()
        self._stop = lambda: self._proc.kill()
        return self

    @classmethod
    def in_container(
        cls, docker_client: Any, container_id: str, argv: list[str], user: int | None = None
    ) -> WireProgram:
        """`docker exec -i` through the Engine API: the raw socket carries stdin one way and
        multiplexed stdout/stderr frames (8-byte headers) the other. `user`: as that uid (and
        group), with HOME and TMPDIR /tmp, as a run's recorder starts its program."""
        self = cls()
        api = docker_client.api
        who = {} if user is None else {"user": f"{user}:{user}", "environment": PROGRAM_ENV}
        ex = api.exec_create(container_id, argv, stdin=True, stdout=True, stderr=True, **who)
        sock = api.exec_start(ex["Id"], socket=True)
        raw: socket.socket = getattr(sock, "_sock", sock)
        self._write = raw.sendall
        threading.Thread(target=self._pump_frames, args=(raw,), daemon=True).start()
        self._stop = lambda: raw.close()
        return self

    def _pump_pipe(self, pipe: Any, stream: int) -> None:
        for line in iter(pipe.readline, b""):
            self._line(stream, line.rstrip(b"\n"))

    def _pump_frames(self, raw: socket.socket) -> None:
        data = b""
        while True:
            try:
                chunk = raw.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            data += chunk
            while len(data) >= 8:
                stream, size = data[0], struct.unpack(">I", data[4:8])[0]
                if len(data) < 8 + size:
                    break
                payload, data = data[8 : 8 + size], data[8 + size :]
                self._buf[stream] = self._buf.get(stream, b"") + payload
                *lines, self._buf[stream] = self._buf[stream].split(b"\n")
                for line in lines:
                    self._line(stream, line)

    def _line(self, stream: int, line: bytes) -> None:
        text = line.decode(errors="replace")
        if stream != 1:
            self.stderr.append(text)
            return
        try:
            msg = json.loads(text)
        except ValueError:
            self.junk.append(text)
            return
        if isinstance(msg, dict) and "event" in msg:
            msg["at"] = time.monotonic()
            self.events.append(msg)
        elif isinstance(msg, dict) and "in_reply_to" in msg:
            self.replies.put(msg)
        else:
            self.junk.append(text)

    # -- the protocol -----------------------------------------------------------------------
    def request(self, op: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        self._write((json.dumps({"id": rid, "op": op, **fields}) + "\n").encode())
        try:
            reply = self.replies.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no answer to {op} within {timeout} s; stderr: " + " | ".join(self.stderr[-10:])
            ) from None
        assert reply["in_reply_to"] == rid, reply
        return reply

    def init(
        self,
        servers: str,
        client: int,
        lock_path: str,
        session_timeout_ms: int = 4000,
        workload: str = "lock",
        **params: Any,
    ) -> dict[str, Any]:
        return self.request(
            "init",
            timeout=40,
            protocol=1,
            servers=servers,
            session_timeout_ms=session_timeout_ms,
            client=client,
            workload=workload,
            lock_path=lock_path,
            params=params,
        )

    def close(self) -> None:
        try:
            self.request("close", timeout=10)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self._stop()
