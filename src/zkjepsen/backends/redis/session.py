"""A client session with Redis (the `redis` library), shaped for the workloads (see
client/services/__init__.py): the protected resource, fencing tokens, and the servers the
Redis lock recipes (recipes/redis_*.py) talk to.

Connect strings (what `RedisBackend.connect_string()` gives):
- `redis://IP:6379`: one master;
- `redis://IP1:6379,...,IP5:6379`: independent masters (Redlock); the resource and the token
  counter live on the first;
- `redis-sentinel://NAME@IP:26379,...`: Sentinels; the master is whoever they name now, asked
  again after a connection error (redis.sentinel), as applications do.

No command is retried by the library (`Retry(NoBackoff(), 0)`): a command whose answer was lost
is an unknown outcome, which the driver reports as such, never a silent second attempt.
Every command has a socket timeout, so a command under a partition ends (as unknown).
Runs inside client containers (and on the host for setup and the final read).
"""

from __future__ import annotations

import os
import time
from typing import Any

from kazoo.exceptions import NodeExistsError

from zkjepsen.backends.session import BadVersion, Fenced, Stat, close_quietly

OP_TIMEOUT_S = float(os.environ.get("ZKJEPSEN_REDIS_OP_TIMEOUT_S", "2.0"))
RESOURCE_PREFIX = "zkjepsen:res:"
LOCK_PREFIX = "zkjepsen:lock:"
FENCE_PREFIX = "zkjepsen:fence:"

# KEYS[1] the resource hash {data, version, top}; ARGV: data, expected version (-1: any),
# token ("" none), fenced ("1"/"0"). Returns {0, new version} | {-1, version} (another
# version) | {-2, top} (fenced: a lower token than the highest accepted).
WRITE_LUA = """
local v = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[2] ~= '-1' and tonumber(ARGV[2]) ~= v then return {-1, v} end
if ARGV[4] == '1' then
  local top = tonumber(redis.call('HGET', KEYS[1], 'top') or '0')
  if ARGV[3] == '' or tonumber(ARGV[3]) < top then return {-2, top} end
  redis.call('HSET', KEYS[1], 'top', ARGV[3])
end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'version', v + 1)
return {0, v + 1}
"""


def parse_hosts(hosts: str) -> tuple[str, str | None, list[tuple[str, int]]]:
    """(kind "redis" | "redis-sentinel", master name or None, [(ip, port)])."""
    scheme, sep, rest = hosts.partition("://")
    if not sep or scheme not in ("redis", "redis-sentinel"):
        raise ValueError(f"not a Redis connect string: {hosts!r}")
    name = None
    if scheme == "redis-sentinel":
        name, _, rest = rest.partition("@")
    addrs = []
    for part in rest.split(","):
        host, _, port = part.strip().rpartition(":")
        addrs.append((host, int(port)))
    return scheme, name, addrs


def _options() -> dict[str, Any]:
    # here, not at the top: a service's client library, loaded by runs of that service
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return dict(
        socket_timeout=OP_TIMEOUT_S,
        socket_connect_timeout=OP_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),  # no retries, on timeouts either
        decode_responses=False,
    )


class RedisSession:
    """`RedisSession(hosts, timeout=lock TTL seconds)`: kazoo-shaped (start/stop/get/...)."""

    def __init__(self, hosts: str, timeout: float = 4.0, **_: Any) -> None:
        self.hosts = hosts
        self.timeout = timeout  # the lock's TTL unless lock_ttl_s says otherwise
        self.kind, self.master_name, self.addrs = parse_hosts(hosts)
        self.masters: list[Any] = []  # one client per independent master (Redlock)
        self.redis: Any = None  # where the resource, the tokens and a one-master lock live
        self.sentinel: Any = None
        self._write: Any = None

    # -- lifecycle (kazoo-shaped) -----------------------------------------------------------
    def start(self, timeout: float = 15) -> None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import redis

        if self.kind == "redis-sentinel":
            # here, not at the top: a service's client library, loaded by runs of that service
            from redis.sentinel import Sentinel

            self.sentinel = Sentinel(self.addrs, sentinel_kwargs=_options(), **_options())
            self.redis = self.sentinel.master_for(self.master_name, **_options())
            self.masters = [self.redis]
        else:
            self.masters = [redis.Redis(host=h, port=p, **_options()) for h, p in self.addrs]
            self.redis = self.masters[0]
        self._write = self.redis.register_script(WRITE_LUA)
        deadline = time.monotonic() + timeout
        while True:  # as kazoo's start(timeout): return once the server answers
            try:
                self.redis.ping()
                return
            except redis.RedisError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        for m in self.masters:
            close_quietly(m)

    def close(self) -> None:
        self.masters, self.redis = [], None

    @property
    def session_id(self) -> str:
        """No sessions in Redis: name the connection (the history's `session` event)."""
        return f"redis-{os.getpid()}-{id(self):x}"

    # -- the protected resource -------------------------------------------------------------
    def ensure_path(self, path: str) -> None:
        pass  # Redis keys need no parents

    def sync(self, path: str) -> None:
        pass  # reads go to the master that takes the writes

    def create(self, path: str, value: bytes = b"") -> str:

        key = RESOURCE_PREFIX + path
        if not self.redis.hsetnx(key, "data", value):
            raise NodeExistsError()
        self.redis.hsetnx(key, "version", 0)
        return path

    def get(self, path: str) -> tuple[bytes | None, Stat]:
        data, version = self.redis.hmget(RESOURCE_PREFIX + path, "data", "version")
        return data, Stat(int(version or 0))

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return self._run(path, data, version, None, fenced=False)

    def fenced_set(self, path: str, data: bytes, version: int, token: int | None) -> Stat:
        return self._run(path, data, version, token, fenced=True)

    def _run(self, path: str, data: bytes, version: int, token: int | None, fenced: bool) -> Stat:
        code, n = self._write(
            keys=[RESOURCE_PREFIX + path],
            args=[data, version, "" if token is None else token, "1" if fenced else "0"],
        )
        if code == -1:
            raise BadVersion(f"version {n}, expected {version}")
        if code == -2:
            raise Fenced(f"token {token} < highest accepted {n}")
        return Stat(int(n))

    # -- for the lock recipes ---------------------------------------------------------------
    def next_token(self, lock_path: str) -> int:
        """The fencing token of an acquisition: INCR of the lock's own counter."""
        return int(self.redis.incr(FENCE_PREFIX + lock_path))

    @staticmethod
    def lock_key(lock_path: str) -> str:
        return LOCK_PREFIX + lock_path

    # -- who holds, as the service sees it (run/observer.py) ------------------------------------
    def lock_holders(self) -> list[str]:
        """Every key on the masters that is not the runner's (the resource, the token
        counters): a lock key of whatever recipe or program. Redis keeps no owner with a key a
        program chose, so this says whether a lock is held, not whose. A majority of the
        masters must answer (Redlock: a grant lives on a majority, so one of them shows it);
        fewer raise (the reading failed)."""
        ours = (RESOURCE_PREFIX.encode(), FENCE_PREFIX.encode())
        keys: set[str] = set()
        answered = 0
        for m in self.masters:
            try:
                found = m.keys("*")
            except Exception:  # noqa: BLE001 - down, paused, cut off: this master did not answer
                continue
            answered += 1
            keys.update(k.decode(errors="replace") for k in found if not k.startswith(ours))
        if 2 * answered <= len(self.masters):
            raise RuntimeError(f"{answered} of {len(self.masters)} masters answered")
        return sorted(keys)
