#!/usr/bin/env python3
"""A client program for zkjepsen on Redis, written from docs/client-protocol.md alone: copy it,
put YOUR lock in `YourLock`, run

    zkjepsen client check --backend redis --in-image "python3 redis_lock.py" --client-dir .
    zkjepsen test --backend redis --client-cmd "python3 redis_lock.py" --client-dir . \
        --workload lock --param resource=fenced --nemesis pause-client --clients 5

It needs only redis-py (the client image has it). As shipped the lock is `SET key id NX PX ttl`,
released by a compare-and-delete script: a holder paused past its TTL still believes it holds.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid

import redis

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()

# The resource's fence (client-protocol.md, Redis): refuse a token below `top`.
WRITE_LUA = """
local v = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[2] ~= '-1' and tonumber(ARGV[2]) ~= v then return {-1, v} end
if ARGV[4] == '1' then
  local top = tonumber(redis.call('HGET', KEYS[1], 'top') or '0')
  if tonumber(ARGV[3]) < top then return {-2, top} end
  redis.call('HSET', KEYS[1], 'top', ARGV[3])
end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'version', v + 1)
return {0, v + 1}
"""
RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


# ---- YOUR LOCK GOES HERE -------------------------------------------------------------------
class YourLock:
    """acquire(timeout_s) -> True/False; release(); holding() -> the application's belief."""

    def __init__(self, r: redis.Redis, key: str, ttl_ms: int) -> None:
        self.r, self.key, self.ttl_ms = r, key, ttl_ms
        self.me = uuid.uuid4().hex
        self.held = False

    def acquire(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.r.set(self.key, self.me, nx=True, px=self.ttl_ms):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        self.held = True
        return True

    def release(self) -> None:
        self.held = False
        self.r.eval(RELEASE_LUA, 1, self.key, self.me)

    def holding(self) -> bool:
        return self.held


# ---- the protocol ---------------------------------------------------------------------------
class Driver:
    def __init__(self) -> None:
        self.r: redis.Redis | None = None
        self.lock: YourLock | None = None
        self.token: int | None = None

    def init(self, req: dict) -> tuple[str, object, str | None]:
        first = (
            req["servers"].removeprefix("redis://").split(",")[0]
        )  # one master (or Redlock's first)
        host, _, port = first.rpartition(":")
        params = req.get("params") or {}
        self.ttl_ms = int(
            float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000) * 1000
        )
        self.lock_path = req["lock_path"]
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2)
        self.r.ping()
        return (
            "ok",
            {"session_id": f"redis-{uuid.uuid4().hex[:8]}", "timeout_ms": self.ttl_ms},
            None,
        )

    def acquire(self, req: dict) -> tuple[str, object, str | None]:
        if self.lock is None:
            self.lock = YourLock(self.r, f"mylock:{self.lock_path}", self.ttl_ms)
        try:
            if not self.lock.acquire(req["timeout_ms"] / 1000):
                return "fail", None, "timeout"
            self.token = int(self.r.incr(f"zkjepsen:fence:{self.lock_path}"))
        except redis.RedisError as e:
            self.lock, self.token = None, None  # unknown: drop the lock object
            return "info", None, type(e).__name__
        return "ok", {"token": self.token, "node": f"{self.lock_path}/{self.token:010d}"}, None

    def release(self, req: dict) -> tuple[str, object, str | None]:
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except redis.RedisError as e:
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict) -> tuple[str, object, str | None]:
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict) -> tuple[str, object, str | None]:
        try:
            data, version = self.r.hmget(f"zkjepsen:res:{req['path']}", "data", "version")
        except redis.RedisError as e:
            return "fail", None, type(e).__name__  # a read changes nothing: fail is safe
        return "ok", {"data": data.decode() if data else None, "version": int(version or 0)}, None

    def write(self, req: dict) -> tuple[str, object, str | None]:
        fenced = bool(req.get("fenced"))
        if fenced and self.token is None:
            return "fail", None, "Fenced"
        args = [req["data"], req.get("version", -1), self.token or 0, "1" if fenced else "0"]
        try:
            code, n = self.r.eval(WRITE_LUA, 1, f"zkjepsen:res:{req['path']}", *args)
        except redis.RedisError as e:
            return "info", None, type(e).__name__  # the answer was lost: it may have landed
        if code == -1:
            return "fail", None, "BadVersion"
        if code == -2:
            return "fail", None, "Fenced"
        return "ok", {"version": int(n)}, None

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
