"""Fencing checker: what the protected resource accepted must follow lock order.

Per resource, over accepted (`ok`) writes:
- **Never backwards**: no accepted write after an accepted write with a larger token. "After" is
  the resource's own order when every write recorded the resource's version after it; else only
  what real time makes certain (invoked after the other completed).
- **A change of token means a change of holder**: a token is granted by exactly one acquisition
  (two `ok` acquires of one lock with the same token is a violation), and every accepted write
  carries a token its own client was granted (a write whose token was granted to another client,
  or to nobody while acquisitions are recorded, is a violation). So consecutive accepted writes
  with different tokens come from different holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.attribution import disk_fault_before
from zkjepsen.checker.lock import in_version_order, out_of_version_order
from zkjepsen.checker.lock_observe import Hold, LockObservations, Write, observe
from zkjepsen.history import History, Op, fault_windows, faults_during
from zkjepsen.history.stream import paused_gc


class FencingChecker:
    KINDS = ("backwards", "reused-token", "foreign-token")

    def __init__(
        self,
        acquire: Iterable[str] = ("acquire",),
        release: Iterable[str] = ("release",),
        write: Iterable[str] = ("write",),
        max_reported: int = 50,
    ) -> None:
        self.names = (tuple(acquire), tuple(release), tuple(write))
        self.max_reported = max_reported

    def check(self, history: History | list[Op]) -> Result:
        # One pass (a streamed history is read once); faults from the nemesis ops it kept.
        with paused_gc():
            obs = observe(history, *self.names)
        faults = fault_windows(obs.nemesis)
        backwards = _backwards(obs.writes, faults)
        reused, token_owner = _reused_tokens(obs.holds, faults)
        foreign = _foreign_tokens(obs, token_owner, faults)
        cap = self.max_reported
        details = {
            "accepted_writes": len(obs.writes),
            "rejected_writes": obs.rejected_writes,
            "backwards_count": len(backwards),
            "backwards": backwards[:cap],
            "reused_token_count": len(reused),
            "reused_tokens": reused[:cap],
            "foreign_token_count": len(foreign),
            "foreign_tokens": foreign[:cap],
        }
        violations = (
            [_violation("backwards", b) for b in backwards[:cap]]
            + [_violation("reused-token", r) for r in reused[:cap]]
            + [_violation("foreign-token", f) for f in foreign[:cap]]
        )
        if violations:
            counts = {
                "backwards": len(backwards),
                "reused-token": len(reused),
                "foreign-token": len(foreign),
            }
            return Result(False, details, violations, counts={k: n for k, n in counts.items() if n})
        if not obs.writes:
            # Fencing is judged on what the resource accepted: with no accepted write there is
            # no order to judge, however many tokens were granted (a history of acquires and
            # releases only, or a run whose every write was refused or lost).
            granted_n = sum(not h.maybe for h in obs.holds)
            why = (
                f"no write was accepted ({granted_n} acquire(s) succeeded, "
                f"{obs.rejected_writes} write(s) rejected, {obs.unknown_writes} unknown)"
                if granted_n
                else "no acquire succeeded and no write was accepted"
            )
            return Result("unknown", {**details, "reason": why + ": fencing was not tested"})
        return Result(True, details)


def _backwards(writes: list[Write], faults: list[Any]) -> list[dict[str, Any]]:
    """Accepted writes after an accepted write with a larger token, per resource."""
    backwards: list[dict[str, Any]] = []
    by_key: dict[Any, list[Write]] = {}
    for w in writes:
        if w.token is not None:
            by_key.setdefault(w.key, []).append(w)
    for key, ws in by_key.items():
        if in_version_order(ws):
            # The resource's versions give its exact acceptance order (see lock.py).
            for w, top, _ in out_of_version_order(ws):
                # In version order top came first, but its ack can come later in real time
                # (a power loss took the resource's versions back as well): the window is
                # ordered, and spans both writes.
                last = max(top.end, w.end)
                backwards.append(
                    {
                        "resource": key,
                        "clients": [top.client, w.client],
                        "tokens": [top.token, w.token],
                        "versions": [top.version, w.version],
                        "window": [min(top.end, w.end), last],
                        "faults": faults_during(faults, min(top.start, w.start), last),
                        **disk_fault_before(faults, last),
                    }
                )
        else:
            backwards += _backwards_in_real_time(key, ws, faults)
    return backwards


def _backwards_in_real_time(key: Any, ws: list[Write], faults: list[Any]) -> list[dict[str, Any]]:
    """The backwards writes real time makes certain: invoked after a write with a larger token
    completed. Swept by time; at equal times a completion counts as before an invoke (as
    lock.py)."""
    backwards = []
    events = sorted(
        [(w.end, 0, i) for i, w in enumerate(ws)] + [(w.start, 1, i) for i, w in enumerate(ws)]
    )
    top = None  # the completed write with the largest token so far
    for _t, kind, i in events:
        w = ws[i]
        if kind == 0:
            if top is None or w.token > top.token:
                top = w
        elif top is not None and w.token < top.token:  # top completed before w began
            backwards.append(
                {
                    "resource": key,
                    "clients": [top.client, w.client],
                    "tokens": [top.token, w.token],
                    "window": [top.end, w.end],
                    "faults": faults_during(faults, top.end, w.end),
                    **disk_fault_before(faults, w.end),
                }
            )
    return backwards


def _reused_tokens(
    holds: list[Hold], faults: list[Any]
) -> tuple[list[dict[str, Any]], dict[Any, set[Any]]]:
    """Tokens granted twice for one lock, and each token's clients (over certain holds). Its
    window runs from the earlier grant to the later: the fencing counter went back in it."""
    granted: dict[tuple[Any, Any], Hold] = {}  # (lock, token) -> its last grant
    token_owner: dict[Any, set[Any]] = {}
    reused = []
    for h in holds:
        if h.maybe or h.token is None:
            continue
        prev = granted.get((h.key, h.token))
        if prev is not None:
            lo, hi = sorted((prev.start, h.start))
            reused.append(
                {
                    "lock": h.key,
                    "token": h.token,
                    "clients": [prev.client, h.client],
                    "window": [lo, hi],
                    "faults": faults_during(faults, lo, hi),
                    **disk_fault_before(faults, hi),
                }
            )
        granted[(h.key, h.token)] = h
        token_owner.setdefault(h.token, set()).add(h.client)
    return reused, token_owner


def _foreign_tokens(
    obs: LockObservations, token_owner: dict[Any, set[Any]], faults: list[Any]
) -> list[dict[str, Any]]:
    """Accepted writes whose token was granted to another client, or to nobody (judged only
    when some acquisition recorded a token)."""
    maybe_tokens = {h.token for h in obs.holds if h.maybe}
    foreign = []
    if token_owner:
        for w in obs.writes:
            owners = token_owner.get(w.token)
            if w.token is None or w.token in maybe_tokens:
                continue
            if owners is None or w.client not in owners:
                foreign.append(
                    {
                        "resource": w.key,
                        "client": w.client,
                        "token": w.token,
                        "granted_to": sorted(owners or (), key=repr),
                        "window": [w.start, w.end],
                        "faults": faults_during(faults, w.start, w.end),
                        **disk_fault_before(faults, w.start),
                    }
                )
    return foreign


def _violation(kind: str, rec: dict[str, Any]) -> Violation:
    """A reported finding as a typed violation (its dict stays in the details as before)."""
    window = rec.get("window") or [None, None]
    clients = rec["clients"] if "clients" in rec else [rec["client"]]
    evidence = {k: v for k, v in rec.items() if k not in ("clients", "window", "faults")}
    return Violation(
        kind, tuple(clients), window[0], window[1], tuple(rec.get("faults", ())), evidence
    )
