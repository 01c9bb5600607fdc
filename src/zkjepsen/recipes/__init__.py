"""Recipes under test: the registry behind `--recipe NAME`, and `make_recipe`.

Each recipe is a module that ports one algorithm faithfully, bugs included (each module's
docstring names its source and the flaw to expect). `--recipe package.module:Name` imports a
user's own recipe: a class with `acquire(timeout)`, `release()` and `holding()` (the `Recipe`
protocol), built as `Name(zk, path, hosts=, identifier=, params=)` (or `Name(zk, path)` if it
takes no keywords), or an object that already has them. Any other callable (a function,
`os:system`) is no lock recipe: refused before anything starts (`validate_recipe`).

Modules are imported lazily: a client container imports only the recipe it runs.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any

from zkjepsen.backends.registry import DEFAULT_BACKEND, backend_info
from zkjepsen.errors import BadInput
from zkjepsen.recipes.base import Recipe, Token


@dataclass(frozen=True)
class RecipeInfo:
    target: str  # "module:attribute" of the factory ("" for a program in another language)
    description: str
    flaw: str  # what to expect (see the module docstring for the source)
    # A program serving the client wire protocol (docs/client-protocol.md): its argv inside the
    # client container. Empty: a Python recipe, served by zkjepsen.workloads.driver.
    command: tuple[str, ...] = ()
    language: str = "python"
    source: str = "port"  # "library": the real library as shipped; "port": our re-implementation
    # The backends it runs on (backends/registry.py), the first by default. A Python recipe on a
    # backend other than ZooKeeper is served by workloads/driver/service.py: it is built as
    # `Factory(service, path, hosts=, identifier=, params=)` on that backend's client service.
    backends: tuple[str, ...] = ("zookeeper",)
    # The clients a test runs when none are asked for (None: TestSpec's 10): fewer for a lock
    # so unfair that, at 10, a plain run without faults may leave a client starved.
    clients: int | None = None
    # Python distributions (with what they require, extras as written) mounted into this
    # recipe's clients only, dist-info included (client/libraries.py, from its ProgramPlan): a
    # library whose dependencies would shadow what other recipes' clients import (tooz's
    # tenacity over the etcd image's pinned one), or found by its entry points (tooz's drivers).
    distributions: tuple[str, ...] = ()
    # Whether its acquire's record names the servers that granted it (`granted`: Redlock's
    # masters that said yes, recipes/base.py `Token.granted`): what the `shared-master`
    # target reads (run/resolve.py `role_refusal`).
    records_grants: bool = False
    # The longest gap between two renewals of its lease, as a share of the lease, where its
    # library's source says it is longer than the third the checkers assume otherwise (its
    # driver's `init` answers it as `renew_ms`: checker/lease.py `renewal_s`). None: a third.
    renew_share: float | None = None


_M = "zkjepsen.recipes."
_DRIVERS = (
    "/opt/zkjepsen/drivers"  # where the image build installs them (backends/zookeeper/drivers.py)
)
_CURATOR = f"{_DRIVERS}/curator/run"
RECIPES: dict[str, RecipeInfo] = {
    "kazoo": RecipeInfo(
        _M + "kazoo_lock:KazooLock",
        "kazoo's Lock as-is (reference)",
        "is_acquired survives session loss: split holder under pauses/partitions",
        source="library",
    ),
    "kazoo-careful": RecipeInfo(
        _M + "kazoo_lock:CarefulKazooLock",
        "kazoo's Lock; the application abandons its critical section on SUSPENDED/LOST",
        "none expected in belief; writes in flight at SUSPENDED may still land",
        source="library",
    ),
    # kazoo's other recipes (issue 51), each judged by its own workload
    "kazoo-semaphore": RecipeInfo(
        _M + "kazoo_semaphore:KazooSemaphore",
        "kazoo's Semaphore as-is (`semaphore` workload: `permits` leases)",
        "is_acquired survives session loss: a holder paused or cut off past its session "
        "believes in a lease another took (permits + 1 holders)",
        source="library",
    ),
    "kazoo-rwlock": RecipeInfo(
        _M + "kazoo_rwlock:KazooRWLock",
        "kazoo's ReadLock/WriteLock as-is (`rwlock` workload)",
        "is_acquired survives session loss: a reader beside a writer, or two writers, under "
        "pauses/partitions",
        source="library",
    ),
    "kazoo-lease": RecipeInfo(
        _M + "kazoo_lease:KazooLease",
        "kazoo's NonBlockingLease as-is, retried until obtained; held for its duration by "
        "the client's own clock",
        "the lease's end is a client's timestamp: a contender whose clock runs ahead takes a "
        "live lease (clock-skew-client, clock-rate-client); the end is stored to the second",
        source="library",
    ),
    "kazoo-291": RecipeInfo(
        _M + "kazoo_lock:Kazoo20Lock",
        "kazoo's Lock with kazoo 2.0's re-entrancy (issue 291): a nested acquire returns at "
        "once, any release deletes the node",
        "an inner release frees the lock under the outer holder: split holder with "
        "`nested` (no fault)",
    ),
    "blog": RecipeInfo(
        _M + "blog:BlogLock",
        "ZkDistributedLock from a blog post (own client per lock object)",
        "never re-lists: a dead waiter ahead makes the next one 'acquire' (split holder, no "
        "fault); dangling watch hangs; no session handling; no GUID; own session, so data "
        "reads on the app's session can be stale (lost updates)",
    ),
    "herd": RecipeInfo(
        _M + "herd:HerdLock",
        "two-version lock v1: watch the children list",
        "herd effect (every release wakes every waiter); no session handling",
    ),
    "predecessor": RecipeInfo(
        _M + "predecessor:PredecessorLock",
        "two-version lock v2: watch the predecessor, re-list",
        "no session handling",
    ),
    "paper": RecipeInfo(
        _M + "paper:PaperLock",
        "the ZooKeeper paper's scalable lock (lecture notes)",
        "no atomicity: a holder dying mid-update leaves a half-done state to the next holder",
    ),
    "exclusive": RecipeInfo(
        _M + "exclusive:ExclusiveLock",
        "create one ephemeral node; others watch the children",
        "herd, unfair; after session loss release deletes another holder's node",
    ),
    "rwlock": RecipeInfo(
        _M + "rwlock:RWLock",
        "shared read/write lock v2 (-R-/-W- nodes, watch last blocker)",
        "no session handling (mode: read/write)",
    ),
    "election": RecipeInfo(
        _M + "election:Election",
        "master election on one ephemeral node",
        "stale master keeps believing after session loss; resign deletes whoever's node",
    ),
    "queue": RecipeInfo(
        _M + "queue:FifoQueue",
        "FIFO queue (members proceed in order; data put/get)",
        "none without faults",
    ),
    "writelock-2931": RecipeInfo(
        _M + "writelock_fullname:FullNameWriteLock",
        "ZooKeeper's own WriteLock recipe before ZOOKEEPER-2931 (x-<sessionId>- nodes)",
        "orders contenders by session id before sequence: a newcomer jumps the queue (split "
        "holder, no fault)",
    ),
    "barrier": RecipeInfo(
        _M + "barrier:QueueBarrier",
        "barrier: n children under the barrier node, then proceed (`barrier` workload)",
        "counts nodes, not members: a dead member's lingering child counts, a vanished one "
        "leaves everyone waiting; no session handling",
    ),
    "double-barrier": RecipeInfo(
        _M + "barrier:DoubleBarrier",
        "double barrier: enter as `barrier`, leave waits until nobody is left (`barrier` workload)",
        "as `barrier`, and no ready node: a member that leaves before a slow waiter re-lists "
        "strands it",
    ),
    "curator": RecipeInfo(
        _M + "curator:CuratorMutex",
        "Curator InterProcessMutex algorithm (protected, getData)",
        "none without faults; belief survives session loss until checked",
    ),
    # The real libraries, in their own languages, as Debian bookworm ships them; compiled into
    # the client image (backends/zookeeper/drivers.py) and driven through the client wire protocol.
    "curator-java": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "InterProcessMutex as-is (Java, real library)",
        "isAcquiredInThisProcess survives session loss: a paused holder keeps believing "
        "(CURATOR-206); quick reconnect on the dying node (CURATOR-604); a failed release drops "
        "local state while the node survives (CURATOR-678)",
        command=(_CURATOR, "mutex"),
        language="java",
        source="library",
    ),
    "curator-java-careful": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "InterProcessMutex; the application's ConnectionStateListener "
        "abandons the critical section on SUSPENDED/LOST (Java, real library)",
        "none expected in belief; a frozen process hears SUSPENDED only when it wakes, so a "
        "write already on its way may land after the session is gone",
        command=(_CURATOR, "careful"),
        language="java",
        source="library",
    ),
    "curator-java-semaphore": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "InterProcessSemaphoreMutex as-is (Java, real library)",
        "the lease is believed held after session loss, as with the mutex",
        command=(_CURATOR, "semaphore"),
        language="java",
        source="library",
    ),
    "curator-java-latch": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "LeaderLatch, for the election workload (Java, real library)",
        "hasLeadership drops at SUSPENDED, but a frozen leader learns it only when it wakes",
        command=(_CURATOR, "latch"),
        language="java",
        source="library",
    ),
    # Curator's other recipes (issue 51), each judged by its own workload; the driver's sources
    # (client/drivers/curator/SemaphoreV2.java, ReadWrite.java, Selector.java) say how each is used.
    "curator-java-semaphore-v2": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "InterProcessSemaphoreV2 as-is, `permits` leases (`semaphore` workload; Java, real "
        "library)",
        "a Lease outlives its session: a holder paused or cut off past its session believes in "
        "a lease another took (permits + 1 holders); CURATOR-595 (LOST frees no permit, the "
        "restored session keeps the lease node, and the holder's Lease outlives LOST: an "
        "excess, scenario curator-595-semaphore-lease-outlives-lost); CURATOR-335 (an orphaned "
        "lease node deadlocks the semaphore) was fixed in Curator 2.11/3.2",
        command=(_CURATOR, "semaphore-v2"),
        language="java",
        source="library",
    ),
    "curator-java-rwlock": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "InterProcessReadWriteLock as-is (`rwlock` workload: each request names its side; "
        "Java, real library)",
        "isAcquiredInThisProcess survives session loss, as the mutex's: a reader beside a "
        "writer, or two writers, under pauses/partitions",
        command=(_CURATOR, "rwlock"),
        language="java",
        source="library",
    ),
    "curator-java-selector": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "LeaderSelector with LeaderSelectorListenerAdapter (leadership cancelled at "
        "SUSPENDED/LOST), for the election workload (Java, real library)",
        "a frozen leader hears SUSPENDED only when it wakes: two leaders under pauses",
        command=(_CURATOR, "selector"),
        language="java",
        source="library",
    ),
    "curator-java-selector-tolerant": RecipeInfo(
        "",
        "Apache Curator of the clients' suite (5.4.0 on bookworm) "
        "LeaderSelector whose listener rides out SUSPENDED and gives up at LOST (what "
        "SessionConnectionStateErrorPolicy does), for the election workload (Java, real "
        "library)",
        "CURATOR-460: Curator posts LOST a session timeout after SUSPENDED, but the server "
        "expired the session up to that long earlier: a leader cut off from the ensemble "
        "leads beside the next one",
        command=(_CURATOR, "selector-tolerant"),
        language="java",
        source="library",
    ),
    "go-zk": RecipeInfo(
        "",
        "go-zookeeper (2018-01-30) zk.Lock as-is (Go, real library)",
        "no session handling at all: after its session expires the Lock still believes it "
        "holds (split holder); Lock() has no timeout (the driver abandons the attempt and "
        "deletes its own node)",
        command=(f"{_DRIVERS}/gozk/zk-lock",),
        language="go",
        source="library",
    ),
    # Other lock services (seed 003 and Redis's documentation), with the `redis`
    # library; the token is from INCR, checked by the resource (backends/redis/session.py).
    "redis-setnx": RecipeInfo(
        _M + "redis_setnx:SetnxLock",
        "the SETNX/GETSET timestamp lock (Redis SETNX docs' old pattern), as the seed wrote it",
        "expiry judged by each client's own clock: a clock running ahead steals a live lock "
        "(split holder); a holder paused past the timeout keeps believing; release DELs "
        "whoever's key if its own clock says it has not expired",
        backends=("redis", "redis-sentinel"),
    ),
    "redis-set-px": RecipeInfo(
        _M + "redis_set_px:SetPxLock",
        "SET key token NX PX ttl; release by a Lua compare-and-delete",
        "a holder paused past the TTL keeps believing (split holder); on failover the "
        "promoted replica may never have seen the key",
        backends=("redis", "redis-sentinel"),
    ),
    "redlock": RecipeInfo(
        _M + "redlock:Redlock",
        "Redlock over 5 independent masters: SET NX PX on each, a majority within the "
        "validity time",
        "no fencing; validity judged by the client's clock; a pause past the validity time, "
        "or a master that forgets the key (restart without persistence), splits holders",
        backends=("redlock",),
        records_grants=True,
    ),
    # The popular Python Redis locks as shipped on PyPI (issue 51), on the redis backends.
    "python-redis-lock": RecipeInfo(
        _M + "python_redis_lock:PythonRedisLock",
        "python-redis-lock (4.0.1) Lock with auto_renewal: SET NX EX, a thread extends it "
        "every 2/3 of expire, waiters BLPOP a signal list",
        "renewal runs in the holder's process: a holder paused or cut off past expire loses "
        "the key while it still believes (its issues #85, #91: locks expire while the task "
        "runs); the dead renewal thread tells the application nothing",
        source="library",
        backends=("redis", "redis-sentinel"),
        # redis_lock.Lock: _lock_renewal_interval = expire * 2 / 3, its thread waits that long
        # between two extend()s
        renew_share=2 / 3,
    ),
    "pottery-redlock": RecipeInfo(
        _M + "pottery_redlock:PotteryRedlock",
        "pottery (3.0.1) Redlock (and synchronize, the same lock around a call) over the "
        "backend's masters, no extension",
        "no fencing, no renewal: a holder paused past auto_release_time runs on while another "
        "acquires (split holder); locked() sees only its own instance (pottery#701)",
        source="library",
        backends=("redlock", "redis", "redis-sentinel"),
    ),
    # The same tooz lock API on every service it has a driver for (issue 51): the backend
    # chooses the driver (recipes/tooz.py).
    "tooz": RecipeInfo(
        _M + "tooz:ToozLock",
        "OpenStack tooz (9.1, PyPI) get_lock() as shipped, its driver chosen by the backend "
        "(kazoo, etcd3gw, redis-py, psycopg2, PyMySQL, pymemcache); its Heart thread beats",
        "a holder paused past lock_timeout keeps believing on every lease driver (etcd3gw's "
        "acquired is local belief; Redis and memcached keys expire); memcached's release "
        "deletes whoever's key (tooz: 'fragile and/or broken'); PostgreSQL and MySQL locks die "
        "silently with their session",
        source="library",
        backends=(
            "zookeeper",
            "etcd",
            "redis",
            "redis-sentinel",
            "postgres",
            "mariadb",
            "memcached",
        ),
        distributions=(
            "tooz[etcd3gw,mysql,memcached,redis,zookeeper]",
            "psycopg2-binary",  # tooz[postgresql]'s psycopg2, as a wheel with its own libpq
        ),
    ),
    # memcached (issue 51): its wiki's add/delete lock; the token is `incr` of a counter.
    "memcached-add": RecipeInfo(
        _M + "memcached_add:AddLock",
        "add key value with an expiry; release by delete (memcached wiki, 'Ghetto central "
        "locking')",
        "a holder paused past the expiry keeps believing (split holder); release deletes "
        "whoever's key; a restarted server forgets every lock",
        backends=("memcached",),
    ),
    # PostgreSQL locks (seed 003) with psycopg 3; the token is from a sequence, checked by
    # the resource row (backends/postgres/session.py).
    "pg-for-update": RecipeInfo(
        _M + "pg.for_update:ForUpdateLock",
        "SELECT ... FOR UPDATE NOWAIT on a lock row in an open transaction, 4 tries 1 s apart "
        "(seed 003; PostgreSQL 15, psycopg 3)",
        "held until the server notices the holder's dead connection; the holder keeps "
        "believing after its transaction was ended",
        backends=("postgres",),
        # NOWAIT polling favours whoever asks again first: at 10 clients a waiter went 43 s
        # of a 60 s run without the lock, and 20 s runs under load starved some (issue 23).
        clients=5,
    ),
    "pg-insert": RecipeInfo(
        _M + "pg.insert:InsertLock",
        "unique-row insert lock: INSERT the lock row, DELETE it to release (seed 003)",
        "nothing expires the row: a crashed or cut-off holder stalls everyone else",
        backends=("postgres",),
    ),
    "pg-advisory": RecipeInfo(
        _M + "pg.advisory:AdvisoryLock",
        "pg_advisory_lock(hashtext(name)), session-scoped, wait bounded by lock_timeout",
        "held until the server notices the holder's dead session; the holder keeps believing "
        "after its session was ended",
        backends=("postgres",),
    ),
    # MariaDB (issue 51) with PyMySQL; the token is a counter row's version, checked by the
    # resource row (backends/mariadb/session.py).
    "mariadb-get-lock": RecipeInfo(
        _M + "mariadb.get_lock:GetLock",
        "GET_LOCK(name, timeout) / RELEASE_LOCK on the lock's own connection (MariaDB 10.11, "
        "PyMySQL)",
        "held until the server notices the holder's dead connection, then freed silently; the "
        "holder keeps believing after its connection was ended",
        backends=("mariadb",),
    ),
    # etcd (issue 25): the token is the lock key's create revision, which a fenced write
    # compares (backends/etcd/session.py).
    "etcd3-python": RecipeInfo(
        _M + "etcd3_lock:Etcd3Lock",
        "the etcd3 PyPI client's (0.12.0) Lock as-is: a key with a lease of lock_ttl_s, "
        "put if absent; release deletes it if still ours",
        "the lease is not kept alive and nothing checks it: a holder paused or cut off past "
        "its TTL keeps believing while another acquires (split holder; Jepsen etcd 3.4.3)",
        source="library",
        backends=("etcd",),
    ),
    # etcd's own locks (client/drivers/etcd, Go, from Debian's etcd 3.4.23 source): the token
    # is the lock key's create revision; a fenced write is a Txn comparing it (IsOwner()).
    "etcd-mutex-go": RecipeInfo(
        "",
        "etcd 3.4.23 clientv3/concurrency Mutex on a Session (a lease with keep-alive), as "
        "shipped (Go, real library)",
        "a holder paused or cut off past its lease TTL keeps believing (Jepsen, etcd 3.4.3: "
        "locks are not safe without fencing); the lease expiring while waiting still returns "
        "the lock (etcd#11456: Debian's 3.4.23 Mutex has no check after the wait); Unlock "
        "deletes by key name (etcd#22082)",
        command=(f"{_DRIVERS}/etcd/etcd-lock", "mutex"),
        language="go",
        source="library",
        backends=("etcd",),
    ),
    "etcd-lock-rpc": RecipeInfo(
        "",
        "etcd 3.4.23 v3lock Lock/Unlock RPC with the client's lease (the server runs "
        "concurrency.Mutex for it; Go driver, real library)",
        "as etcd-mutex-go, on the server's side: a holder past its lease TTL keeps believing; "
        "a Lock whose deadline passed may leave the key until the lease expires",
        command=(f"{_DRIVERS}/etcd/etcd-lock", "rpc"),
        language="go",
        source="library",
        backends=("etcd",),
    ),
    # etcd's server-side lock and election services through its JSON gateway (issue 51): the
    # member runs concurrency.Mutex/Election on a session it makes and orphans (v3lock/lock.go).
    "etcd-v3lock": RecipeInfo(
        _M + "etcd_v3lock:V3Lock",
        "etcd's v3lock Lock/Unlock service through the JSON gateway, with the client's lease "
        "kept alive (as etcdctl lock)",
        "a holder paused or cut off past its lease keeps believing (split holder)",
        source="library",
        backends=("etcd",),
    ),
    "etcd-v3lock-nolease": RecipeInfo(
        _M + "etcd_v3lock:V3LockNoLease",
        "etcd's v3lock Lock/Unlock service called without a lease (the server makes a session "
        "and orphans it)",
        "the lock silently ends 60 s after its grant (the orphaned session's default TTL): a "
        "hold past 60 s has a second holder, no fault needed",
        source="library",
        backends=("etcd",),
    ),
    "etcd-v3election": RecipeInfo(
        _M + "etcd_v3election:V3Election",
        "etcd's v3election Campaign/Resign service through the JSON gateway, with the "
        "client's lease kept alive (`election` workload)",
        "a leader paused or cut off past its lease keeps believing it leads",
        source="library",
        backends=("etcd",),
    ),
    "etcd-v3election-nolease": RecipeInfo(
        _M + "etcd_v3election:V3ElectionNoLease",
        "etcd's v3election Campaign/Resign called without a lease (`election` workload)",
        "leadership silently ends 60 s after the election (the orphaned session): a term past "
        "60 s has a second leader, no fault needed",
        source="library",
        backends=("etcd",),
    ),
}


def recipe_names() -> list[str]:
    return sorted(RECIPES)


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise BadInput(f"recipe {target!r} is not package.module:Name")
    try:
        obj = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - a syntax error or a raise on import is bad input
        raise BadInput(
            f"cannot import recipe module {module!r}: {type(e).__name__}: {e}; "
            "fix the module or give another recipe"
        ) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise BadInput(f"recipe module {module!r} has no {attr!r}") from None
    return obj


def make_recipe(
    name: str,
    zk: Any,
    path: str,
    *,
    hosts: str = "",
    identifier: str = "",
    params: dict[str, Any] | None = None,
) -> Recipe:
    """Build the recipe `name` (a registry name or `package.module:Name`) on client `zk` for the
    lock at `path`."""
    factory = _import(RECIPES[name].target if name in RECIPES else _user_target(name))
    if name not in RECIPES:
        _require_recipe(name, factory)
    if not callable(factory):
        return factory  # a ready-made object (its methods checked above)
    kw = dict(hosts=hosts, identifier=identifier, params=params or {})
    try:
        sig = inspect.signature(factory)
        accepts = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()) or all(
            k in sig.parameters for k in kw
        )
    except (TypeError, ValueError):
        accepts = True
    obj = factory(zk, path, **kw) if accepts else factory(zk, path)
    _require_methods(name, obj)
    return obj


def preload_recipe(name: str) -> None:
    """Import a registered recipe's module now (a client's init), so a heavy library's import
    (tooz's, with oslo's) is not counted in the first acquire's wait; an import that fails
    fails again, visibly, where the recipe is built."""
    info = RECIPES.get(name)
    if info is None or not info.target:
        return
    try:
        importlib.import_module(info.target.partition(":")[0])
    except Exception:  # noqa: BLE001 - make_recipe reports it as the recipe's error
        pass


def validate_recipe(name: str) -> None:
    """On the host, before anything starts: the recipe exists, imports, and its class (or
    object) has acquire, release and holding. A recipe that fails here would fail in every
    client container, and a run in which nothing was acquired tests nothing. `exec` (the
    program is `--client-cmd`) and `exec:PATH` (an executable) are checked by the runner."""
    if name in RECIPES or name == "exec" or name.startswith("exec:"):
        return
    _require_recipe(name, _import(_user_target(name)))


def recipe_backends(recipe: str) -> tuple[str, ...]:
    """The backends a registered recipe runs on (first: its default); () for a user's recipe
    or program, which may run on any backend."""
    info = RECIPES.get(recipe)
    return tuple(info.backends) if info is not None else ()


def resolve_backend(recipe: str, backend: str | None) -> str:
    """The backend a test of `recipe` runs on: the one asked for, which must suit the recipe,
    else the recipe's own default (ZooKeeper for the ZooKeeper recipes and users' own)."""

    suits = recipe_backends(recipe)
    if backend is None:
        return suits[0] if suits else DEFAULT_BACKEND
    backend_info(backend)
    if suits and backend not in suits:
        raise BadInput(
            f"recipe {recipe} runs on {', '.join(suits)}, not on backend {backend}; "
            f"drop --backend or choose one of those"
        )
    return backend


def _user_target(name: str) -> str:
    """A name that is not in the registry must be `package.module:Name`."""
    if ":" not in name:
        raise BadInput(
            f"unknown recipe {name!r}; choose from {', '.join(recipe_names())} "
            "or give package.module:Name (`zkjepsen list recipes`)"
        )
    return name


def _require_recipe(name: str, obj: Any) -> None:
    """A user's `package.module:Name` is a lock recipe: a class (or a ready-made object) with
    the `Recipe` methods. A function is not one, whatever it returns: `os:system` passed the
    old check (any callable did), failed in every client and left liveness a run of clients
    that never acquired to call stuck."""
    if callable(obj) and not inspect.isclass(obj):
        kind = "a function" if inspect.isroutine(obj) else f"a callable {type(obj).__name__}"
        raise BadInput(
            f"recipe {name!r} is {kind}, not a lock recipe; give a class with "
            "acquire(timeout), release() and holding() (see zkjepsen.recipes.base.Recipe)"
        )
    _require_methods(name, obj)


def _require_methods(name: str, obj: Any) -> None:
    """The same check on the host (a class) and in the client (the built object)."""
    missing = [m for m in ("acquire", "release", "holding") if not callable(getattr(obj, m, None))]
    if missing:
        raise BadInput(
            f"recipe {name!r} has no {', '.join(m + '()' for m in missing)}; a recipe needs "
            "acquire(timeout), release() and holding() (see zkjepsen.recipes.base.Recipe)"
        )


__all__ = [
    "RECIPES",
    "Recipe",
    "RecipeInfo",
    "Token",
    "make_recipe",
    "recipe_names",
    "validate_recipe",
]
