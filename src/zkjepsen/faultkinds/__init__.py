"""Every fault kind, declared once: its name, family, default target and length, what it needs of
the service and of the clients, and its power rule. Below both `nemesis/` (which binds each
declaration to the implementation that resolves, applies and undoes it) and `checker/` (whose
`power.py` reads the rules and names no fault), so neither repeats the other's table.

A fault **needs** abilities: a service declares the ones it has (`BackendInfo.abilities`), and a
fault needing one it lacks would exercise nothing there (no peer servers to cut, no leader, no
libfaketime in the servers); client needs are what the run's clients must offer (the wire proxy
on, a program libfaketime reaches); where needs are not enough, a kind adds a predicate over the
resolved run (`applies`: a ring of majorities needs 4 servers). `refusals(RunFacts)` is the one
answer (facts.py): `test`, `matrix` (an n/a cell with the reason), `gate`, `scenario run`,
`replay`, `shrink` and the hunt read it through `run/resolve.py` `refusals(spec)`.

Its **power rule** says what counts as a landed opportunity (checker/power.py): `silence` (the
target stayed silent for a session timeout while at risk), `instant` (at risk at the fault's
start) or `during` (at risk at some time in its window), whether what it breaks is the servers'
state (a power loss: judged by any lock or fencing violation it precedes), and how it reads in
the power line (`rules.py`). Its **observer** says how it is seen to land at its target
(`landing.py`: a fault whose effect was not observed there is `missed`, and never counts).

Pure data and functions (the abilities' names in `abilities.py`): it imports nothing else of
zkjepsen, and no dataclasses either (named tuples: `zkjepsen check --model lock` reads which
kinds kill a client, and must start light).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from zkjepsen.faultkinds.abilities import (
    ABILITIES as ABILITIES,  # the abilities' words, read by the docs' test and refusals
)
from zkjepsen.faultkinds.abilities import (
    CLIENT_CLOCK,
    DATA_FILES,
    INDEPENDENT_MASTERS,
    LEADER,
    PEERS,
    RECONFIGURE,
    SERVER_CLOCK,
    TERMINATE_SESSION,
    WIRE_PROXY,
    ZK_WIRE,
)
from zkjepsen.faultkinds.declare import FaultKind, kind
from zkjepsen.faultkinds.disk import DISK_KINDS
from zkjepsen.faultkinds.facts import RunFacts, at_least, at_least_clients, refusal
from zkjepsen.faultkinds.landing import Landing, landing_of
from zkjepsen.faultkinds.membership import MEMBERSHIP, ROLLING
from zkjepsen.faultkinds.rules import UNKNOWN_RULE, PowerRule, during, instant, silence

HEAL = "heal"  # the nemesis' op that ends every fault at once between phases: never a fault
# Redlock's cuts put some clients on one side and the holder on the other.
TWO_SIDES = at_least_clients(2, "it cuts some clients off and not the holder: {clients} client(s)")
# A power loss of "a majority" or of "the leader" of one server is that of all of it: refused,
# so no run claims to have tested what it could not.
SEVERAL_SERVERS = at_least(
    2, "its one server is the majority and the leader (use power-loss-one or power-loss-all)"
)


_KINDS = [
    kind("none", "none", "all", "no faults (a baseline run)", None),
    kind(
        "partition-one",
        "partition",
        "one",
        "cut one random server off from the other servers",
        silence(),
        PEERS,
    ),
    kind(
        "partition-leader",
        "partition",
        "leader",
        "cut the current leader off from the other servers",
        silence(),
        PEERS,
        LEADER,
    ),
    kind(
        "partition-halves",
        "partition",
        "all",
        "split the servers into a random minority and majority",
        silence(),
        PEERS,
    ),
    kind(
        "partition-ring",
        "partition",
        "all",
        "majorities ring: every server sees a majority, no two the same one (>= 4 nodes)",
        silence(),
        PEERS,
        # With 3 servers a majority is 2, and no 3 pairs cover a ring of cuts both ways: the
        # implementation once fell back to random halves, a fault other than the one asked for.
        applies=at_least(
            4,
            "a ring of majorities needs at least 4 servers (with {nodes}, no two servers can "
            "see different majorities); give --nodes 4 or more, or use partition-halves",
        ),
    ),
    kind(
        "partition-bridge",
        "partition",
        "all",
        "two halves joined only through one bridge server (>= 3 nodes)",
        silence(),
        PEERS,
        # With 2 servers one is the bridge and the other a half alone: nothing is cut (found
        # by test_applicability_property: an accepted run whose fault would exercise nothing).
        applies=at_least(
            3,
            "a bridge needs a server on each side of it (with {nodes}, nothing would be cut); "
            "give --nodes 3 or more, or use partition-one",
        ),
    ),
    kind(
        "isolate-client",
        "partition",
        "holder",
        "drop every packet between one client (the lock holder if known; target all: every "
        "client) and all servers",
        silence("client-cut", "client-cuts", "cut"),
        duration="2x",
        on_acquire=True,
    ),
    kind(
        "packet-loss",
        "partition",
        "all",
        "drop a random fraction (default 10%) of packets to and from the target servers",
        silence(),
        params=("probability",),
    ),
    kind(
        "kill-one",
        "process",
        "one",
        "SIGKILL one random server, restart it at the end",
        instant(),
        observer="killed",
    ),
    kind(
        "kill-leader",
        "process",
        "leader",
        "SIGKILL the leader, restart it at the end",
        instant("leader-kill while held", "leader-kills while held", "kill"),
        LEADER,
        observer="killed",
    ),
    kind(
        "kill-minority",
        "process",
        "minority",
        "SIGKILL a minority of servers",
        instant(),
        observer="killed",
        applies=at_least(
            3,
            "of {nodes} server(s) there is no minority to hit without hitting half or more; "
            "run it on 3 servers or more",
        ),
    ),
    kind(
        "kill-majority",
        "process",
        "majority",
        "SIGKILL a majority of servers (the ensemble stops serving)",
        instant(),
        observer="killed",
    ),
    kind(
        "pause-server",
        "process",
        "one",
        "freeze one random server (cgroup freezer)",
        silence(),
        observer="frozen",
    ),
    kind(
        "pause-leader",
        "process",
        "leader",
        "freeze the leader (cgroup freezer)",
        silence("leader-pause while held", "leader-pauses while held", "pause"),
        LEADER,
        observer="frozen",
    ),
    kind(
        "pause-client",
        "process",
        "holder",
        "freeze one client (the lock holder if known) for 1.5x its session timeout",
        silence("client-pause", "client-pauses", "pause"),
        duration="1.5x",
        observer="frozen",
        on_acquire=True,
    ),
    kind(
        "kill-client",
        "process",
        "holder",
        "SIGKILL one client (the lock holder if known); it restarts with a new session",
        instant("client-kill", "client-kills", "kill"),
        kills_clients=True,
        observer="killed",
        on_acquire=True,
    ),
    kind(
        "clock-bump",
        "clock",
        "one",
        "step one server's clock by +-1..60 s (params: offset_s; libfaketime, on ZooKeeper, "
        "steps its monotonic clock too; zkj-timewarp, on etcd and Redis, the wall clock only)",
        instant(),
        SERVER_CLOCK,
        params=("offset_s",),
    ),
    kind(
        "clock-strobe",
        "clock",
        "one",
        "flip one server's clock between +d and 0 every ~1.2 s",
        during(),
        SERVER_CLOCK,
        params=("offset_s", "period_s"),
    ),
    kind(
        "clock-rate-leader",
        "clock",
        "leader",
        "run the leader's clock k x fast (params: rate, default 4): it expires sessions k x early",
        during(),
        SERVER_CLOCK,
        LEADER,
        params=("rate",),
    ),
    # Aimed at one server whatever it is: where nobody leads (Redlock's independent masters)
    # the leader's rate fault is refused, and a fast master is what Redlock's drift factor
    # claims to cover.
    kind(
        "clock-rate-one",
        "clock",
        "one",
        "run one random server's clock k x fast (params: rate, default 4): a Redis master "
        "or an etcd leader expires its keys or leases k x early (Redlock: one of its 5)",
        during(),
        SERVER_CLOCK,
        params=("rate",),
    ),
    # On clients: libfaketime (Python, Java) or zkj-timewarp (Go, any other) in the program
    # under test, never in the recorder.
    kind(
        "clock-skew-client",
        "clock",
        "random",
        "step one client program's clock (params: offset_s; default ahead by 2x its lock "
        "TTL / session timeout); the recorder's stamps stay real",
        during(),
        clients=(CLIENT_CLOCK,),
        params=("offset_s",),
    ),
    kind(
        "clock-rate-client",
        "clock",
        "random",
        "run one client program's clock k x fast (params: rate, default 4; Python: the wall "
        "clock only)",
        during(),
        clients=(CLIENT_CLOCK,),
        params=("rate",),
    ),
    kind(
        "pg-terminate-holder",
        "process",
        "holder",
        "PostgreSQL ends one client's lock connection (pg_terminate_backend); postgres backend",
        instant("holder-termination", "holder-terminations", "termination"),
        TERMINATE_SESSION,
        observer="terminated",
    ),
    kind(
        "partition-redlock",
        "partition",
        "all",
        "cut half the clients (not the holder) from 2 of the 5 Redlock masters: each side "
        "still sees a majority (the control for partition-redlock-restart)",
        silence(),
        INDEPENDENT_MASTERS,
        applies=TWO_SIDES,
    ),
    kind(
        "partition-redlock-restart",
        "partition",
        "all",
        "partition-redlock, then SIGKILL and restart (empty: no persistence) a master the cut "
        "half holds the lock through, while it holds",
        silence(),
        INDEPENDENT_MASTERS,
        applies=TWO_SIDES,
        duration="3x",
        observer="dropped+restarted",
    ),
    # Through the wire proxy in the client's container (the run needs proxy = true).
    kind(
        "proxy-lose-create",
        "proxy",
        "holder",
        "the server applies one client's next create (params: n), the client never gets "
        "the reply (ConnectionLoss)",
        during(),
        ZK_WIRE,
        clients=(WIRE_PROXY,),
        duration="2x",
    ),
    kind(
        "proxy-delay-reply",
        "proxy",
        "holder",
        "delay one client's next reply (params: seconds, op) by 2 s",
        during(),
        ZK_WIRE,
        clients=(WIRE_PROXY,),
    ),
    kind(
        "proxy-drop-pings",
        "proxy",
        "holder",
        "answer one client's pings in its proxy: the servers expire an idle session while "
        "its connection stays healthy",
        silence(),
        ZK_WIRE,
        clients=(WIRE_PROXY,),
        duration="2x",
    ),
    kind(
        "proxy-close-after",
        "proxy",
        "holder",
        "close one client's connection right after the reply to its next op "
        "(params: op, n; default create)",
        during(),
        ZK_WIRE,
        clients=(WIRE_PROXY,),
        duration="2x",
    ),
    kind(
        "proxy-drop-request",
        "proxy",
        "holder",
        "close one client's connection instead of forwarding its next op (params: op, n; "
        "default delete): the server never sees it, the client sees ConnectionLoss",
        during(),
        ZK_WIRE,
        clients=(WIRE_PROXY,),
        duration="2x",
    ),
    kind(
        "proxy-hold-session",
        "proxy",
        "holder",
        "cut one client off from every server while its proxy keeps its session alive with its "
        "own pings: the session and its ephemeral nodes outlive the client's view of them",
        silence(),
        ZK_WIRE,
        clients=(WIRE_PROXY,),
        duration="2x",
    ),
    # Disk faults (faultkinds/disk.py): at risk when the power goes, as a kill; what they take
    # outlives their window and shows as a reused token or a backwards write, not a split.
    *(
        kind(
            n,
            "disk",
            t,
            d,
            instant(state=True),
            DATA_FILES,
            *more,
            observer=seen,
            applies=SEVERAL_SERVERS if t in ("majority", "leader") else None,
        )
        for n, t, d, more, seen in DISK_KINDS
    ),
]

# Through the service's own reconfiguration (membership.py): at risk at some time in the window.
_KINDS += [
    kind(n, "process", t, d, during(), PEERS, LEADER, RECONFIGURE, observer="members")
    for n, t, d in MEMBERSHIP
]
_KINDS += [
    kind(n, "process", t, d, during(), PEERS, LEADER, *more, observer="roll")
    for n, t, d, more in ROLLING
]

# name -> declaration: THE table. `nemesis.faults` binds each to its implementation; spec
# validation, `list nemeses`, the refusals and checker/power.py read it (live: a kind added
# here, or by a test, is known to all of them at once).
KINDS: dict[str, FaultKind] = {k.name: k for k in _KINDS}


def refusals(run: RunFacts, names: Collection[str] | None = None) -> dict[str, str]:
    """Every declared fault (or those of `names` it declares) that cannot run in `run`, with
    why: one sentence each, naming the fault, the backend and why (facts.py `refusal`). The
    faults that can are those of KINDS not in it (`applicable`)."""
    asked = KINDS if names is None else {n: KINDS[n] for n in names if n in KINDS}
    return {n: why for n, k in asked.items() if k.power is not None and (why := refusal(k, run))}


def applicable(run: RunFacts) -> list[str]:
    """The faults (not the baseline) that can run in `run`, in declaration order."""
    refused = refusals(run)
    return [n for n, k in KINDS.items() if k.power is not None and n not in refused]


def power_rule(name: str) -> PowerRule | None:
    """The power rule of the kind named `name` in a history; None for what is not a fault (the
    baseline, a heal); `UNKNOWN_RULE` for a kind no declaration knows."""
    if name == HEAL:
        return None
    k = KINDS.get(name)
    return UNKNOWN_RULE if k is None else k.power


def landing(kind_name: str, start_value: Any, end_value: Any) -> Landing:
    """Did the fault whose nemesis records (their `value` tables) are `start_value` and
    `end_value` land? (landing.py) For a kind no declaration knows, what the nemesis recorded
    when it knew it (`observed`), if anything."""
    k = KINDS.get(kind_name)
    return landing_of(k.observer if k else None, start_value, end_value, known=k is not None)


def boots_servers(name: str) -> bool:
    """A kind that stops servers and boots them again at its end (the disk family, on the
    files it left them) or step by step (a roll): a server still down after it is a
    `recovery` finding of the run (checker/recovery.py)."""
    k = KINDS.get(name)
    return k is not None and k.power is not None and (k.power.state or k.observer == "roll")


def acquire_triggered() -> frozenset[str]:
    """The kinds aimed at the holder that are best fired on an acquire (FaultKind.on_acquire):
    `test`'s default trigger for them, `acquired-each`'s only kinds, what shrink retargets."""
    return frozenset(n for n, k in KINDS.items() if k.on_acquire)


# The default targets that name a client: a trigger's event (the client that acquired) can aim
# such a fault. A fault on servers (the leader, one, a majority, all) fired on a client's event
# takes the event's moment, not its client: `kill-leader` on an acquire kills the leader then
# (aimed at `client:3` it once stopped the run: "no server named client:3"). The disk family is
# the exception: handed the event's client, it waits for that client's acknowledged write and
# then hits its own servers (nemesis/disk.py: "when, not whom"; the power-loss scenarios).
CLIENT_TARGETS = frozenset({"holder", "random"})
TAKES_THE_EVENTS_CLIENT = frozenset({"disk"})


def aimed_by_trigger(name: str) -> bool:
    """Whether a fault of kind `name` fired on a trigger is handed the client the event names
    (its default target is a client, or its family reads that client as its moment), or only
    timed by it (any other server fault; unknown kinds: no)."""
    k = KINDS.get(name)
    return k is not None and (k.target in CLIENT_TARGETS or k.family in TAKES_THE_EVENTS_CLIENT)


def client_killers() -> frozenset[str]:
    """The kinds whose start ends the target clients' processes."""
    return frozenset(n for n, k in KINDS.items() if k.kills_clients)
