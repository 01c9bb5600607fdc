#!/usr/bin/env python3
"""A client program for zkjepsen on memcached, written from docs/client-protocol.md alone: copy
it, put YOUR lock in `YourLock`, run

    zkjepsen client check --backend memcached --in-image "python3 memcached_lock.py" --client-dir .
    zkjepsen test --backend memcached --client-cmd "python3 memcached_lock.py" --client-dir . \
        --workload lock --nemesis pause-client --clients 5

It needs only pymemcache (the client image has it). As shipped the lock is memcached's wiki's
`add` with an expiry, released by `delete`: a holder paused past the expiry still believes it
holds, and its late `delete` removes the next holder's key.

The protected resource is the item `zkjepsen:res:<path>`, JSON {"data", "version", "top"}, written
by compare-and-set (`gets`, then `cas`); a fenced write also refuses a token below `top`. The
token is `incr` of `zkjepsen:fence:<lock path>` (memcached keeps it in memory only: a restarted
server starts it again).
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import uuid

from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheError

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()
ERRORS = (MemcacheError, OSError)  # a lost connection or a timeout: the outcome is unknown


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


# ---- YOUR LOCK GOES HERE -------------------------------------------------------------------
class YourLock:
    """acquire(timeout_s) -> True/False; release(); holding() -> the application's belief."""

    def __init__(self, mc: Client, key: str, ttl_s: int) -> None:
        self.mc, self.key, self.ttl_s = mc, key, ttl_s
        self.me = uuid.uuid4().hex
        self.held = False

    def acquire(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.mc.add(self.key, self.me, expire=self.ttl_s, noreply=False):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        self.held = True
        return True

    def release(self) -> None:
        self.held = False
        self.mc.delete(self.key, noreply=False)

    def holding(self) -> bool:
        return self.held


# ---- the protocol ---------------------------------------------------------------------------
class Driver:
    def __init__(self) -> None:
        self.mc: Client | None = None
        self.lock: YourLock | None = None
        self.token: int | None = None

    def init(self, req: dict) -> tuple[str, object, str | None]:
        host, _, port = req["servers"].split(",")[0].rpartition(":")
        params = req.get("params") or {}
        ttl = float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000)
        self.ttl_s = max(1, math.ceil(ttl))  # memcached's expiry is in whole seconds
        self.lock_path = req["lock_path"]
        self.mc = Client((host, int(port)), connect_timeout=2, timeout=2, default_noreply=False)
        self.mc.version()
        return (
            "ok",
            {"session_id": f"memcached-{uuid.uuid4().hex[:8]}", "timeout_ms": self.ttl_s * 1000},
            None,
        )

    def acquire(self, req: dict) -> tuple[str, object, str | None]:
        if self.lock is None:
            self.lock = YourLock(self.mc, f"mylock:{self.lock_path}", self.ttl_s)
        try:
            if not self.lock.acquire(req["timeout_ms"] / 1000):
                return "fail", None, "timeout"
            self.token = self.next_token()
        except ERRORS as e:
            self.lock, self.token = None, None  # unknown: drop the lock object
            return "info", None, type(e).__name__
        return "ok", {"token": self.token, "node": f"{self.lock_path}/{self.token:010d}"}, None

    def next_token(self) -> int:
        key = f"zkjepsen:fence:{self.lock_path}"
        n = self.mc.incr(key, 1, noreply=False)
        if n is None:  # no counter yet: make it at 0 (a racing maker's add loses harmlessly)
            self.mc.add(key, "0", noreply=False)
            n = self.mc.incr(key, 1, noreply=False)
        return int(n)

    def release(self, req: dict) -> tuple[str, object, str | None]:
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except ERRORS as e:
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict) -> tuple[str, object, str | None]:
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict) -> tuple[str, object, str | None]:
        try:
            raw = self.mc.get(f"zkjepsen:res:{req['path']}")
        except ERRORS as e:
            return "fail", None, type(e).__name__  # a read changes nothing: fail is safe
        body = json.loads(raw) if raw else {"data": None, "version": 0}
        return "ok", {"data": body["data"], "version": int(body["version"])}, None

    def write(self, req: dict) -> tuple[str, object, str | None]:
        fenced = bool(req.get("fenced"))
        if fenced and self.token is None:
            return "fail", None, "Fenced"
        key, version = f"zkjepsen:res:{req['path']}", req.get("version", -1)
        try:
            for _ in range(50):  # a cas that lost to another writer: read again
                raw, unique = self.mc.gets(key)
                now = json.loads(raw) if raw else {"data": "", "version": 0, "top": 0}
                if version != -1 and version != now["version"]:
                    return "fail", None, "BadVersion"
                top = now.get("top") or 0
                if fenced and self.token < top:
                    return "fail", None, "Fenced"
                new = {"data": req["data"], "version": now["version"] + 1}
                new["top"] = self.token if fenced else top
                value = json.dumps(new)
                if raw is None:
                    done = self.mc.add(key, value, noreply=False)
                else:
                    done = self.mc.cas(key, value, unique, noreply=False)
                if done:
                    return "ok", {"version": new["version"]}, None
        except ERRORS as e:
            return "info", None, type(e).__name__  # the answer was lost: it may have landed
        return "fail", None, "BadVersion"  # it kept changing: nothing of ours was written

    def close(self, req: dict) -> tuple[str, object, str | None]:
        return "ok", None, None


def main() -> None:
    d = Driver()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            type_, value, error = getattr(d, req["op"])(req)
        except Exception as e:  # noqa: BLE001 - anything unclassified: it may have happened
            type_, value, error = "info", None, f"{type(e).__name__}: {e}"
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        send({**msg, "error": error} if error else msg)
        if req["op"] == "close":
            return


if __name__ == "__main__":
    main()
