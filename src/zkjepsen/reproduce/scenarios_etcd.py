"""Catalogue scenarios for etcd's locks (backends/etcd/), keyed to Jepsen's etcd 3.4.3
analysis (jepsen.io, 2020-01-30) and to etcd's own tickets on lock safety.

Every etcd lock here holds its key with a lease: a holder that stops (paused, cut off) past the
lease's TTL loses the key on etcd's clock while it still believes it holds. The fence is the
lock key's create revision (`Compare(CreateRevision(key) == token)`), the remedy Jepsen and
etcd's documentation give. Settings: a 2 s lease (`session_timeout_s`, which the etcd recipes
take as their TTL; 3 s for the cut-off) and holds well under it (0-0.8 s; a fixed 1.5 s for the
cut-off): etcd3-python keeps no lease alive, so no hold may outlast a lease without a fault.
"""

from __future__ import annotations

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire, on_invoke
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

# The etcd recipes: the etcd3 PyPI client's Lock, and etcd's own concurrency.Mutex and Lock
# RPC through the Go driver.
PYTHON_RECIPES = ("etcd3-python",)
GO_RECIPES = ("etcd-mutex-go", "etcd-lock-rpc")
JEPSEN = "Jepsen, etcd 3.4.3 (https://jepsen.io/analyses/etcd-3.4.3, 2020-01-30)"

SPLIT_EFFECT = _x(("lock:belief", "lock:effect"))
FENCED = _x(("lock:belief",), ("lock:effect", "fencing:backwards"))
SPLIT = _x(("lock:belief",))
NO_SPLIT = _x(absent=("lock:belief", "lock:effect"))

LEASE = {"session_timeout_s": 2.0, "clients": 5, "time_limit_s": 20.0}
# Whoever acquires first after 4 s is paused for 1.5 leases (3 s), re-armed until it lands in
# a hold: its lease expires, etcd deletes its key, the next waiter acquires.
PAUSE_HOLDER = steps(sleep(4), on(on_acquire(retries=10), fault("pause-client", duration="1.5x")))
# The holder cut off from every member for 2 leases, re-armed until the cut (a sidecar's
# iptables, 0.3-4 s on a loaded machine) lands inside a hold.
ISOLATE_HOLDER = steps(sleep(4), on(on_acquire(retries=10), fault("isolate-client", duration="2x")))
# A client still waiting 0.3 s into its acquire is paused for 1.5 leases: its lease expires
# while it waits; when it resumes and the key comes free, the lock must not be granted to it.
PAUSE_WAITER = steps(
    sleep(4),
    on(on_invoke("acquire", delay_s=0.3, retries=10), fault("pause-client", duration="1.5x")),
)


def _each(expectation, recipes=PYTHON_RECIPES + GO_RECIPES):
    return {recipe: expectation for recipe in recipes}


ETCD = [
    Scenario(
        "etcd-lease-pause",
        "the etcd lock holder is paused past its lease (Jepsen etcd 3.4.3)",
        "Jepsen found etcd's locks unsafe: a lease cannot give mutual exclusion when a process "
        "can stall. The holder is paused for 1.5 leases: etcd expires its lease and deletes "
        "its key, the next waiter acquires, the paused holder wakes up still believing and "
        "finishes its update on an unguarded resource among the next holder's writes.",
        {
            **LEASE,
            "workload": "lock",
            "nemesis": ["pause-client"],
            "params": {"resource": "unguarded", "hold_s": 0.4},
        },
        _each(SPLIT_EFFECT),
        source=JEPSEN,
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "etcd-lease-pause-fenced",
        "the same pause, with the lock key's revision as a fence (Jepsen's advice, etcd#11457)",
        "etcd#11457 ('Document that locks aren't really locks') ended in etcd documenting "
        "that a lock holder must fence with the lock key's revision. The resource refuses a "
        "write unless the lock key's create revision is still the writer's token: the paused "
        "holder still believes, but none of its late writes lands.",
        {
            **LEASE,
            "workload": "lock",
            "nemesis": ["pause-client"],
            "params": {"resource": "fenced", "hold_s": 0.4},
        },
        _each(FENCED),
        source=f"{JEPSEN}; https://github.com/etcd-io/etcd/issues/11457",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "etcd-waiter-lease-expired",
        "a waiter's lease expires while it waits (etcd#11456)",
        "etcd#11456: a Lock call blocked until the previous holder released, then told the "
        "client it held the lock without checking that the client's lease, and so its key, "
        "still existed (etcd#11408 added that check for 3.5; Debian's 3.4.23 Mutex, which the "
        "Lock RPC runs too, has none). A waiter paused for 1.5 leases in the middle of its "
        "acquire: its lease expires and its key goes; when the holder before it releases, "
        "concurrency.Mutex and the Lock RPC return the lock anyway while a later waiter, now "
        "first in line, takes it too. etcd3-python grants a fresh lease on every attempt and "
        "puts its key only if absent: it must come back safe.",
        {
            **LEASE,
            "workload": "lock",
            "nemesis": ["pause-client"],
            "params": {"resource": "unguarded", "hold_s": 0.4},
        },
        {**_each(NO_SPLIT, PYTHON_RECIPES), **_each(SPLIT, GO_RECIPES)},
        source="https://github.com/etcd-io/etcd/issues/11456 (fixed for 3.5 by etcd-io/etcd#11408)",
        schedule=PAUSE_WAITER,
    ),
    Scenario(
        "etcd-holder-cut-off",
        "the etcd lock holder is cut off from every member past its lease (etcd#10811)",
        "etcd#10811: client A holds a concurrency Mutex, its network to etcd breaks, its lease "
        "expires and B takes the lock while A still writes to its storage. The holder is cut "
        "off for 2 leases (6 s) in the middle of a fixed 1.5 s hold, shorter than its 3 s "
        "lease, so only the cut can split it: two holders at once.",
        {
            **LEASE,
            "session_timeout_s": 3.0,
            "workload": "lock",
            "nemesis": ["isolate-client"],
            "params": {"resource": "unguarded", "hold_s": 1.5, "hold_fixed": True},
        },
        _each(SPLIT),
        source="https://github.com/etcd-io/etcd/issues/10811",
        schedule=ISOLATE_HOLDER,
    ),
]
