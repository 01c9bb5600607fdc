"""Catalogue scenarios about a client's view of its own session and lock node: a new session
that meets the old session's node (CURATOR-604), and a re-entrant release that frees the lock
under the outer holder (kazoo issue 291)."""

from __future__ import annotations

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_invoke
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

BELIEF = _x(("lock:belief",))
SAFE = _x(absent=("lock:belief", "liveness:stuck"))

# Why a new session can meet its old session's node at all: on ZooKeeper 3.8 the servers order
# the expiry of a session (closeSession, which deletes its ephemerals) before the createSession
# of any session the client opens after being told "expired", and a server answers a connect
# only once it has applied that createSession. So a client that learns of its expiry from the
# servers (kazoo: only from a connect answer with timeout 0) never sees its old nodes from its
# new session. Curator gives its session up on its own clock instead: after SUSPENDED has
# lasted the session timeout it injects an expiry and opens a new session, while the servers
# may still keep the old one. `proxy-hold-session` makes that window as long as the fault: the
# client is cut off, its proxy keeps the old session alive with its own pings.
STALE_EPHEMERAL = Scenario(
    "stale-ephemeral-quick-reconnect",
    "a new session meets its old session's lock node (CURATOR-604 class)",
    "Two clients, holds of 6 s. The client that has waited 0.3 s in acquire is cut off for 7 s "
    "while its proxy keeps its session (and its lock node) alive on the servers. Curator "
    "injects a session expiry after 3 s of SUSPENDED and reconnects with a new session at the "
    "heal; its lock loop, still running, finds its node by name (not by owner) first in line "
    "and acquires on the old session's node, which the servers delete a session timeout "
    "later: the other client acquires beside it. kazoo never gives a session up itself: it "
    "reconnects to the same, still-live session and is safe.",
    {
        "workload": "lock",
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
            # Curator's retry policy (the driver's: half the request timeout) must outlast the
            # 7 s cut-off, so the lock loop survives to list children from the new session.
            "request_timeout_s": 30.0,
        },
    },
    {"curator-java": BELIEF, "kazoo": SAFE},
    source="CURATOR-604 (https://github.com/apache/curator/issues/1121); CURATOR-498",
    schedule=steps(
        sleep(3),
        on(
            on_invoke("acquire", delay_s=0.3, retries=10),
            fault("proxy-hold-session", duration=7.0),
        ),
    ),
)
REENTRANT_RELEASE = Scenario(
    "reentrant-release",
    "a nested release frees the lock under the outer holder (kazoo issue 291 class)",
    "The holder calls a helper that takes the same lock again (`with lock:` inside `with "
    "lock:`), writes once and releases that inner level, then finishes its own critical "
    "section. kazoo 2.0's Lock let the nested acquire through but deleted the node at the "
    "first release: the rest of the outer section runs while the next waiter holds. No fault "
    "needed. Curator's InterProcessMutex (the port) counts re-entries and stays safe.",
    {
        "workload": "lock",
        "nemesis": ["none"],
        "clients": 3,
        "client_mode": "in-process",  # the nested section is in the in-process loop only
        "time_limit_s": 20.0,
        "params": {"resource": "unguarded", "hold_s": 1.0, "hold_fixed": True, "nested": True},
    },
    {"kazoo-291": BELIEF, "curator": _x(absent=("lock:belief", "lock:effect"))},
    source="kazoo issue 291 (https://github.com/python-zk/kazoo/issues/291), fixed by PR 293",
)
SESSIONS = [STALE_EPHEMERAL, REENTRANT_RELEASE]
