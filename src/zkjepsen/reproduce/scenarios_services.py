"""Catalogue scenarios for the other lock services (backends/registry.py): the Redis locks on
real Redis servers, each keyed to the text that describes its flaw."""

from __future__ import annotations

from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

BELIEF = _x(("lock:belief",))
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
        source="M. Kleppmann, 'How to do distributed locking' (2016), 'the clock jumps forward'",
    ),
]
