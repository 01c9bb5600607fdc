"""The zoo's Redis half: the client wire protocol (docs/client-protocol.md, as
docs/templates/redis_lock.py speaks it) around a lock, and that lock written correctly, so
that each zoo program changes ONE thing. Needs only redis-py (the Redis client image has it).

The lock: `SET key <random> NX PX ttl` and a fencing token from the same script (an INCR
done atomically with the grant, so a token's order is the grant's order); a watchdog extends
the key every third of its TTL while it is still ours; released by a compare-and-delete
script; the holder's belief ends when its own clock says the TTL, counted from before it asked
for the grant or the last refresh the server confirmed, has run out (Redlock's validity time).
A write with `fenced` goes through a script that refuses a token below the highest the
resource has seen.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from typing import Any

import redis

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()

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
ACQUIRE_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
"""
REFRESH_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class TtlLock:
    """acquire(timeout_s) -> the fencing token or None; release(); holding()."""

    def __init__(self, r: redis.Redis, key: str, ttl_ms: int) -> None:
        self.r, self.key, self.ttl_ms = r, key, ttl_ms
        self.fence_key = key + ":fence"
        self.me = uuid.uuid4().hex
        self.valid_until = 0.0  # monotonic: when our lease runs out, by our own clock
        self.stop = threading.Event()  # ends the watchdog of the current hold

    def try_once(self) -> int | None:
        token = int(self.r.eval(ACQUIRE_LUA, 2, self.key, self.fence_key, self.me, self.ttl_ms))
        return token or None

    def acquire(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while True:
            asked = time.monotonic()  # the lease runs from before we asked
            token = self.try_once()
            if token is not None:
                self.valid_until = asked + self.ttl_ms / 1000
                self.stop = threading.Event()
                threading.Thread(target=self.watchdog, args=(self.stop,), daemon=True).start()
                return token
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def watchdog(self, stop: threading.Event) -> None:
        """Extends our key every third of its TTL while it is still ours (Redisson's
        watchdog); the belief is extended only by a refresh the server confirmed."""
        while not stop.wait(self.ttl_ms / 3000):
            asked = time.monotonic()
            try:
                ok = self.r.eval(REFRESH_LUA, 1, self.key, self.me, self.ttl_ms)
            except redis.RedisError:
                ok = 0
            if ok and not stop.is_set():
                self.valid_until = asked + self.ttl_ms / 1000

    def release(self) -> None:
        self.stop.set()
        self.valid_until = 0.0
        self.r.eval(RELEASE_LUA, 1, self.key, self.me)

    def holding(self) -> bool:
        return time.monotonic() < self.valid_until


class Driver:
    def __init__(self, lock_class: type[TtlLock]) -> None:
        self.lock_class = lock_class
        self.r: redis.Redis | None = None
        self.lock: TtlLock | None = None
        self.token: int | None = None

    def init(self, req: dict) -> tuple[str, Any, str | None]:
        first = req["servers"].removeprefix("redis://").split(",")[0]
        host, _, port = first.rpartition(":")
        params = req.get("params") or {}
        ttl_s = float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000)
        self.ttl_ms = int(ttl_s * 1000)
        self.lock_path = req["lock_path"]
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2)
        self.r.ping()
        sid = f"redis-{uuid.uuid4().hex[:8]}"
        return "ok", {"session_id": sid, "timeout_ms": self.ttl_ms}, None

    def acquire(self, req: dict) -> tuple[str, Any, str | None]:
        assert self.r is not None
        if self.lock is None:
            self.lock = self.lock_class(self.r, f"zoo:lock:{self.lock_path}", self.ttl_ms)
        try:
            token = self.lock.acquire(req["timeout_ms"] / 1000)
        except redis.RedisError as e:
            self.lock, self.token = None, None  # unknown: drop the lock object
            return "info", None, type(e).__name__
        if token is None:
            return "fail", None, "timeout"
        self.token = token
        return "ok", {"token": token, "node": f"{self.lock_path}/{token:010d}"}, None

    def release(self, req: dict) -> tuple[str, Any, str | None]:
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except redis.RedisError as e:
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict) -> tuple[str, Any, str | None]:
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict) -> tuple[str, Any, str | None]:
        assert self.r is not None
        try:
            data, version = self.r.hmget(f"zkjepsen:res:{req['path']}", "data", "version")
        except redis.RedisError as e:
            return "fail", None, type(e).__name__  # a read changes nothing: fail is safe
        return "ok", {"data": data.decode() if data else None, "version": int(version or 0)}, None

    def write(self, req: dict) -> tuple[str, Any, str | None]:
        assert self.r is not None
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

    def close(self, req: dict) -> tuple[str, Any, str | None]:
        return "ok", None, None


def serve(lock_class: type[TtlLock]) -> None:
    """The protocol loop: one request a line on stdin, one answer a line on stdout."""
    d = Driver(lock_class)
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
    serve(TtlLock)  # the lock as written: the Redis control
