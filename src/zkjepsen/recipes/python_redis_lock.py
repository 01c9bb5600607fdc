"""`python-redis-lock`: the PyPI `python-redis-lock` library's (4.0.1) `Lock` as shipped, with
its auto-renewal (`auto_renewal=True`, `expire` = `lock_ttl_s`, default the session timeout).

Source: https://github.com/ionelmc/python-redis-lock, `src/redis_lock/__init__.py`. `acquire`
is `SET lock:<name> <id> NX EX expire`; a waiter blocks on `BLPOP lock-signal:<name>` (the
release pushes to it) for at most its timeout, then tries again. With auto-renewal a daemon
thread runs `extend()` every 2/3 of `expire` (a Lua script: `EXPIRE` only if the key still
holds our id). `release` stops that thread, then deletes the key only if it holds our id.

Expected flaw (its issues #85 and #91: "locks expire while the task runs"): renewal is a thread
of the holder's own process. A holder paused (GC, VM stall, SIGSTOP) or cut off past `expire`
renews nothing; the key expires and another client acquires. When the holder wakes up its
renewal thread's `extend()` raises `NotAcquired` and the thread dies, but nothing tells the
application: `Lock` keeps no belief it would revoke, so the holder still believes it holds (a
split holder) and finishes its writes. Without faults the lock holds: the renewal keeps every
hold alive. `expire` is whole seconds (the library takes `int(expire)`).

The lock's Redis client is the library's own (`StrictRedis`) with a socket timeout longer than
the acquire's wait, since `BLPOP` blocks on the socket. The token is `INCR` of a per-lock
counter drawn right after the acquisition (the library has none), as in `redis-set-px`.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import RedisRecipe, Token, param, service_token


def blocking_client(session: Any, socket_timeout: float) -> Any:
    """A client of the session's master whose socket waits `socket_timeout` (a blocking
    command's wait): a fresh `redis.Redis`, or the Sentinel's current master."""
    # here, not at the top: a service's client library, loaded by runs of that service
    import redis

    if session.sentinel is not None:
        return session.sentinel.master_for(session.master_name, socket_timeout=socket_timeout)
    host, port = session.addrs[0]
    return redis.Redis(
        host=host, port=port, socket_timeout=socket_timeout, socket_connect_timeout=2
    )


class PythonRedisLock(RedisRecipe):
    def setup(self) -> None:
        super().setup()
        self.expire = max(1, round(self.ttl_ms / 1000))
        wait = param(self.params, "acquire_timeout_s", 10.0)
        self.client = blocking_client(self.session, wait + 5.0)
        self.lock: Any = None
        self.held = False

    def acquire(self, timeout: float | None) -> Token | None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import redis_lock

        # A fresh Lock per attempt, as `with redis_lock.Lock(conn, name, ...)` makes one.
        self.lock = redis_lock.Lock(self.client, self.key, expire=self.expire, auto_renewal=True)
        # whole seconds: the library's int(timeout) makes 0 "wait forever"
        wait = max(1, round(timeout)) if timeout is not None else None
        if not self.lock.acquire(blocking=True, timeout=wait):
            self.lock = None
            return None
        self.held = True
        return service_token(self.path, self.session.next_token(self.path))

    def release(self) -> None:
        lock, self.lock, self.held = self.lock, None, False
        if lock is not None:
            lock.release()  # NotAcquired when the key expired under us: the outcome is info

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        lock, self.lock = self.lock, None
        if lock is not None:
            lock._stop_lock_renewer()  # the library's own way to stop its renewal thread
        try:
            self.client.close()
        except Exception:  # noqa: BLE001
            pass
