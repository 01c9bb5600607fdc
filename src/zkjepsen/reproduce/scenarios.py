"""A catalogue of known ZooKeeper lock failure modes, each runnable by name.

A scenario is a test spec plus, per recipe, the outcome it expects: the violation kinds that
must appear (see `reproduce.violation_kinds`: `lock:belief` two clients believed they held the
lock, `lock:effect` the resource accepted writes out of lock order, `counter:lost` acknowledged
increments missing) and those that must not. "As expected" is judged from the history's checker
results only; the scenario never tells a checker what fault it injected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zkjepsen.checker import Result, as_result
from zkjepsen.errors import BadInput
from zkjepsen.nemesis.generator import Gen, fault, on, schedule_text, sleep, steps
from zkjepsen.nemesis.triggers import on_invoke, on_release
from zkjepsen.reproduce.replay import violation_kinds
from zkjepsen.spec import TestSpec


@dataclass(frozen=True)
class Expectation:
    present: frozenset[str] = frozenset()  # every one of these must be found
    absent: frozenset[str] = frozenset()  # none of these may be found
    valid: bool = False  # True: the run must be judged valid outright

    def judge(self, valid: Any, results: Result | dict) -> tuple[bool, str]:
        kinds = violation_kinds(results)
        if valid not in (True, False):
            # A run that could not be judged (it tested nothing, or a check gave up) shows
            # neither the presence nor the absence of anything.
            res = as_result(results)
            why = (
                "; ".join(
                    f"{n}: {p.reason}" for n, p in res.parts.items() if p.valid not in (True, False)
                )
                or res.reason
            )
            return False, f"verdict unknown ({why or 'no reason given'})"
        if self.valid:
            return valid is True, f"expected valid, got {valid} {sorted(kinds)}"
        missing, unwanted = self.present - kinds, self.absent & kinds
        ok = not missing and not unwanted
        why = (
            f"found {sorted(kinds) or 'nothing'}"
            + (f"; missing {sorted(missing)}" if missing else "")
            + (f"; unexpected {sorted(unwanted)}" if unwanted else "")
        )
        return ok, why

    def describe(self) -> str:
        if self.valid:
            return "valid (no violation)"
        parts = [f"shows {', '.join(sorted(self.present))}"] if self.present else []
        parts += [f"never {', '.join(sorted(self.absent))}"] if self.absent else []
        return "; ".join(parts)


def _x(
    present: tuple[str, ...] = (), absent: tuple[str, ...] = (), valid: bool = False
) -> Expectation:
    return Expectation(frozenset(present), frozenset(absent), valid)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    why: str
    settings: dict[str, Any]  # TestSpec fields
    expect: dict[str, Expectation] = field(default_factory=dict)  # recipe -> outcome
    source: str = ""  # the ticket or issue this failure mode was reported in
    schedule: Gen | None = None  # a fixed (triggered) schedule instead of the spec's nemesis

    def schedule_text(self) -> str:
        return schedule_text(self.schedule) if self.schedule is not None else ""

    def spec(self, recipe: str, seed: int = 1) -> TestSpec:
        return TestSpec(
            **{
                "nodes": 3,
                "clients": 5,
                "time_limit_s": 40.0,
                "recovery_s": 5.0,
                "session_timeout_s": 3.0,
                "interval_s": 8.0,
                **self.settings,
                "recipe": recipe,
                "seed": seed,
                "name": f"scenario-{self.name}",
            }
        )


BELIEF = _x(("lock:belief",))
# Kill the holder between the two steps of its update. Faults triggered by a history event do
# not exist yet, so the kill is aimed with what does: `kill-client` targets the holder (the
# client that acquired most recently), and a fixed 2 s gap between the two steps (`hold_s` with
# `hold_fixed`) makes a kill that lands ~0.1 s after the holder was picked fall inside it.
# In-process clients: the ready-file protocol creates and deletes a znode, which the client wire
# protocol does not offer.
MID_UPDATE_SETTINGS = {
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
UNGUARDED = {"resource": "unguarded", "hold_s": 0.4}
SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "client-pause",
            "lock holder paused past its session timeout (CURATOR-206 class)",
            "A GC pause longer than the session: the server expires the session and deletes the "
            "lock node, the next waiter takes the lock, the paused holder resumes still believing.",
            {"workload": "counter", "nemesis": ["pause-client"], "params": UNGUARDED},
            {"kazoo": BELIEF, "kazoo-careful": BELIEF, "curator": BELIEF, "predecessor": BELIEF},
        ),
        Scenario(
            "client-pause-fenced",
            "the same pause, with a fenced resource",
            "Fencing (a transaction that checks the holder's own lock node) turns the split holder "
            "into a near miss: two beliefs, but the resource refuses the stale holder's writes.",
            {
                "workload": "lock",
                "nemesis": ["pause-client"],
                "params": {"resource": "fenced", "hold_s": 0.4},
            },
            {"kazoo": _x(("lock:belief",), ("lock:effect", "fencing:backwards"))},
        ),
        Scenario(
            "client-partition",
            "lock holder cut off from every server past its session timeout",
            "The isolated holder sees SUSPENDED but (with kazoo's Lock as-is) keeps believing "
            "until the heal; meanwhile its session expires and another client takes the lock.",
            {"workload": "counter", "nemesis": ["isolate-client"], "params": UNGUARDED},
            {"kazoo": BELIEF},
        ),
        Scenario(
            "blog-waiter-crash",
            "a waiter ahead of another dies (blog-post lock, no fault needed)",
            "ZkDistributedLock never re-lists children: when the node it watches vanishes it "
            "assumes it holds, so killing a waiter (not the holder) makes its successor a second "
            "holder. kazoo's Lock re-lists and is safe.",
            {
                "workload": "lock",
                "nemesis": ["kill-client"],
                "fault_target": "random",
                "clients": 6,
                "interval_s": 4.0,
                "fault_duration_s": 3.0,
                "params": {"resource": "unguarded", "hold_s": 1.0},
            },
            {"blog": BELIEF, "kazoo": _x(absent=("lock:belief",))},
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
            schedule=steps(sleep(3), on(on_release(), fault("proxy-lose-create", duration=2.0))),
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
            "ZooKeeper expires sessions on the leader by its own monotonic clock: a leader at 4x "
            "expires healthy sessions early, so a holder that never paused loses its lock node "
            "while it still believes it holds.",
            # A holder that talks to ZooKeeper less often than timeout/k (here: 4 writes spread over
            # a ~0.6 s hold, the leader at 4x with 3 s sessions) loses its session mid-hold.
            {
                "workload": "lock",
                "nemesis": ["clock-rate-leader"],
                "params": {"resource": "unguarded", "writes": 4, "hold_s": 0.6},
            },
            {"kazoo": BELIEF},
        ),
        *MID_UPDATE,
    ]
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise BadInput(
            f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)} "
            "(`zkjepsen scenario list`)"
        ) from None
