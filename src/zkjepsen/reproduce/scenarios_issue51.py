"""Catalogue scenarios for the locks people deploy (issue 51): etcd's server-side lock and
election services called without a lease, and the PyPI/kazoo recipes under the faults their
reports name. Each one's expected outcome was seen by hand before it was written here.

etcd `v3lock` (`server/etcdserver/api/v3lock/lock.go`, 3.4.23 and 3.5.16 alike) and
`v3election` (`v3election/election.go`): each RPC makes `concurrency.NewSession(c,
WithLease(req.Lease))` and then `s.Orphan()`. Called without a lease (proto3's 0, what any
client that leaves the field out sends) the session is a fresh lease of the default 60 s TTL
whose keep-alive is stopped at once: the lock (or leadership) ends 60 s after the grant,
whether its holder is alive or not, and the next waiter is granted while the holder still
holds. No fault is needed, only a hold longer than 60 s. The waiters call with a long acquire
timeout (100 s), so they stay queued behind the holder instead of cancelling and calling again.
The recipe with a lease of its own, kept alive, is the control: the same 70 s holds, no split.
"""

from __future__ import annotations

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

BELIEF = _x(("lock:belief",))
NO_SPLIT = _x(absent=("lock:belief", "lock:effect"))

V3LOCK_SOURCE = (
    "etcd server/etcdserver/api/v3lock/lock.go and v3election/election.go: "
    "NewSession(WithLease(req.Lease)) then Orphan(); concurrency.defaultSessionTTL = 60"
)
# Two clients, each holding for a fixed 70 s: the first grant's orphaned lease expires at 60 s
# and the other client, queued since the start, is granted with 10 s of the first hold left.
ORPHANED = {
    "nemesis": ["none"],
    "clients": 2,
    "time_limit_s": 100.0,
    "params": {
        "resource": "unguarded",
        "hold_s": 70.0,
        "hold_fixed": True,
        "acquire_timeout_s": 100.0,
    },
}

# Whoever acquires first after 4 s is frozen for 1.5 lock TTLs (6 s of the 4 s default), re-armed
# until it lands in a hold: its key expires on Redis while no thread of its process runs.
PAUSE_HOLDER = steps(sleep(4), on(on_acquire(retries=10), fault("pause-client", duration="1.5x")))
# python-redis-lock's waiters block in BLPOP on a signal list only a release pushes; an expired
# key pushes nothing, so a waiter tries SET NX again only when its BLPOP times out (its acquire
# timeout, whole seconds). At the default 10 s every waiter sleeps through a 6 s pause and the
# holder wakes first (seen: 0 splits in 2 landed pauses); at 2 s they poll inside it.
PYPI_REDIS = {
    "workload": "lock",
    "nemesis": ["pause-client"],
    "clients": 5,
    "time_limit_s": 25.0,
    "params": {"resource": "unguarded", "hold_s": 0.4, "acquire_timeout_s": 2.0},
}

# A permit holder (or an rwlock holder) frozen for 1.5 sessions (PAUSE_HOLDER), kazoo's recipes
# and Curator's alike.
SEMAPHORE_PAUSE = {
    "workload": "semaphore",
    "nemesis": ["pause-client"],
    "clients": 5,
    "time_limit_s": 25.0,
    "params": {"permits": 2, "hold_s": 0.4},
}
RWLOCK_PAUSE = {
    "workload": "rwlock",
    "nemesis": ["pause-client"],
    "clients": 5,
    "time_limit_s": 25.0,
    "params": {"hold_s": 0.4},
}

# CURATOR-460's steps: the leader is cut off from every server (silently: DROP rules) 0.5 s into
# its term, for 2 session timeouts. Its ZooKeeper client notices the silence after 2/3 of the
# session timeout (SUSPENDED); the servers expire its session a session timeout after they last
# heard from it, and the next candidate leads; Curator 3+ posts LOST only a whole session
# timeout after SUSPENDED. A listener that tolerates SUSPENDED leads on until LOST: two leaders
# for about 2/3 of a session timeout. The first term is 20 s, so the trigger (armed at 4 s)
# fires on the second election. The leader writes 40 times over its term, asking `holding`
# before each (the application checking its leadership): its writes fail fast (retry_writes
# false: no Curator retry loop hides the moment it knows), and a session of 8 s leaves the
# adapter's SUSPENDED (5.3 s) clear of the servers' expiry (8-8.5 s) at load. A term abandoned
# between two writes leaves the resource half-written (atomicity:half-done-read), in both.
CUT_LEADER = steps(
    sleep(4), on(on_acquire(delay_s=0.5, retries=10), fault("isolate-client", duration="2x"))
)
SELECTOR_460 = {
    "workload": "election",
    "nemesis": ["isolate-client"],
    "clients": 3,
    "time_limit_s": 50.0,
    "session_timeout_s": 8.0,
    "params": {
        "resource": "unguarded",
        "hold_s": 20.0,
        "hold_fixed": True,
        "writes": 40,
        "retry_writes": False,
        "acquire_timeout_s": 40.0,
    },
}
CURATOR_460 = (
    "CURATOR-460 (https://github.com/apache/curator/issues/980): 'Timed tolerance for "
    "connection suspended leads to simultaneous leaders'"
)

# CURATOR-595's steps: one server, a session of 4 s, one permit; while a lease is held the server
# is down for 2 session timeouts (SIGKILL 0.5 s into the hold, restarted at the fault's end).
# The client posts LOST a session timeout after SUSPENDED; the restarted server restores the
# session from its log with a fresh timeout, so the lease node lives on after LOST until the
# server expires it, and only then does a waiter get the permit. The holder's application keeps
# its Lease through LOST (nothing in the recipe takes it back): holds of 20 s outlast the outage
# and the restored session, and the waiter is granted beside it.
SERVER_DOWN = steps(
    sleep(4), on(on_acquire(delay_s=0.5, retries=10), fault("kill-one", duration="2x"))
)
SEMAPHORE_595 = {
    "workload": "semaphore",
    "nemesis": ["kill-one"],
    "nodes": 1,
    "clients": 3,
    "time_limit_s": 50.0,
    "session_timeout_s": 4.0,
    "params": {"permits": 1, "hold_s": 20.0, "hold_fixed": True, "acquire_timeout_s": 40.0},
}
CURATOR_595 = (
    "CURATOR-595 (https://github.com/apache/curator/issues/1112): 'InterProcessSemaphoreV2 "
    "LOST isn't releasing permits for other clients'"
)

ISSUE51 = [
    Scenario(
        "curator-460-selector-tolerates-suspended",
        "LeaderSelector riding out SUSPENDED leads beside the next leader (CURATOR-460)",
        "1. Three LeaderSelector clients (Curator 5.4.0, bookworm), terms of 20 s, a session "
        "of 8 s. 2. 0.5 s into the second term the leader is cut off from every server for "
        "16 s. 3. Its client hears nothing for 2/3 of the session: SUSPENDED. The tolerant "
        "listener (SessionConnectionStateErrorPolicy's rule: only LOST is an error) keeps "
        "leading; the adapter's cancels leadership here. 4. The servers expire the session a "
        "session timeout after they last heard from it, delete its node, and the next "
        "candidate leads. 5. Curator posts LOST a whole session timeout after SUSPENDED: "
        "until then the tolerant leader leads beside the new one. The adapter (leadership "
        "cancelled at SUSPENDED) gave up before the new leader was elected.",
        SELECTOR_460,
        {"curator-java-selector-tolerant": BELIEF, "curator-java-selector": NO_SPLIT},
        source=CURATOR_460,
        schedule=CUT_LEADER,
    ),
    Scenario(
        "etcd-v3lock-orphaned-session",
        "etcd's Lock RPC without a lease: the lock ends silently 60 s after its grant",
        "The v3lock service makes a session for each Lock call from the request's lease; with "
        "none given, concurrency.NewSession grants a lease of its default 60 s TTL, and the "
        "server then orphans the session (Orphan(): no keep-alive). The holder is granted the "
        "lock and holds it for 70 s; at 60 s etcd revokes the orphaned lease, deletes the "
        "lock key, and the waiter queued behind it is granted while the holder still holds: "
        "two holders for the last 10 s, with no fault. With the client's own lease, kept "
        "alive, the same holds never split.",
        {**ORPHANED, "workload": "lock"},
        {"etcd-v3lock-nolease": BELIEF, "etcd-v3lock": NO_SPLIT},
        source=V3LOCK_SOURCE,
    ),
    Scenario(
        "etcd-v3election-orphaned-session",
        "etcd's Campaign RPC without a lease: leadership ends silently 60 s after the election",
        "The v3election service runs Campaign on a session it makes from the request's lease "
        "and orphans, as v3lock does: without a lease, the leader key lives 60 s. A leader "
        "whose term lasts 70 s is still leading when etcd revokes its lease and the waiting "
        "candidate is elected: two leaders for 10 s, with no fault.",
        {**ORPHANED, "workload": "election"},
        {"etcd-v3election-nolease": BELIEF, "etcd-v3election": NO_SPLIT},
        source=V3LOCK_SOURCE,
    ),
    Scenario(
        "python-redis-lock-renewal-paused",
        "python-redis-lock's auto-renewal stops with its frozen holder: the lock expires "
        "while the task runs",
        "python-redis-lock renews its key from a daemon thread of the holder's own process "
        "(every 2/3 of expire). Its issues #85 and #91 report locks expiring while the task "
        "still ran. Here the holder is frozen for 1.5 expiries: its renewal thread is frozen "
        "with it, the key expires, a waiter's SET NX succeeds, and the holder wakes up still "
        "inside its critical section. Its renewal thread then dies on NotAcquired and its "
        "release raises NotAcquired, after the fact; nothing told the application in time.",
        PYPI_REDIS,
        {"python-redis-lock": BELIEF},
        source="python-redis-lock issues #85 and #91 (github.com/ionelmc/python-redis-lock)",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "pottery-redlock-holder-pause",
        "pottery's Redlock holder is frozen past auto_release_time (no fencing, no renewal)",
        "pottery's Redlock (and synchronize, which wraps a call in it) checks nothing after "
        "the acquire: a holder frozen past auto_release_time has its keys expire on every "
        "master, another client reaches a majority, and the frozen one resumes its critical "
        "section beside it (Kleppmann's critique of Redlock). Its release then raises "
        "ReleaseUnlockedLock, after the fact.",
        {**PYPI_REDIS, "params": {"resource": "unguarded", "hold_s": 0.4}},
        {"pottery-redlock": BELIEF},
        source="M. Kleppmann, 'How to do distributed locking' (2016); pottery/redlock.py",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "kazoo-semaphore-holder-pause",
        "kazoo's Semaphore: a permit holder frozen past its session, permits + 1 holders",
        "kazoo's Semaphore keeps is_acquired until release(), as its Lock does: a holder "
        "frozen past its session timeout loses its ephemeral lease node, a waiter creates its "
        "own in the freed slot, and the frozen one resumes still believing it holds a permit. "
        "With 2 permits, three clients believe at once (kazoo's docs leave session loss to the "
        "application's own listener, which this one, as most, does not have).",
        SEMAPHORE_PAUSE,
        {"kazoo-semaphore": _x(("semaphore:excess",))},
        source="kazoo/recipe/lock.py Semaphore (is_acquired cleared only by release)",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "kazoo-rwlock-holder-pause",
        "kazoo's ReadLock/WriteLock: a holder frozen past its session, a writer beside others",
        "kazoo's ReadLock and WriteLock are its Lock with other node names: is_acquired "
        "survives the loss of the session. A holder (reader or writer) frozen past its session "
        "timeout loses its node; the other side acquires, and the frozen one resumes still "
        "believing: a writer beside a reader, or two writers.",
        RWLOCK_PAUSE,
        {"kazoo-rwlock": BELIEF},
        source="kazoo/recipe/lock.py ReadLock/WriteLock (is_acquired cleared only by release)",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "curator-semaphore-v2-holder-pause",
        "Curator's InterProcessSemaphoreV2: a Lease holder frozen past its session, permits + 1 "
        "holders",
        "InterProcessSemaphoreV2 hands out a Lease and keeps no belief of its own: the "
        "application holds the Lease until it closes it. A holder frozen past its session "
        "timeout loses its ephemeral lease node, a waiter takes the freed permit, and the "
        "frozen one resumes with its Lease: with 2 permits, three clients hold at once (as "
        "kazoo's Semaphore, kazoo-semaphore-holder-pause).",
        SEMAPHORE_PAUSE,
        {"curator-java-semaphore-v2": _x(("semaphore:excess",))},
        source="Curator InterProcessSemaphoreV2 / Lease (5.4.0): no session check after acquire",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "curator-rwlock-holder-pause",
        "Curator's InterProcessReadWriteLock: a holder frozen past its session, a writer beside "
        "others",
        "InterProcessReadWriteLock's read and write locks are InterProcessMutexes: "
        "isAcquiredInThisProcess survives the loss of the session (as the mutex's, "
        "CURATOR-206). A holder frozen past its session timeout loses its node; the other "
        "side acquires, and the frozen one resumes still believing: a writer beside a reader, "
        "or two writers (as kazoo's, kazoo-rwlock-holder-pause).",
        RWLOCK_PAUSE,
        {"curator-java-rwlock": BELIEF},
        source="Curator InterProcessReadWriteLock (5.4.0): InterProcessMutex's per-thread belief",
        schedule=PAUSE_HOLDER,
    ),
    Scenario(
        "curator-595-semaphore-lease-outlives-lost",
        "InterProcessSemaphoreV2 across a server restart: LOST frees no permit, and the Lease "
        "outlives it (CURATOR-595)",
        "1. One server, a session of 4 s, one permit, three clients holding for 20 s each. "
        "2. 0.5 s into a hold the server is killed, and restarted 8 s later. 3. The holder's "
        "client is SUSPENDED at once and posts LOST a session timeout later. 4. The restarted "
        "server restores the holder's session from its log with a fresh timeout: its lease "
        "node outlives LOST, and the waiters get no permit until the server expires it "
        "(CURATOR-595's complaint). 5. The holder's application still holds its Lease (the "
        "recipe never takes one back), and once the restored session expires a waiter is "
        "granted the one permit beside it: two holders of one permit.",
        SEMAPHORE_595,
        {"curator-java-semaphore-v2": _x(("semaphore:excess",))},
        source=CURATOR_595,
        schedule=SERVER_DOWN,
    ),
]
