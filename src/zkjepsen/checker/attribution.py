"""Which faults a violation is attributed to: one mechanism for every checker that can see
lost state (issues 34 and 47).

A violation names the faults its window met (`Violation.faults`, `history.faults_during`). A
disk fault (a power loss, a torn write, a corrupt file: by its kind's family) takes state that
outlives its window: a lock node, a lease, a fencing counter, acknowledged increments. What it
took shows later, between clients it never hit: a token granted again, a backwards write, a
read below the acknowledged increments. So a violation of a kind that can show lost state
(`LOST_STATE_KINDS`) also names the last disk fault that began before it, as its evidence
`after_disk_fault` (the fault's window: fault_id, f, targets, start, end). The verdict line
says it ("during no fault, after power-loss-all at 24.63s", report/summary.py) and the power
line counts it against that fault (checker/power.py).

"Before it" is before the violation's window starts: for a read out of bounds, the read's
invoke; for lost increments, the final read's. With several disk faults before a final read,
the last is named: the checker cannot tell which one took the increments.

**Which landed faults a violation counts against** in the power line (checker/power.py,
docs/verdicts.md), `counts_against`; T is the timeout the fault had to exceed:
- a fault on the lock's clients or servers: a violation of the property judged whose window
  [start, end] meets [fault start, fault end + T] (a split begins while the holder is frozen; a
  stale write lands just after the thaw), **whoever it names**: a waiter's death, a frozen
  holder's, lets two other clients hold at once, and that split is what the fault made
  possible. The one exception keeps independent locks apart: against a fault aimed at clients,
  a violation whose clients are all other clients that took only locks none of the fault's
  at-risk clients took (a run with `locks=2`) does not count. A fault on servers hits every lock
  they serve; a client that took no lock, or a violation that names nobody, is on every lock.
- a fault that breaks the servers' state (`PowerRule.state`: the disk family): a violation of a
  kind in LOST_STATE_KINDS, whatever the property judged and whoever it names, whose window
  meets [fault start, fault end + T], or that its checker names as following it
  (`after_disk_fault`: by kind, fault id and start).
One violation counts against every landed fault it meets. A violation with no time counts
against none. Counting a violation against more faults only raises the per-fault bound: the
power line never reads better for it, and any violation already makes the verdict INVALID.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from zkjepsen.checker import Violation
from zkjepsen.faultkinds import KINDS
from zkjepsen.history import NEMESIS, FaultWindow, Op, faults_during

S = 1_000_000_000

# The violation kinds lost server state can cause: the lock's and the fence's (a lock node or
# the fencing counter gone), the counter's (acknowledged increments gone), a register's (the
# linearizability checker does not place its violation: `zkjepsen check` of a register history
# would load the fault kinds for it).
LOST_STATE_KINDS = frozenset(
    {
        "belief",
        "careful",
        "effect",
        "backwards",
        "reused-token",
        "foreign-token",
        "read-out-of-bounds",
        "lost",
        "not-linearizable",
    }
)


def disk_fault_before(faults: list[FaultWindow], start: int | None) -> dict[str, Any]:
    """`{"after_disk_fault": window}`: the last disk fault that began at or before `start`
    (module docstring); {} when none did or the violation has no time."""
    if start is None:
        return {}
    disk = [
        w for w in faults if w.start <= start and getattr(KINDS.get(w.f), "family", "") == "disk"
    ]
    return {"after_disk_fault": max(disk, key=lambda w: w.start)._asdict()} if disk else {}


def attributed(v: Violation, faults: list[FaultWindow]) -> Violation:
    """`v` with the faults its window met (unless it names some already) and, for a kind lost
    state can cause, the disk fault before it (unless it names one already). A violation with no
    time is returned as it is: nothing places it."""
    if v.start is None:
        return v
    met = v.faults or tuple(faults_during(faults, v.start, v.end))
    evidence = dict(v.evidence)
    if v.kind in LOST_STATE_KINDS and "after_disk_fault" not in evidence:
        evidence.update(disk_fault_before(faults, v.start))
    return Violation(v.kind, v.clients, v.start, v.end, met, evidence)


class Landed(Protocol):
    """A landed fault as the power line sees it (checker/power.py's Opportunity)."""

    @property
    def kind(self) -> str: ...
    @property
    def fault_id(self) -> Any: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def clients(self) -> tuple[Any, ...]: ...  # its at-risk clients
    @property
    def timeout_s(self) -> float: ...  # T


def counts_against(
    v: Violation, fault: Landed, *, state: bool, on_clients: bool, locks: dict[Any, set[Any]]
) -> bool:
    """Whether `v` counts against the landed `fault` (module docstring). `state`: the fault
    breaks the servers' state; `on_clients`: it was aimed at clients; `locks`: `locks_of`."""
    if v.start is None:
        return False
    if state:
        return v.kind in LOST_STATE_KINDS and (_named(v, fault) or _meets(v, fault))
    return _meets(v, fault) and not _apart(v, fault, on_clients, locks)


def locks_of(ops: Iterable[Op], acquire: Iterable[str]) -> dict[Any, set[Any]]:
    """client -> the lock keys it invoked an acquire of."""
    acq = frozenset(acquire)
    locks: dict[Any, set[Any]] = {}
    for op in ops:
        if op.type == "invoke" and op.f in acq and op.process != NEMESIS:
            locks.setdefault(op.actor, set()).add(op.key)
    return locks


def _meets(v: Violation, fault: Landed) -> bool:
    """The violation's window meets [fault start, fault end + T]."""
    grace = int(fault.timeout_s * S)
    return (
        v.start is not None
        and v.start <= fault.end + grace
        and (v.end is None or v.end >= fault.start)
    )


def _named(v: Violation, fault: Landed) -> bool:
    """The checker found `fault` the last disk fault before `v` (by its start too when it has
    one: a re-armed trigger's attempts share a fault id)."""
    disk = v.evidence.get("after_disk_fault")
    return isinstance(disk, dict) and (
        disk.get("f"),
        disk.get("fault_id"),
        disk.get("start", fault.start),
    ) == (fault.kind, fault.fault_id, fault.start)


def _apart(v: Violation, fault: Landed, on_clients: bool, locks: dict[Any, set[Any]]) -> bool:
    """`v` is on other locks than a client fault's at-risk clients were after: every client it
    names is not at risk and took only locks none of them took."""
    risk: set[Any] = set().union(*(locks.get(c, ()) for c in fault.clients))
    return (
        on_clients
        and bool(risk)
        and bool(v.clients)
        and all(
            c not in fault.clients and bool(locks.get(c)) and not locks[c] & risk for c in v.clients
        )
    )


__all__ = [
    "LOST_STATE_KINDS",
    "Landed",
    "attributed",
    "counts_against",
    "disk_fault_before",
    "locks_of",
]
