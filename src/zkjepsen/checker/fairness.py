"""Who got the lock, who starved, and which releases failed: what `exercised` and `liveness`
need to tell a lock that was tested from one that was not.

**Starved or untested.** A client that asked for the lock and never got it is *starved* when
every attempt of its ended cleanly, certainly not holding (`fail` with no error or a timeout;
or still waiting when the run ended), it logged no error event, and some other client got
the lock while it was asking: the lock worked, just not for it. That is a finding about the
lock's fairness (a `NOWAIT` poller loses to whoever re-asks first), reported by `liveness`.
Any other client that never got the lock is *untested*: an attempt ended unknown (`info`),
failed with an error, or nobody got the lock meanwhile; `exercised` keeps that run UNKNOWN.

**Failed releases.** A release that did not complete `ok` leaves its client unsure whether
it still holds. The belief checks stay sound (a belief ends when the release is invoked),
but exclusion against that possible holder is no longer observed: its node may live on while
the next client is granted the lock, and the harness throws the lock object away, so what
frees the lock is its cleanup, not the recipe's release. During a fault (and a grace after
it) that is the expected price of the fault, as Jepsen treats every indeterminate op; with no
fault active it is the recipe not doing its job, and the hand-over was not tested.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkjepsen.history import NEMESIS, Op, fault_windows

S = 1_000_000_000
# How a definite "not acquired" reads when it is only the lock being busy: the recipe returned
# nothing in time (`timeout`, the wire protocol's word too), or kazoo's own LockTimeout.
CLEAN_FAILS = frozenset({None, "timeout", "LockTimeout"})
ERROR_EVENTS = ("client-error", "recipe-error")


def fault_grace_ns(ops: Iterable[Op], grace_ns: int) -> int:
    """How long after a fault its effects may still show: `grace_ns`, or 1.5x the longest
    session timeout the clients recorded (a stale holder's lock node may live that long)."""
    timeouts = [
        op.value.get("timeout_ms") or 0
        for op in ops
        if op.type == "event" and op.f == "session" and isinstance(op.value, dict)
    ]
    return max(grace_ns, int(1.5 * max(timeouts, default=0) * 1_000_000))


def _calls(ops: list[Op], fs: frozenset[str]) -> dict[Any, list[tuple[int, Op | None]]]:
    """actor -> [(invoke time, completion or None)] of its ops named in `fs`, in order."""
    pending: dict[Any, int] = {}
    out: dict[Any, list[tuple[int, Op | None]]] = {}
    for op in ops:
        if op.process == NEMESIS or op.type == "event":
            continue
        if op.type == "invoke":
            if op.f in fs:
                calls = out.setdefault(op.actor, [])
                pending[op.process] = len(calls)
                calls.append((op.time, None))
            else:
                pending.pop(op.process, None)
            continue
        i = pending.pop(op.process, None)
        if i is not None and op.f in fs:
            calls = out[op.actor]
            calls[i] = (calls[i][0], op)
    return out


def fairness(ops: list[Op], acquire: Iterable[str], gap_s: float = 1.0) -> dict[str, Any]:
    """Acquisitions per client, each client's longest wait (s: from asking to getting the lock
    or giving up, attempts joined when the next began within `gap_s` of the last one's end),
    the starved clients and the untested ones (client -> why); see the module docstring."""
    client_ops = [op for op in ops if op.process != NEMESIS]
    end = client_ops[-1].time if client_ops else 0
    calls = _calls(client_ops, frozenset(acquire))
    errored = {op.actor for op in client_ops if op.type == "event" and op.f in ERROR_EVENTS}
    grants = sorted(
        (c.time, actor) for actor, cs in calls.items() for _, c in cs if c and c.type == "ok"
    )
    acquisitions = {a: sum(1 for _, c in cs if c and c.type == "ok") for a, cs in calls.items()}
    longest: dict[Any, float] = {}
    starved, untested = [], {}
    for actor, cs in calls.items():
        longest[actor] = round(_longest_wait(cs, end, int(gap_s * S)) / S, 3)
        if acquisitions[actor]:
            continue
        first, last = cs[0][0], max((c.time if c else end) for _, c in cs)
        others = any(a != actor and first <= t <= last for t, a in grants)
        unclean = [c for _, c in cs if c is not None and not _clean(c)]
        if unclean:
            c = unclean[0]
            untested[actor] = f"an acquire ended {c.type} ({c.extra.get('error') or 'no error'})"
        elif actor in errored:
            untested[actor] = "it logged error events"
        elif not others:
            untested[actor] = "nobody got the lock while it asked"
        else:
            starved.append(actor)
    return {
        "acquisitions": acquisitions,
        "longest_wait_s": longest,
        "starved": sorted(starved, key=str),
        "untested": untested,
    }


def _clean(c: Op) -> bool:
    return c.type == "fail" and c.extra.get("error") in CLEAN_FAILS


def _longest_wait(cs: list[tuple[int, Op | None]], end: int, gap_ns: int) -> int:
    longest, since, prev_done = 0, None, 0
    for start, c in cs:
        done = c.time if c is not None else end
        if since is None or start - prev_done > gap_ns:
            since = start  # a new stretch of asking
        longest = max(longest, done - since)
        if c is not None and c.type == "ok":
            since = None  # got it: the next attempt starts a new wait
        prev_done = done
    return longest


def starved_note(fair: dict[str, Any]) -> str:
    """One sentence on starvation, "" when nobody starved."""
    if not fair["starved"]:
        return ""
    waits = fair["longest_wait_s"]
    counts = sorted(fair["acquisitions"].values())
    return (
        f"starvation: client(s) {', '.join(map(str, fair['starved']))} never got the lock while "
        f"others did (longest wait {max(waits[c] for c in fair['starved']):.1f} s); "
        f"acquisitions per client {counts[0]}-{counts[-1]}"
    )


def release_failures(
    ops: list[Op], release: Iterable[str], grace_ns: int
) -> tuple[int, list[Op], list[Op]]:
    """(releases that completed, the failed ones in a fault or its grace, the failed ones
    with no fault active). Failed: `fail` or `info`; a release still pending at the end is
    neither."""
    windows = [(w.start, None if w.end is None else w.end + grace_ns) for w in fault_windows(ops)]
    done = 0
    during: list[Any] = []
    outside: list[Any] = []
    for actor_calls in _calls(ops, frozenset(release)).values():
        for start, c in actor_calls:
            if c is None:
                continue
            done += 1
            if c.type == "ok":
                continue
            hit = any(a <= c.time and (b is None or start <= b) for a, b in windows)
            (during if hit else outside).append(c)
    return done, during, outside
