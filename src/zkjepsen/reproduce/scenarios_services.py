"""Catalogue scenarios for the other lock services (backends/registry.py): the Redis locks on
real Redis servers, each keyed to the text that describes its flaw."""

from __future__ import annotations

from zkjepsen.nemesis.generator import fault, lanes, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

BELIEF = _x(("lock:belief",))
NO_SPLIT = _x(absent=("lock:belief",))
# Kleppmann's full case against Redlock: client 2 is cut from two of the five masters (it still
# reaches a majority, n1 and two others; client 1 reaches all five), and once client 2 holds
# through its three, the clock of n1, the master both always share, jumps +60 s: its copy of
# the key expires at once, and client 1 reaches a majority (n1 and the two client 2 cannot see)
# while client 2 still believes. Armed 3 s after the cut began (a sidecar's iptables take up to
# 2-4 s to land on a loaded machine: an acquire before it sits on all five, and the jump would
# split nothing). Holds of exactly 1.5 s and a 0.3 s think time: the cut client takes the lock
# whenever the other releases (with 5 clients, or the default 0.05 s think, the clients that see
# all five always beat it to the masters, it never acquired and the jump never fired).
REDLOCK_CUT = fault("partition-redlock", target="client:2", duration=14.0)
REDLOCK_JUMP = on(
    on_acquire(client=2), fault("clock-bump", target="n1", duration=4.0, offset_s=60.0)
)
REDLOCK_SETTINGS = {
    "workload": "lock",
    "clients": 2,
    "time_limit_s": 20.0,
    "session_timeout_s": 3.0,  # the lock's TTL
    "params": {"resource": "unguarded", "hold_s": 1.5, "hold_fixed": True, "think_s": 0.3},
}
KLEPPMANN = "M. Kleppmann, 'How to do distributed locking' (2016), 'the clock jumps forward'"
FENCED_NO_EFFECT = _x(("lock:belief",), ("lock:effect", "fencing:backwards"))
REDIS = [
    Scenario(
        "setnx-clock-ahead",
        "one client's clock runs ahead of the others by more than the lock timeout (SETNX/GETSET)",
        "The seed's SETNX/GETSET lock judges expiry by each client's own clock: the client "
        "whose clock is ahead (libfaketime in its program, not in the recorder) finds a live "
        "lock 'expired', GETSETs it and holds beside the real holder. No other fault. A "
        "resource that checks the INCR token refuses the older holder's late writes.",
        {
            "workload": "lock",
            "nemesis": ["clock-skew-client"],
            "time_limit_s": 20.0,
            "interval_s": 4.0,
            "params": {"resource": "fenced"},
        },
        {"redis-setnx": FENCED_NO_EFFECT, "redis-set-px": _x(valid=True)},
        source="seed 003's SETNX/GETSET lock (the SETNX docs' old 'handling deadlocks' pattern)",
    ),
    Scenario(
        "set-px-holder-pause",
        "the SET NX PX holder is paused past the TTL",
        "A GC pause longer than the key's TTL: the key expires, another client SETs it, the "
        "paused holder resumes still believing (Kleppmann's critique). The compare-and-delete "
        "keeps its late release from deleting the new holder's key; only a fencing token "
        "checked by the resource keeps its late writes out.",
        {
            "workload": "lock",
            "nemesis": ["pause-client"],
            "time_limit_s": 25.0,
            "params": {"resource": "fenced", "hold_s": 0.4},
        },
        {"redis-set-px": FENCED_NO_EFFECT, "redis-setnx": BELIEF},
        source="M. Kleppmann, 'How to do distributed locking' (2016)",
    ),
    Scenario(
        "set-px-server-clock-jump",
        "the Redis server's clock jumps forward past the lock's TTL while a client holds it",
        "Kleppmann's argument against timing-based Redis locks: Redis expires a key by its own "
        "wall clock (mstime). A jump forward (+60 s, past the 4 s TTL) on the server, through "
        "zkj-timewarp in redis-server, expires the holder's key at once; a waiting client SETs "
        "it and holds beside the first, who still believes. Redlock's five masters outvote one "
        "jumping master: a second holder needs the jump and a cut together (his full case).",
        {
            "workload": "lock",
            "nemesis": ["clock-bump"],
            "time_limit_s": 25.0,
            "interval_s": 4.0,
            "params": {"offset_s": 60.0, "hold_s": 1.0},
        },
        {"redis-set-px": BELIEF, "redlock": _x(valid=True)},
        source=KLEPPMANN,
    ),
    Scenario(
        "kleppmann-redlock-clock-jump",
        "Redlock: a cut gives two clients overlapping majorities, then the shared master's clock "
        "jumps",
        "Kleppmann's full case: client 2 loses two masters and takes the lock on the three it "
        "sees; the clock of n1, a master both clients reach, jumps +60 s (zkj-timewarp in its "
        "redis-server) and expires client 2's key there; client 1 takes n1 and the two masters "
        "client 2 cannot reach, a majority, while client 2 still believes. Neither half alone "
        "splits it (the two controls below): Redlock's safety rests on the masters' clocks.",
        REDLOCK_SETTINGS,
        {"redlock": BELIEF},
        source=KLEPPMANN,
        schedule=lanes(steps(sleep(4), REDLOCK_CUT), steps(sleep(7), REDLOCK_JUMP)),
    ),
    Scenario(
        "kleppmann-redlock-jump-alone",
        "control: the same jump on n1 while client 2 holds, without the cut",
        "Client 2's lock is on all five masters: the jump expires one of its five keys, and client "
        "1 cannot reach a majority.",
        REDLOCK_SETTINGS,
        {"redlock": NO_SPLIT},
        source=KLEPPMANN,
        schedule=steps(sleep(7), REDLOCK_JUMP),
    ),
    Scenario(
        "kleppmann-redlock-cut-alone",
        "control: the same cut, without the jump",
        "Each client still reaches a majority, and any two majorities of five share a master.",
        REDLOCK_SETTINGS,
        {"redlock": NO_SPLIT},
        source=KLEPPMANN,
        schedule=steps(sleep(4), REDLOCK_CUT),
    ),
]
