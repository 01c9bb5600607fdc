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
