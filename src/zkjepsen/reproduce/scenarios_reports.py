"""Catalogue scenarios for lock failures reported since 2022 (Curator's LeaderLatch, kazoo's
Lock after the servers die, etcd's sessions), each run against the versions Debian ships.

Read at their source: CURATOR-696 (apache/curator#1211, fixed by PR 500 in Curator 5.7.0: the
latch checks that its node's ephemeral owner is its own session before leading); kazoo #282
(open: `Lock.acquire` hanging after the servers were `kill -9`ed and restarted); etcd #17470
(a `concurrency.Session`'s lease "kept alive after the client unexpectedly exits").
"""

from __future__ import annotations

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire, on_invoke
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

BELIEF = _x(("lock:belief",))
LIVE = _x(absent=("liveness:stuck",))
CLEAN = _x(absent=("lock:belief", "liveness:stuck"))

# CURATOR-696's steps, the waiter's side: a latch waits behind the leader; ZooKeeper goes away
# for it past its session (its proxy keeps the old session, and the old node, alive on the
# servers meanwhile); Curator gives the session up on its own clock after SUSPENDED has lasted
# a session timeout, and reconnects at the heal with a new one. LeaderLatch before 5.7.0 answers
# RECONNECTED with getChildren and checkLeadership on its old path: first in line (the leader
# released meanwhile), it leads; the servers expire the old session a session timeout later,
# delete the node, and the other latch leads too.
LATCH_696 = {
    "workload": "election",
    "nemesis": ["proxy-hold-session"],
    "proxy": True,
    "clients": 2,
    "time_limit_s": 30.0,
    "recovery_s": 5.0,
    "params": {
        "resource": "unguarded",
        "hold_s": 6.0,
        "hold_fixed": True,
        "acquire_timeout_s": 30.0,
        "request_timeout_s": 30.0,
    },
}
WAITER_GONE_696 = steps(
    sleep(3),
    on(on_invoke("elected", delay_s=0.3, retries=10), fault("proxy-hold-session", duration=7.0)),
)
CURATOR_696 = "CURATOR-696 (https://github.com/apache/curator/issues/1211), fixed by PR 500"

# CURATOR-724's steps: every client loses ZooKeeper while the servers run on, so the servers
# expire every session, delete the latch nodes and then (every second here, not every minute)
# the empty container node Curator made for the latch. LeaderLatch from 5.4.0 (PR 430) until
# the fix in 5.8.0 (PR 515) answers RECONNECTED with getChildren on that parent and ignores
# NONODE: the waiting latch never makes a node again. The leader resigns inside the cut (its
# 8 s hold outlasts a cut landing up to 4 s late at load) and does not stand again (a think of
# up to two hours): the waiter is the only one left asking.
SERVICE_724 = {"name": "zookeeper", "container_check_ms": 1000}
LATCH_724 = {
    "workload": "election",
    "nemesis": ["isolate-client"],
    "clients": 2,
    "time_limit_s": 30.0,
    "recovery_s": 5.0,
    "service": SERVICE_724,
    "params": {
        "resource": "unguarded",
        "make_lock_path": False,  # the latch's parent is Curator's container node
        "writes": 0,
        "hold_s": 8.0,
        "hold_fixed": True,
        "think_s": 3600.0,
        "acquire_timeout_s": 40.0,
        "request_timeout_s": 45.0,
    },
}
ALL_CUT_724 = steps(
    on(on_acquire(delay_s=1.0), fault("isolate-client", target="all", duration=8.0))
)
CURATOR_724 = (
    "CURATOR-724 (https://github.com/apache/curator/issues/1239), fixed by PR 515 "
    "(https://github.com/apache/curator/pull/515) in Curator 5.8.0"
)

REPORTS = [
    Scenario(
        "curator-696-latch-old-path",
        "LeaderLatch leads on its expired session's node after a reconnect (CURATOR-696)",
        "1. Two LeaderLatch clients (Curator 5.4.0, bookworm); holds of 6 s. 2. The latch that "
        "has waited 0.3 s is cut off from ZooKeeper for 7 s (its proxy keeps its old session "
        "alive). 3. Curator expires the session itself after 3 s of SUSPENDED and reconnects "
        "with a new one at the heal. 4. The latch finds its old node first in line and leads. "
        "5. The servers expire the old session and delete that node; the other latch leads "
        "beside it: two leaders.",
        LATCH_696,
        {"curator-java-latch": BELIEF},
        source=CURATOR_696,
        schedule=WAITER_GONE_696,
    ),
    Scenario(
        "curator-696-latch-old-path-fixed",
        "the same reconnect on Curator 5.7.1 (trixie), after the fix",
        "Steps 1-3 of curator-696-latch-old-path on Curator 5.7.1 (trixie). 4. The latch "
        "checks that its node's ephemeral owner is its new session before leading, finds the "
        "old session's, resets and queues again. 5. The other latch leads; one leader at a "
        "time.",
        {**LATCH_696, "service": {"name": "zookeeper", "client_suite": "trixie"}},
        {"curator-java-latch": _x(absent=("lock:belief",))},
        source=CURATOR_696,
        schedule=WAITER_GONE_696,
    ),
    Scenario(
        "curator-724-latch-parent-gone",
        "LeaderLatch never leads again once its parent node is gone at a reconnect (CURATOR-724)",
        "1. Two LeaderLatch clients (Curator 5.4.0, bookworm); the latch's parent is left to "
        "Curator, which makes it a container node; the servers delete empty containers every "
        "1 s. 2. 1 s into the first 8 s hold, both clients are cut off from every server for "
        "8 s; the leader resigns meanwhile and does not stand again. 3. The servers expire "
        "both sessions (3 s), delete both latch nodes, then the empty parent. 4. At the heal "
        "the waiting latch reconnects with a new session and lists the parent: NONODE, which "
        "LeaderLatch before 5.8.0 ignores. 5. With no node and no watch it never leads: "
        "stuck past the bound, with nobody holding.",
        LATCH_724,
        {"curator-java-latch": _x(("liveness:stuck",))},
        source=CURATOR_724,
        schedule=ALL_CUT_724,
    ),
    Scenario(
        "curator-724-latch-parent-gone-curator2",
        "the same cut on Curator 2.7.1 (bullseye), before the change that brought the bug",
        "Steps 1-3 of curator-724-latch-parent-gone on Curator 2.7.1 (bullseye), which makes "
        "the parent persistent (no container: nothing is deleted). 4. At the heal the latch "
        "resets on RECONNECTED (as before PR 430): a new node, and the waiter leads within "
        "the bound.",
        {**LATCH_724, "service": {**SERVICE_724, "client_suite": "bullseye"}},
        {"curator-java-latch": _x(absent=("liveness:stuck",))},
        source=CURATOR_724,
        schedule=ALL_CUT_724,
    ),
    Scenario(
        "kazoo-282-servers-killed",
        "kazoo's Lock after a majority of the servers is kill -9ed and restarted (kazoo #282)",
        "1. Five kazoo clients contend for the Lock. 2. At the first grant after 5 s two of "
        "the three servers are SIGKILLed: the ensemble stops serving for 8 s. 3. They "
        "restart. 4. Within the liveness bound (the session timeout plus ZooKeeper's "
        "election time) every client still asking gets the lock: kazoo 2.11 reconnects its "
        "sessions and its waiters re-list (no acquire hangs).",
        {
            "workload": "lock",
            "nemesis": ["kill-majority"],
            "time_limit_s": 35.0,
            # one write per hold (a kill mid-update is not this report), and a client op may
            # take 30 s before the harness calls the program hung: servers restarting on a
            # loaded machine answer late
            "params": {
                "resource": "unguarded",
                "hold_s": 0.4,
                "writes": 1,
                "request_timeout_s": 30.0,
            },
        },
        {"kazoo": LIVE},
        source="kazoo issue 282 (https://github.com/python-zk/kazoo/issues/282)",
        # whoever acquires first after 5 s: the kill lands among holds and waits
        schedule=steps(
            sleep(5), on(on_acquire(), fault("kill-majority", target="majority", duration=8.0))
        ),
    ),
    Scenario(
        "etcd-17470-dead-holder-lease",
        "the lock holder's process dies: its session's lease must not outlive it (etcd#17470)",
        "1. Five clients take concurrency.Mutex on a Session with a 2 s "
        "lease. 2. The holder is SIGKILLed as it acquires. 3. Nothing keeps its lease alive: "
        "etcd expires it, deletes the lock key, and the next waiter acquires within the "
        "liveness bound (lease + election time). The report's lease that lived on needs a "
        "client that outlives its lock's user (a goroutine gone, the process alive); a process "
        "that dies takes its keep-alives with it.",
        {
            "session_timeout_s": 2.0,
            "time_limit_s": 20.0,
            "workload": "lock",
            "nemesis": ["kill-client"],
            "params": {"resource": "unguarded", "hold_s": 0.4},
        },
        {"etcd-mutex-go": CLEAN},
        source="https://github.com/etcd-io/etcd/issues/17470",
        schedule=steps(sleep(4), on(on_acquire(retries=10), fault("kill-client", duration=3.0))),
    ),
]
