"""Every workload and recipe parameter (`--param KEY=VALUE`), declared once with its type and
allowed values, so a bad value is refused on the host before any container starts (instead of
every client failing inside its container and the run saying nothing was tested)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from zkjepsen.errors import BadInput


@dataclass(frozen=True)
class Param:
    kind: type  # bool, int, float or str
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = 0.0  # numbers: the smallest allowed value (None: any)
    # numbers: the largest allowed value and why (a typo like hold_s=1e300 is refused, not run)
    maximum: float | None = None
    why_max: str = ""
    positive: bool = False  # numbers: more than `minimum` (a timeout of 0 makes every op "hang")


DAY_S = 24 * 3600.0  # the longest a run may be (zkjepsen/spec.py MAX_TIME_S)
LONGEST = "a run lasts at most a day"


def seconds(help: str, positive: bool = False) -> Param:
    """A length of time in seconds: at least 0 (more than 0: `positive`), at most a day."""
    return Param(float, help, maximum=DAY_S, why_max=LONGEST, positive=positive)


def fraction(help: str) -> Param:
    return Param(float, help, maximum=1.0, why_max="a fraction")


KNOWN: dict[str, Param] = {
    # The clock faults' magnitudes (nemesis/clock.py, nemesis/client_clock.py).
    "offset_s": Param(
        float,
        "clock-bump, clock-strobe, clock-skew-client: how far the clock steps ahead (s; "
        "negative: behind)",
        minimum=-DAY_S,
        maximum=DAY_S,
        why_max="a day",
    ),
    "rate": Param(
        float,
        "clock-rate-leader, clock-rate-one, clock-rate-client: how fast the clock runs "
        "(x real time)",
        maximum=1000.0,
        why_max="the injector's limit",
        positive=True,
    ),
    "resource": Param(
        str, "how the protected resource is written", ("unguarded", "fenced", "token")
    ),
    "resource_path": Param(str, "znode of the protected resource"),
    "lock_path": Param(str, "znode under which the lock lives"),
    "locks": Param(
        int,
        "lock/election: independent locks; client i takes lock (i-1) mod locks (its lock and "
        "resource paths suffixed -k), so several holders can be faulted at once",
        minimum=1,
        maximum=100,
        why_max="a lock per client at most",
    ),
    "make_lock_path": Param(
        bool, "create lock_path before the run (default true; false: the recipe creates it)"
    ),
    "counter_path": Param(str, "znode of the counter"),
    "queue_path": Param(str, "znode of the queue"),
    "retry_writes": Param(bool, "retry protected writes with KazooRetry(ignore_expire)"),
    "hold_s": seconds("mean time a holder keeps the lock"),
    "hold_fixed": Param(bool, "hold exactly hold_s"),
    "think_s": seconds("pause between operations"),
    "acquire_timeout_s": seconds("how long acquire waits"),
    "abandon_unknown": Param(
        bool,
        "after an acquire with an unknown outcome, drop the lock object without closing "
        "it (as an application the exception propagates through): its session and nodes live on",
    ),
    "fresh_lock": Param(
        bool,
        "a new lock object for every acquire, the old one dropped without cleanup, as a loop "
        "that calls zk.Lock(path) each time (kazoo issue 732; client wire protocol, Python driver)",
    ),
    "nested": Param(
        bool,
        "lock: the holder takes the lock again re-entrantly around its first write and "
        "releases that inner level before the rest (kazoo issue 291; client_mode in-process)",
    ),
    "writes": Param(
        int,
        "protected writes per critical section",
        maximum=1000,
        why_max="each is a round trip inside the hold",
    ),
    "read_frac": fraction("fraction of reads"),
    "enqueue_frac": fraction("fraction of enqueues"),
    "keys": Param(
        int, "register keys", minimum=1, maximum=10_000, why_max="each key is checked on its own"
    ),
    "values": Param(
        int, "distinct register values", minimum=1, maximum=1 << 30, why_max="a 32-bit value"
    ),
    "sync_reads": Param(bool, "sync() before every read"),
    "check_time_s": seconds("linearizability check budget", positive=True),
    "mode": Param(str, "rwlock mode", ("read", "write")),
    "permits": Param(
        int,
        "semaphore: how many may hold at once (the recipe's and the checker's)",
        minimum=1,
        maximum=1000,
        why_max="each permit is a holder the clients must fill",
    ),
    "request_timeout_s": seconds(
        "how long the recorder waits for a client program's answer "
        "(acquire: plus acquire_timeout_s)",
        positive=True,
    ),
    "lock_ttl_s": seconds(
        "Redis locks: the lock's timeout/TTL in seconds (default: the session timeout)",
        positive=True,
    ),
    "pg_keepalives": Param(
        str,
        "postgres server: how it notices a dead client (tuned: TCP keepalives 2+3x1 s and "
        "tcp_user_timeout 5 s; os: the kernel's defaults, first probe after 2 h)",
        ("tuned", "os"),
    ),
    "pg_idle_tx_timeout_s": seconds(
        "postgres server: idle_in_transaction_session_timeout (0: off, the default)"
    ),
    "property": Param(
        str,
        "lock: what makes the verdict invalid: belief (two clients believed they held it; the "
        "default) or effect (the resource accepted writes out of lock order: what a fence keeps)",
        ("belief", "effect"),
    ),
    "unlock_timeout_ms": Param(
        float,
        "etcd-mutex-go: the application's deadline on Unlock (default: the op timeout)",
        maximum=DAY_S * 1000,
        why_max=LONGEST,
        positive=True,
    ),
    "unlock_retry": Param(
        str,
        "etcd-mutex-go: after a failed Unlock, delete our own key before the next lock "
        "(cleanup, the default) or retry the same Mutex's Unlock in the background "
        "(background: etcd-io/etcd#22082)",
        ("cleanup", "background"),
    ),
    "ready_file": Param(bool, "lock: multi-step updates under the ready-file protocol"),
    "ready_path": Param(str, "lock: znode of the ready file (default <resource_path>-ready)"),
    "barrier_path": Param(str, "barrier: znode under which the barrier rounds live"),
    "members": Param(
        int,
        "barrier: n, the members a round waits for (default: the clients)",
        maximum=100,
        why_max="the most clients a run has",
    ),
    "double": Param(bool, "barrier: leave waits for everyone (double barrier; default true)"),
    "work_s": seconds("barrier: work between passing and leaving"),
    "pass_timeout_s": seconds("barrier: how long a member waits to pass or leave", True),
}


def _coerce(name: str, p: Param, v: Any) -> Any:
    wrong = BadInput(
        f"--param {name}={v!r} is not a valid {p.kind.__name__} ({p.help})"
        + (f"; choose from {', '.join(p.choices)}" if p.choices else "")
    )
    if p.kind is bool:
        if isinstance(v, bool):
            return v
        text = str(v).lower()
        if text in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return text in ("1", "true", "yes", "on")
        raise wrong
    if p.kind in (int, float):
        if isinstance(v, bool):
            raise wrong
        try:
            x = p.kind(v)
        except (TypeError, ValueError):
            raise wrong from None
        if p.kind is int and isinstance(v, float) and v != x:
            raise wrong
        if not math.isfinite(x):
            raise wrong
        if p.minimum is not None and (x < p.minimum or (p.positive and x == p.minimum)):
            least = "more than" if p.positive else "at least"
            raise BadInput(f"--param {name}={v!r} is out of range; use {least} {p.minimum:g}")
        if p.maximum is not None and x > p.maximum:
            raise BadInput(
                f"--param {name}={v!r} is out of range; use at most {p.maximum:g} ({p.why_max})"
            )
        return x
    if not isinstance(v, str) or (p.choices and v not in p.choices):
        raise wrong
    return v


def validate_params(params: dict[str, Any], *, user_recipe: bool) -> dict[str, Any]:
    """The parameters, typed. Unknown names are refused unless the recipe is the user's own
    (which may read parameters zkjepsen does not know)."""
    out: dict[str, Any] = {}
    for name, v in params.items():
        p = KNOWN.get(name)
        if p is None:
            if user_recipe:
                out[name] = v
                continue
            raise BadInput(f"unknown parameter {name!r}; known ones: {', '.join(sorted(KNOWN))}")
        out[name] = _coerce(name, p, v)
    return out


# What each workload reads, with the default it uses when the parameter is not given: what
# `zkjepsen list workloads` shows (tests/unit/test_workload_params.py holds the client loop to
# these). Recipes' own parameters (lock_ttl_s, pg_*, unlock_*) are in KNOWN's help.
_LOOP: tuple[tuple[str, Any], ...] = (
    ("resource", "unguarded"),
    ("hold_s", 0.2),
    ("hold_fixed", False),
    ("think_s", 0.05),
    ("acquire_timeout_s", 10.0),
    ("retry_writes", True),
    ("request_timeout_s", 15.0),
)
WORKLOAD_PARAMS: dict[str, tuple[tuple[str, Any], ...]] = {
    "lock": (
        *_LOOP,
        ("writes", 2),
        ("property", "belief"),
        ("nested", False),
        ("ready_file", False),
        ("lock_path", "/zkjepsen/lock"),
        ("resource_path", "/zkjepsen/resource"),
        ("locks", 1),
    ),
    "election": (
        *_LOOP,
        ("writes", 2),
        ("locks", 1),
        ("lock_path", "/zkjepsen/master_election"),
        ("resource_path", "/zkjepsen/resource"),
    ),
    "counter": (
        *_LOOP,
        ("lock_path", "/zkjepsen/lock"),
        ("counter_path", "/zkjepsen/counter"),
    ),
    "rwlock": (
        ("read_frac", 0.6),
        ("hold_s", 0.05),
        ("think_s", 0.05),
        ("acquire_timeout_s", 10.0),
        ("lock_path", "/zkjepsen/shared_lock"),
    ),
    "semaphore": (
        ("permits", 2),
        ("hold_s", 0.2),
        ("hold_fixed", False),
        ("think_s", 0.05),
        ("acquire_timeout_s", 10.0),
        ("lock_path", "/zkjepsen/semaphore"),
    ),
    "register": (
        ("keys", 3),
        ("values", 5),
        ("sync_reads", True),
        ("read_frac", 0.4),
        ("think_s", 0.01),
        ("check_time_s", 120.0),
    ),
    "queue": (("enqueue_frac", 0.5), ("think_s", 0.02), ("queue_path", "/zkjepsen/queue_fifo")),
    "barrier": (
        ("members", "the clients"),
        ("double", True),
        ("work_s", 0.2),
        ("think_s", 0.0),
        ("pass_timeout_s", 30.0),
        ("barrier_path", "/zkjepsen/queue_barrier"),
    ),
    "raw": (("lock_path", "/zkjepsen/raw"),),
    "ping": (("think_s", 0.05),),
}


def params_line(workload: str) -> str:
    """`name=default ...` of a workload's parameters (booleans as true/false, as typed)."""

    def text(v: Any) -> str:
        return (
            str(v).lower() if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else str(v)
        )

    return " ".join(f"{n}={text(d)}" for n, d in WORKLOAD_PARAMS.get(workload, ()))


# Who else reads a parameter (issue 48: a setting given and read by nobody is refused, not run
# at a default; run/readers.py). Beyond `WORKLOAD_PARAMS`, what a workload's setup or loop reads
# that `zkjepsen list workloads` does not show:
# (fresh_lock: the Python driver's lock loop, workloads/driver/server.py; abandon_unknown: the
# in-process one, workloads/inprocess.py.)
_LOOPED = ("fresh_lock", "abandon_unknown")
WORKLOAD_READS_TOO: dict[str, tuple[str, ...]] = {
    "lock": ("make_lock_path", "ready_path", *_LOOPED),  # workloads/lock.py, client/loop.py
    "election": ("make_lock_path", *_LOOPED),  # the same setup as lock's
    "counter": _LOOPED,
    "rwlock": _LOOPED,
    "semaphore": _LOOPED,
}
# A recipe's own: the code that reads each (tests/unit/test_settings_read.py holds the names to
# the registry). A user's recipe (exec, exec:PATH, module:Name) may read any parameter.
RECIPE_PARAMS: dict[str, tuple[str, ...]] = {
    "redis-setnx": ("lock_ttl_s",),  # recipes/base.py RedisRecipe
    "redis-set-px": ("lock_ttl_s",),
    "redlock": ("lock_ttl_s",),
    "etcd3-python": ("lock_ttl_s",),  # recipes/etcd3_lock.py (the Go ones lease the session's)
    "etcd-mutex-go": ("unlock_timeout_ms", "unlock_retry"),  # client/drivers/etcd/main.go
    "rwlock": ("mode",),  # recipes/rwlock.py, when the workload does not choose the mode
    # issue 51's recipes (each module reads them in its setup)
    "etcd-v3lock": ("lock_ttl_s",),  # recipes/etcd_v3lock.py: its lease's TTL
    "etcd-v3election": ("lock_ttl_s",),  # recipes/etcd_v3election.py
    "python-redis-lock": ("lock_ttl_s",),  # recipes/python_redis_lock.py: expire
    "pottery-redlock": ("lock_ttl_s",),  # recipes/pottery_redlock.py: auto_release_time
    "kazoo-lease": ("lock_ttl_s",),  # recipes/kazoo_lease.py: the lease's duration
    "kazoo-rwlock": ("mode",),  # recipes/kazoo_rwlock.py, as rwlock
}
# A service's servers' own (each backend's cluster reads them as it starts its servers).
SERVICE_PARAMS: dict[str, tuple[str, ...]] = {
    "postgres": ("pg_keepalives", "pg_idle_tx_timeout_s"),  # backends/postgres/cluster.py
}
