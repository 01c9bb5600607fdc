"""A catalogue of known lock failure modes (ZooKeeper's, the Redis locks', etcd's), each
runnable by name.

A scenario is a test spec plus, per recipe, the outcome it expects: the violation kinds that
must appear (see `reproduce.violation_kinds`: `lock:belief` two clients believed they held the
lock, `lock:effect` the resource accepted writes out of lock order, `counter:lost` acknowledged
increments missing) and those that must not. "As expected" is judged from the history's checker
results only; the scenario never tells a checker what fault it injected.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire, on_invoke, on_release
from zkjepsen.reproduce.scenario import Expectation, Scenario
from zkjepsen.reproduce.scenario import expect as _x
from zkjepsen.reproduce.scenarios_disk import DISK
from zkjepsen.reproduce.scenarios_disk_etcd import DISK_ETCD
from zkjepsen.reproduce.scenarios_etcd import ETCD
from zkjepsen.reproduce.scenarios_issue51 import ISSUE51
from zkjepsen.reproduce.scenarios_reports import REPORTS
from zkjepsen.reproduce.scenarios_services import REDIS
from zkjepsen.reproduce.scenarios_sessions import SESSIONS

BELIEF = _x(("lock:belief",))
UNGUARDED = {"resource": "unguarded", "hold_s": 0.4}
# Whoever acquires first after 4 s is hit at once; a hit that lands after that hold ended
# (docker pause takes 0.1-0.3 s, a sidecar's iptables 0.3-1 s) is undone and re-armed.
PAUSE_HOLDER = steps(sleep(4), on(on_acquire(retries=10), fault("pause-client", duration="1.5x")))
ISOLATE_HOLDER = steps(sleep(4), on(on_acquire(retries=10), fault("isolate-client", duration="2x")))
# The newest waiter, killed as soon as its node is seen queued behind another (a fixed 0.3 s
# after it asked was too early once in 14 runs on a loaded machine: its create had not landed,
# so the kill left nothing behind); its node outlives it by a session timeout.
KILL_NEW_WAITER = steps(
    sleep(4),
    on(
        on_invoke("acquire", retries=10, waiting_in="/zkjepsen/lock"),
        fault("kill-client", duration=3.0),
    ),
)
# Kill the holder between the two steps of its update. Faults triggered by a history event do
# not exist yet, so the kill is aimed with what does: `kill-client` targets the holder (the
# client that acquired most recently), and a fixed 2 s gap between the two steps (`hold_s` with
# `hold_fixed`) makes a kill that lands ~0.1 s after the holder was picked fall inside it.
# In-process clients: the ready-file protocol creates and deletes a znode, which the client wire
# protocol does not offer.
MID_UPDATE_SETTINGS: dict[str, Any] = {
    "workload": "lock",
    "nemesis": ["kill-client"],
    "clients": 3,
    "client_mode": "in-process",
    "time_limit_s": 20.0,
    "interval_s": 4.0,
    "fault_duration_s": 1.0,
    "params": {
        "resource": "unguarded",
        "writes": 2,
        "hold_s": 2.0,
        "hold_fixed": True,
        "think_s": 0.05,
    },
}
MID_UPDATE = [
    Scenario(
        "holder-dies-mid-update",
        "the holder dies between the two writes of its update",
        "The paper lock gives mutual exclusion, not atomicity: SIGKILL the holder after its "
        "first write, its ephemeral node goes with its session, and the next holder reads the "
        "half-done state. (The kill is aimed at the holder with a 2 s gap between the steps, "
        "not triggered by the write: triggered faults do not exist yet.)",
        MID_UPDATE_SETTINGS,
        {"paper": _x(("atomicity:half-done-read",))},
    ),
    Scenario(
        "holder-dies-mid-update-ready",
        "the same kill, with the ready-file protocol",
        "The writer deletes a `ready` node before its first step and re-creates it after the "
        "last; the next holder finds `ready` missing, knows the state is half-done and redoes "
        "the update: no holder trusts a half-done state.",
        {**MID_UPDATE_SETTINGS, "params": {**MID_UPDATE_SETTINGS["params"], "ready_file": True}},
        {"paper": _x(absent=("atomicity:half-done-read",))},
    ),
]
SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "client-pause",
            "lock holder paused past its session timeout (CURATOR-206 class)",
            "A GC pause longer than the session: the server expires the session and deletes the "
            "lock node, the next waiter takes the lock, the paused holder resumes still believing. "
            "The pause hits whoever acquires first after 4 s, re-armed until it lands in a hold.",
            {
                "workload": "counter",
                "nemesis": ["pause-client"],
                "time_limit_s": 20.0,
                "params": UNGUARDED,
            },
            {"kazoo": BELIEF, "kazoo-careful": BELIEF, "curator": BELIEF, "predecessor": BELIEF},
            source="CURATOR-206 (https://github.com/apache/curator/issues/727)",
            schedule=PAUSE_HOLDER,
        ),
        Scenario(
            "client-pause-fenced",
            "the same pause, with a fenced resource",
            "Fencing (a transaction that checks the holder's own lock node) turns the split holder "
            "into a near miss: two beliefs, but the resource refuses the stale holder's writes.",
            {
                "workload": "lock",
                "nemesis": ["pause-client"],
                "time_limit_s": 20.0,
                "params": {"resource": "fenced", "hold_s": 0.4},
            },
            {"kazoo": _x(("lock:belief",), ("lock:effect", "fencing:backwards"))},
            source="CURATOR-206; fencing tokens (Kleppmann, 'How to do distributed locking')",
            schedule=PAUSE_HOLDER,
        ),
        Scenario(
            "client-partition",
            "lock holder cut off from every server past its session timeout",
            "The isolated holder sees SUSPENDED but (with kazoo's Lock as-is) keeps believing "
            "until the heal; meanwhile its session expires and another client takes the lock. "
            "Holds average 2 s: the isolation (a sidecar's iptables: 0.3-1 s idle, 2-4 s on a "
            "loaded 2-core machine) must land inside one; it is re-armed until it does.",
            {
                "workload": "counter",
                "nemesis": ["isolate-client"],
                "time_limit_s": 40.0,
                "params": {**UNGUARDED, "hold_s": 2.0},
            },
            {"kazoo": BELIEF},
            source="CURATOR-206 (network cut past the session timeout)",
            schedule=ISOLATE_HOLDER,
        ),
        Scenario(
            "blog-waiter-crash",
            "a waiter ahead of another dies (blog-post lock, no fault needed)",
            "ZkDistributedLock never re-lists children: when the node it watches vanishes it "
            "assumes it holds, so killing a waiter (not the holder) makes its successor a second "
            "holder. The newest waiter is killed once its node is queued behind another (re-armed "
            "if it got the lock first): with 1 s holds and up to 5 contenders ahead of it, its "
            "node expires (3 s) before its turn, while a waiter ahead holds. kazoo's Lock and "
            "Curator's InterProcessMutex re-list and are safe (Curator's node holds its host's "
            "address, not `client-N`: the waiter is found by its session).",
            {
                "workload": "lock",
                "nemesis": ["kill-client"],
                "clients": 6,
                "time_limit_s": 20.0,
                "params": {"resource": "unguarded", "hold_s": 1.0, "hold_fixed": True},
            },
            {
                "blog": BELIEF,
                "kazoo": _x(absent=("lock:belief",)),
                "curator-java": _x(absent=("lock:belief",)),
            },
            source="the blog post's ZkDistributedLock (recipes/blog.py, flaw 1)",
            schedule=KILL_NEW_WAITER,
        ),
        Scenario(
            "sort-by-full-name",
            "contenders sorted by full node name (ZOOKEEPER-2931 class)",
            "ZooKeeper's WriteLock recipe compared `x-<sessionId>` before the sequence number, so "
            "a newcomer with a smaller session id jumps the queue: two holders with no fault.",
            {
                "workload": "lock",
                "nemesis": ["none"],
                "time_limit_s": 20.0,
                "params": {"resource": "unguarded"},
            },
            {"writelock-2931": BELIEF, "kazoo": _x(valid=True)},
        ),
        Scenario(
            "lost-create-response",
            "a create whose response is lost (orphan lock node)",
            "The wire proxy in one client's container drops the reply to its next create after "
            "a release (the server applied it; the client sees ConnectionLoss) and the "
            "application drops the lock object without closing it. The blog lock (no GUID in its "
            "node name) cannot find its node again: the orphan, never deleted, blocks every later "
            "acquire. kazoo's Lock retries and finds its node by its uuid prefix (protected mode).",
            {
                "workload": "lock",
                "nemesis": ["proxy-lose-create"],
                "proxy": True,
                "clients": 4,
                "client_mode": "in-process",  # the in-process loop honours abandon_unknown
                "time_limit_s": 25.0,
                "recovery_s": 5.0,
                "params": {
                    "resource": "unguarded",
                    "hold_s": 0.2,
                    "acquire_timeout_s": 30.0,
                    "abandon_unknown": True,
                },
            },
            {
                "blog": _x(("liveness:stuck",)),
                "kazoo": _x(absent=("lock:belief", "liveness:stuck")),
            },
            source="ZOOKEEPER-1262 (Curator's protected mode, kazoo's Lock uuid prefix)",
            # Armed for 4 s: the releaser's next create can beat the proxy command (1 run in
            # 20 with 2 s: seen 48 ms after the release, its next create 20 ms after it; the
            # one after that came 2.3 s later, after the window), so the one after must fit.
            schedule=steps(sleep(3), on(on_release(), fault("proxy-lose-create", duration=4.0))),
        ),
        Scenario(
            "failed-release-node-survives",
            "a release whose delete fails while the session lives on (CURATOR-678 class)",
            "The wire proxy of the client that just released closes its connection instead of "
            "forwarding its next delete: the server never sees it, the client reconnects to the "
            "same session at once, so its lock node survives. CURATOR-678 reports that Curator's "
            "InterProcessMutex.release drops its local lock data although the delete failed, and "
            "every later acquire waits behind the surviving node. kazoo's Lock retries the delete "
            "once reconnected.",
            {
                "workload": "lock",
                "nemesis": ["proxy-drop-request"],
                "proxy": True,
                "clients": 3,
                "time_limit_s": 25.0,
                "recovery_s": 5.0,
                "params": {"resource": "unguarded", "hold_s": 0.3, "acquire_timeout_s": 30.0},
            },
            {"kazoo": _x(absent=("lock:belief", "liveness:stuck"))},
            source="CURATOR-678 (https://github.com/apache/curator/issues/1193)",
            schedule=steps(
                sleep(3), on(on_release(), fault("proxy-drop-request", duration=3.0, op="delete"))
            ),
        ),
        Scenario(
            "leaked-contender",
            "a timed-out acquire whose cleanup delete fails leaks its node (kazoo issue 732 class)",
            "Each attempt uses a new Lock object with a short timeout, as the issue's worker loop "
            "does. kazoo's acquire gives up, then deletes its contender node in "
            "_best_effort_cleanup, which swallows a KazooError: the proxy of the client that just "
            "asked closes its connection instead of forwarding that delete, the client reconnects "
            "to the same session, and its node stays in the queue with no owner. When it reaches "
            "the head nobody ever acquires again while that session lives (PR 760, retrying the "
            "cleanup, is not merged).",
            {
                "workload": "lock",
                "nemesis": ["proxy-drop-request"],
                "proxy": True,
                "clients": 3,
                "time_limit_s": 25.0,
                "recovery_s": 5.0,
                "params": {
                    "resource": "unguarded",
                    "hold_s": 3.0,
                    "hold_fixed": True,
                    "acquire_timeout_s": 0.5,
                    "fresh_lock": True,
                },
            },
            {"kazoo": _x(("liveness:stuck",))},
            source="kazoo issue 732 (https://github.com/python-zk/kazoo/issues/732)",
            # Armed 0.4 s into an attempt that is still waiting (else disarmed and re-armed), so
            # the next delete is that attempt's cleanup, not the release of a lock it got.
            schedule=steps(
                sleep(3),
                on(
                    on_invoke("acquire", delay_s=0.4, retries=10),
                    fault("proxy-drop-request", duration=2.0, op="delete"),
                ),
            ),
        ),
        Scenario(
            "waiter-session-expiry",
            "a waiter's session expires while its connection is healthy",
            "The wire proxy of the client that just asked for the lock answers its pings itself: "
            "the waiter sends nothing else, so the servers expire its session and delete its node "
            "while its TCP connection stays up; then it reconnects with a new session (LOST -> "
            "CONNECTED in the middle of an acquire). kazoo's Lock (issue 282 was an acquire that "
            "hung here) must re-create its node and go on. (The blog lock was tried once: its "
            "acquire ended in SessionExpiredError, no split; not judged.)",
            {
                "workload": "lock",
                "nemesis": ["proxy-drop-pings"],
                "proxy": True,
                "clients": 3,
                "time_limit_s": 25.0,
                "recovery_s": 5.0,
                "params": {"resource": "unguarded", "hold_s": 5.0, "hold_fixed": True},
            },
            {"kazoo": _x(absent=("lock:belief", "liveness:stuck"))},
            source="kazoo issue 282 (acquire hanging after LOST -> CONNECTED)",
            schedule=steps(
                sleep(3), on(on_invoke("acquire"), fault("proxy-drop-pings", duration="2x"))
            ),
        ),
        Scenario(
            "fast-clock-leader",
            "the leader's clock runs fast",
            "ZooKeeper expires sessions on the leader by its own monotonic clock: at 4x with 3 s "
            "sessions, a session not heard from for 0.75 s of real time expires. kazoo pings an "
            "idle connection every timeout/3 = 1 s, so every client that is silent for a second "
            "loses its session. A holder that writes every 0.2 s is never silent that long: the "
            "first version of this scenario (4 writes in a 0.6 s hold) was VALID with 29 LOST "
            "events, 24 on waiting clients, 5 on idle ones, none on a holder. A holder that waits "
            "2 s between its two writes is silent long enough: it loses its lock node mid-hold "
            "while it still believes (7 of 24 LOST events on holders), and a waiter that "
            "re-created its node on a new session takes the lock.",
            {
                "workload": "lock",
                "nemesis": ["clock-rate-leader"],
                "clients": 4,
                "time_limit_s": 25.0,
                "params": {"resource": "unguarded", "writes": 2, "hold_s": 2.0, "hold_fixed": True},
            },
            {"kazoo": BELIEF},
            source="ZooKeeper expires sessions by the leader's clock (see nemesis/clock.py)",
            schedule=steps(
                sleep(3),
                on(on_acquire(), fault("clock-rate-leader", target="leader", duration=15.0)),
            ),
        ),
        *MID_UPDATE,
        *SESSIONS,
        *REDIS,
        *ETCD,
        *REPORTS,
        *DISK,
        *DISK_ETCD,
        *ISSUE51,
    ]
}


__all__ = ["SCENARIOS", "Expectation", "Scenario", "get_scenario"]


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise BadInput(
            f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)} "
            "(`zkjepsen scenario list`)"
        ) from None
