"""Atomicity of multi-step updates: no holder may read a half-done state left by another holder.

The ZooKeeper paper's lock (and every lock) gives mutual exclusion, not atomicity: a holder that
dies (or loses its lock) between two writes of one update leaves the resource half-done, and the
next holder reads it. Judged from the resource's own recorded reads and writes, never from a
workload's `half-done-seen` event, so imported histories are judged the same way.

What the history must carry (the `lock` workload with `writes` >= 2 records exactly this):
- writes: `f: "write"`, `key` = resource, invoke `value = {"token": t, "step": i, "steps": n}`,
  `ok` value may carry `version` (the resource's version after the write);
- reads inside a hold: `f: "read"`, `key` = resource, invoke `value = {"token": reader's token}`
  (optional: else the reader's current hold is taken from its acquires), `ok` value = what the
  resource held: `{"step", "steps", "state", "writer", "writer_token", "version"}`, and
  `ready`: whether the ready node existed (the ready-file protocol), absent when not used.

A read sees an **incomplete** state when `step < steps` (or, without steps, `state == "half"`).
It is an **atomicity violation** when the state was written by another hold (another token; with
no tokens, another client) and the reader was not told: `ready` is not False. A read that saw the
incomplete state with `ready: False` is **detected**: the ready-file protocol did its job (the
reader knows not to trust it and redoes the update) - counted, not a violation.

Each violation (kind `half-done-read`) names both clients (the one that left the state, the one
that read it), both tokens, the window [the accepted write that left the state (its completion;
the read's invoke when that write is not in the history as `ok`), the read's completion], and
the nemesis faults that intersect it. Verdict: False on any violation; "unknown" when the
history holds no read of a multi-step resource (nothing was exercised); else True.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result, Violation, unknown
from zkjepsen.history import NEMESIS, History, Op, fault_windows, faults_during

KIND = "half-done-read"


def incomplete(v: dict[str, Any]) -> bool:
    """Is this recorded resource state a half-done update?"""
    step, steps = v.get("step"), v.get("steps")
    if isinstance(step, int) and isinstance(steps, int):
        return step < steps
    return v.get("state") == "half"


class AtomicityChecker:
    KINDS = (KIND,)

    def __init__(
        self,
        acquire: Iterable[str] = ("acquire",),
        release: Iterable[str] = ("release",),
        write: Iterable[str] = ("write",),
        read: Iterable[str] = ("read",),
        max_reported: int = 50,
    ) -> None:
        self.acq, self.rel = frozenset(acquire), frozenset(release)
        self.wr, self.rd = frozenset(write), frozenset(read)
        self.max_reported = max_reported

    def check(self, history: History | list[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        writes, reads = self._writes_and_reads(ops)
        reads = [r for r in reads if any(k in r[1].value for k in ("step", "state"))]
        if not reads:
            return unknown(
                "no read of a multi-step resource was recorded: nothing exercised the "
                "atomicity of an update",
                reads=0,
                accepted_writes=len(writes),
            )
        faults = fault_windows(ops)
        violations, detected = _half_done_reads(reads, writes)
        cap = self.max_reported
        for rec in violations[:cap] + detected[:cap]:
            rec["faults"] = faults_during(faults, rec["start"], rec["end"])
        details = {
            "reads": len(reads),
            "accepted_writes": len(writes),
            "half_done_read_count": len(violations),
            "half_done_reads": violations[:cap],
            "detected_by_ready_file_count": len(detected),
            "detected_by_ready_file": detected[:cap],
        }
        if violations:
            typed = [_violation(rec) for rec in violations[:cap]]
            return Result(False, details, typed, counts={KIND: len(violations)})
        return Result(True, details)

    def _writes_and_reads(
        self, ops: list[Op]
    ) -> tuple[list[tuple[Op, Op]], list[tuple[Op, Op, Any]]]:
        """The accepted writes (invoke, ok) and the ok reads (invoke, ok, the reader's token:
        its invoke's, else that of the hold it is in, from its acquires)."""
        pending: dict[Any, Op] = {}
        current: dict[Any, Any] = {}  # client -> token of the hold it is in (from acquires)
        writes: list[tuple[Op, Op]] = []
        reads: list[tuple[Op, Op, Any]] = []
        for op in ops:
            if op.process == NEMESIS:
                continue
            client = op.actor
            if op.type == "invoke":
                pending[op.process] = op
                if op.f in self.rel or op.f in self.acq:
                    current.pop(client, None)
                continue
            if op.type == "event":
                continue
            inv = pending.pop(op.process, None)
            if inv is None or op.type != "ok":
                continue
            if inv.f in self.acq:
                v = op.value if isinstance(op.value, dict) else {}
                current[client] = v.get("token")
            elif inv.f in self.wr:
                writes.append((inv, op))
            elif inv.f in self.rd and isinstance(op.value, dict):
                iv = inv.value if isinstance(inv.value, dict) else {}
                reads.append((inv, op, iv.get("token", current.get(client))))
        return writes, reads


def _half_done_reads(
    reads: list[tuple[Op, Op, Any]], writes: list[tuple[Op, Op]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The reads of a state another hold left half done: those the reader was not told of
    (violations), and those the ready file told it of (detected)."""
    violations: list[dict[str, Any]] = []
    detected: list[dict[str, Any]] = []
    for inv, ok, reader_token in reads:
        v = ok.value
        if not incomplete(v):
            continue
        writer, writer_token = v.get("writer"), v.get("writer_token")
        if writer_token is not None and reader_token is not None:
            same = writer_token == reader_token
        else:
            same = writer == ok.actor
        if same:
            continue
        left = _leaving_write(writes, inv.key, v, ok.time)
        start = left[1].time if left else inv.time
        rec = {
            "resource": inv.key,
            "clients": [writer, ok.actor],
            "tokens": [writer_token, reader_token],
            "state": {k: v.get(k) for k in ("state", "step", "steps", "version")},
            "start": start,
            "end": ok.time,
            "left_by_write": None
            if left is None
            else {"client": left[0].actor, "start": left[0].time, "end": left[1].time},
        }
        (detected if v.get("ready") is False else violations).append(rec)
    return violations, detected


def _violation(rec: dict[str, Any]) -> Violation:
    evidence = {k: x for k, x in rec.items() if k not in ("clients", "start", "end", "faults")}
    return Violation(
        KIND, tuple(rec["clients"]), rec["start"], rec["end"], tuple(rec["faults"]), evidence
    )


def _leaving_write(
    writes: list[tuple[Op, Op]], key: Any, v: dict[str, Any], before: int
) -> tuple[Op, Op] | None:
    """The accepted write that left state `v`: the one with its version when both recorded one,
    else the last accepted write of the same token and step that completed before the read."""
    version = v.get("version")
    best = None
    for inv, ok in writes:
        if inv.key != key:
            continue
        done = ok.value if isinstance(ok.value, dict) else {}
        if isinstance(version, int) and isinstance(done.get("version"), int):
            if done["version"] == version:
                return inv, ok
            continue
        iv = inv.value if isinstance(inv.value, dict) else {}
        if (
            iv.get("token") == v.get("writer_token")
            and iv.get("step") == v.get("step")
            and ok.time <= before
        ):
            best = (inv, ok)
    return best
