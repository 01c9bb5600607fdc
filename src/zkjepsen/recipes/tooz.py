"""`tooz`: OpenStack's coordination library (PyPI `tooz`, as `pip install
'tooz[zookeeper,etcd3gw,redis,mysql,memcached]'` installs it, with `psycopg2-binary` for its
PostgreSQL driver) and its one lock API, `coordinator.get_lock(name)`, on whichever service the
run's backend is: the service chooses the driver (`tooz_url`).

- zookeeper: `zookeeper://` (kazoo): kazoo's Lock at the workload's lock path (tooz joins the
  name like a path), on tooz's own session;
- etcd: `etcd3+http://` (etcd3gw, etcd's JSON gateway): a key put if absent with a lease of
  lock_timeout, the lease refreshed by the heartbeat;
- redis, redis-sentinel: `redis://` (redis-py; `?sentinel=` through the Sentinels): redis-py's
  Lock (SET NX PX), extended by the heartbeat;
- postgres: `postgresql://` (psycopg2): `pg_advisory_lock` on tooz's own connection;
- mariadb: `mysql://` (PyMySQL): `GET_LOCK` on tooz's own connection;
- memcached: `memcached://` (pymemcache): `add` with an expiry of lock_timeout, touched by the
  heartbeat.

Source: https://opendev.org/openstack/tooz (tooz/drivers/*.py, doc/source/user/drivers.rst).

Its heartbeat is driven as its docs ask: `coordinator.start(start_heart=True)` starts tooz's own
`Heart` thread, which calls `coordinator.heartbeat()` and sleeps half the interval it returns
(for the lease and expiry drivers, the refresh of every held lock; ZooKeeper's needs none). The
lock's timeout (`lock_timeout`, and ZooKeeper's session `timeout`) is `lock_ttl_s`, the test's
session timeout by default: what the nemesis scales a client pause by.

Expected flaws, the ones tooz's own documentation warns of:
- memcached: the lock "is fragile and/or broken" (drivers.rst); its release deletes the key
  whoever holds it (MemcachedLock.release's own comment: a holder whose key expired deletes the
  next holder's), and memcached forgets every lock with a restart;
- MySQL: "does not work when MySQL replicates" (a GET_LOCK lives on one server's session);
- etcd3gw: `acquired` is the client's local belief; nothing checks the lease after the grant,
  so a holder paused past its lease keeps believing while another acquires;
- PostgreSQL: the advisory lock dies silently with its session (a dropped connection), and
  the holder is not told;
- every driver leans on `heartbeat()`: a paused process does not beat, so a lease or an expiry
  lapses under a holder that still believes (split holder), as the Redis and memcached locks'
  timeouts make certain after `lock_timeout` seconds.

The application believes it holds from a successful `acquire` until it calls `release`, as
`with coordinator.get_lock(name):` does. tooz gives no fencing token; the history's token is the
service's where it has one: ZooKeeper's lock node czxid, the etcd key's create revision (a fenced
write compares it), Redis INCR, a PostgreSQL sequence, and for memcached `incr` of a counter that
does not survive the server (backends/memcached/session.py). A blocking acquire that times out in
the drivers built on tooz's retry helper raises tenacity's RetryError rather than returning
False: certainly not acquired (each try's answer was "taken"), so it is reported as such.
"""

from __future__ import annotations

import math
import random
from typing import Any
from urllib.parse import quote, urlencode

import tenacity  # tooz's own dependency, mounted with it into a tooz run's clients
from tooz import coordination

from zkjepsen.recipes.base import RecipeBase, Token, param, service_token, token_for

# The backend family (backends/registry.py) -> tooz's driver scheme.
DRIVERS = {
    "zookeeper": "zookeeper",
    "etcd": "etcd3+http",
    "redis": "redis",
    "postgres": "postgresql",
    "mariadb": "mysql",
    "memcached": "memcached",
}
ETCD_LOCK_PREFIX = "/tooz/locks"  # tooz/drivers/etcd3gw.py Etcd3Lock.LOCK_PREFIX
PG_USER = PG_DB = "postgres"  # backends/postgres: the client sessions' user and database
# backends/mariadb/schema.py (USER, PASSWORD, DATABASE): the clients' account
MYSQL_USER = MYSQL_PASSWORD = MYSQL_DB = "zkjepsen"


def family_of(session: Any) -> str:
    """The service of a client session: kazoo's client for ZooKeeper, else the family whose
    package (`zkjepsen.backends.<family>.session`) defines its class."""
    module = type(session).__module__
    if module.startswith("kazoo."):
        return "zookeeper"
    parts = module.split(".")
    if parts[:2] == ["zkjepsen", "backends"] and len(parts) > 2 and parts[2] in DRIVERS:
        return parts[2]
    raise ValueError(f"tooz has no driver for a session of {module}.{type(session).__name__}")


def _addresses(hosts: str) -> list[str]:
    return [h.strip() for h in hosts.split(",") if h.strip()]


def tooz_url(family: str, hosts: str, ttl_s: float, client: int = 1) -> str:
    """The coordinator URL for the backend's connect string (what its `connect_string` gives):
    the lock's timeout is `ttl_s` (whole seconds, tooz's unit); etcd3gw takes one member, the
    client's by its index."""
    ttl = str(max(1, math.ceil(ttl_s)))
    if family == "zookeeper":
        first, *rest = _addresses(hosts)
        query = urlencode([*(("hosts", h) for h in rest), ("timeout", ttl)])
        return f"zookeeper://{first}?{query}"
    if family == "etcd":
        members = _addresses(hosts)
        member = members[(client - 1) % len(members)]
        return f"etcd3+http://{member}?{urlencode({'timeout': ttl, 'lock_timeout': ttl})}"
    if family == "redis":
        return _redis_url(hosts, ttl)
    if family == "postgres":
        return f"postgresql://{PG_USER}@{_addresses(hosts)[0]}/{PG_DB}"
    if family == "mariadb":
        return f"mysql://{MYSQL_USER}:{MYSQL_PASSWORD}@{_addresses(hosts)[0]}/{MYSQL_DB}"
    if family == "memcached":
        return f"memcached://{_addresses(hosts)[0]}?{urlencode({'lock_timeout': ttl})}"
    raise ValueError(f"tooz has no driver for the {family} service")


def _redis_url(hosts: str, ttl: str) -> str:
    """One master (`redis://IP:6379`), or the Sentinels (`redis-sentinel://NAME@IP:26379,...`):
    tooz asks the first Sentinel, the others are its fallbacks."""
    scheme, _, rest = hosts.partition("://")
    if scheme == "redis-sentinel":
        name, _, addrs = rest.partition("@")
        first, *others = _addresses(addrs)
        query = [("sentinel", name), *(("sentinel_fallback", o) for o in others)]
        return f"redis://{first}?{urlencode([*query, ('lock_timeout', ttl)])}"
    return f"redis://{_addresses(rest)[0]}?{urlencode({'lock_timeout': ttl})}"


def lock_name(path: str) -> str:
    """tooz's lock name for a workload's lock path (short: MySQL's GET_LOCK takes 64 chars)."""
    return quote(path.strip("/").replace("/", "."), safe=".-_")


def client_number(identifier: str) -> int:
    """`client-3` -> 3 (1 when the identifier carries no number)."""
    digits = identifier.rpartition("-")[2]
    return int(digits) if digits.isdigit() else 1


def session_ttl(session: Any) -> float:
    """The session's timeout in seconds: a service session's `timeout`, kazoo's in ms."""
    timeout = getattr(session, "timeout", None)
    if isinstance(timeout, int | float):
        return float(timeout)
    return float(getattr(session, "_session_timeout", 4000)) / 1000


# One coordinator per client process and URL, started once, as a service using tooz keeps one
# (OpenStack's services make it at start-up and take every lock through it): a lock object the
# harness drops after an unknown outcome is replaced by a new lock of the same coordinator.
_COORDINATORS: dict[tuple[str, str], Any] = {}


def coordinator(url: str, identifier: str) -> Any:
    """The process's started coordinator for `url` (made and started, its heart beating, at
    its first use; a start that fails is tried again at the next)."""
    key = (url, identifier)
    found = _COORDINATORS.get(key)
    if found is None:
        member = f"{identifier}-{random.getrandbits(32):08x}".encode()
        found = coordination.get_coordinator(url, member)
        found.start(start_heart=True)
        _COORDINATORS[key] = found
    return found


class ToozLock(RecipeBase):
    def setup(self) -> None:
        self.family = family_of(self.session)
        ttl_s = param(self.params, "lock_ttl_s", session_ttl(self.session))
        self.url = tooz_url(self.family, self.hosts, ttl_s, client_number(self.identifier))
        self.coordinator = coordinator(self.url, self.identifier)
        # ZooKeeper: the lock path itself (tooz joins it like a path: an absolute name is the
        # lock's own directory), so its nodes sit where the observer reads; others: a short name
        self.name = self.path if self.family == "zookeeper" else lock_name(self.path)
        self.lock: Any = self.coordinator.get_lock(self.name.encode())
        self.held = False

    def acquire(self, timeout: float | None) -> Token | None:
        try:
            blocking: Any = True if timeout is None else timeout  # tooz: a bool or seconds
            got = self.lock.acquire(blocking=blocking)
        except tenacity.RetryError:
            got = False  # tooz's retry helper gave up: every try found the lock taken
        if not got:
            return None
        self.held = True
        return self.token()

    def token(self) -> Token:
        """The service's token for this acquisition (the module's docstring says which)."""
        if self.family == "zookeeper":
            inner = self.lock._lock  # tooz's ZooKeeperLock wraps kazoo's Lock
            return token_for(self.session, f"{inner.path}/{inner.node}")
        if self.family == "etcd":
            return self.etcd_token()
        return service_token(self.path, self.session.next_token(self.path))

    def etcd_token(self) -> Token:
        """The create revision of tooz's lock key, which the session's fenced write compares."""
        # here, not at the top: etcd's session helpers, loaded by runs on etcd
        from zkjepsen.backends.etcd.session import get, ranged
        from zkjepsen.backends.session import lock_node

        key = f"{ETCD_LOCK_PREFIX}{self.name}".encode()
        self.session.fence_key = key
        found = ranged(self.session.txn([], [get(key)], [])["responses"][0])
        if found is None:
            return Token(None, None, f"{self.path}/lost")
        rev = found["create_revision"]
        return Token(rev, rev, lock_node(self.path, rev))

    def own_session(self) -> dict[str, Any] | None:
        """ZooKeeper: tooz locks on its own kazoo session, which owns the lock node (the driver
        names it beside its own, for the phantom check); the other drivers have none."""
        kazoo = getattr(self.coordinator, "_coord", None) if self.family == "zookeeper" else None
        sid = (getattr(kazoo, "client_id", None) or (None,))[0]
        if sid is None:
            return None
        return {"session_id": f"0x{sid:x}", "timeout_ms": getattr(kazoo, "_session_timeout", None)}

    def release(self) -> None:
        self.held = False
        self.lock.release()

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        """Nothing to drop: the lock object goes, the process's coordinator stays (module
        comment); a lock the harness believes held is released by `release()` first."""
