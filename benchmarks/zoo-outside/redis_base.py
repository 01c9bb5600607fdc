"""The protocol side of the Redis programs of this outside zoo, after
docs/templates/redis_lock.py (written from docs/client-protocol.md). A program supplies a lock
class and calls `run(LockClass)`.

The lock class: `__init__(r, key, ttl_ms)`, `acquire(timeout_s) -> bool`, `release()`,
`holding() -> bool`, `cleanup()` (give the lock up, best effort).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import uuid

import redis

OUT = sys.stdout.buffer
sys.stdout = sys.stderr
WRITE_LOCK = threading.Lock()
log = logging.getLogger("zoo-outside")

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


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class Driver:
    def __init__(self, lock_cls) -> None:
        self.lock_cls = lock_cls
        self.r: redis.Redis | None = None
        self.lock = None
        self.token: int | None = None

    def init(self, req: dict):
        first = req["servers"].removeprefix("redis://").split(",")[0]
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

    def drop(self) -> None:
        lock, self.lock, self.token = self.lock, None, None
        if lock is not None:
            try:
                lock.cleanup()
            except Exception:  # noqa: BLE001
                log.exception("cleanup")

    def acquire(self, req: dict):
        if self.lock is None:
            self.lock = self.lock_cls(self.r, f"outside:{self.lock_path}", self.ttl_ms)
        try:
            if not self.lock.acquire(req["timeout_ms"] / 1000):
                return "fail", None, "timeout"
            self.token = int(self.r.incr(f"zkjepsen:fence:{self.lock_path}"))
        except Exception as e:  # noqa: BLE001
            log.warning("acquire: %r", e)
            self.drop()
            return "info", None, type(e).__name__
        return "ok", {"token": self.token, "node": f"{self.lock_path}/{self.token:010d}"}, None

    def release(self, req: dict):
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except Exception as e:  # noqa: BLE001
            if lock is not None:
                lock.cleanup()
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict):
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict):
        try:
            data, version = self.r.hmget(f"zkjepsen:res:{req['path']}", "data", "version")
        except Exception as e:  # noqa: BLE001
            return "fail", None, type(e).__name__
        return "ok", {"data": data.decode() if data else None, "version": int(version or 0)}, None

    def write(self, req: dict):
        fenced = bool(req.get("fenced"))
        if fenced and (self.token is None or not (self.lock and self.lock.holding())):
            return "fail", None, "Fenced"
        args = [req["data"], req.get("version", -1), self.token or 0, "1" if fenced else "0"]
        try:
            code, n = self.r.eval(WRITE_LUA, 1, f"zkjepsen:res:{req['path']}", *args)
        except Exception as e:  # noqa: BLE001
            return "info", None, type(e).__name__
        if code == -1:
            return "fail", None, "BadVersion"
        if code == -2:
            return "fail", None, "Fenced"
        return "ok", {"version": int(n)}, None

    def close(self, req: dict):
        self.drop()
        return "ok", None, None


def run(lock_cls) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    d = Driver(lock_cls)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            type_, value, error = getattr(d, req["op"])(req)
        except Exception as e:  # noqa: BLE001
            type_, value, error = "info", None, f"{type(e).__name__}: {e}"
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        send({**msg, "error": error} if error else msg)
        if req["op"] == "close":
            return
