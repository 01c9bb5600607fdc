"""What a run must have exercised before any verdict about it can be valid.

A safety checker finds no violation where nothing happened: a lock nobody acquired is trivially
exclusive, and a recipe that cannot even be built in the clients gives a history of error
events and no acquires. So each workload states what its clients must have done, and this
checker answers `unknown` with the reason when the history lacks it (never `False`: missing
work is not a violation of the property, and `compose` lets a real violation still win):
- every op in `need` completed `ok` at least once;
- every client that invoked an op in `per_client` had one complete `ok`, or starved cleanly
  while others got it (see fairness.py: a client whose attempts ended unknown or in errors,
  or that nobody beat to the lock, was not tested; a starved one is a finding of `liveness`);
- every op in `release` that completed: at least one `ok`, and none failed (`fail`/`info`)
  with no fault active (fairness.py says why); those that failed during a fault (or its grace)
  are counted in the verdict's note, which the CLI prints even for a valid run;
- no error event: `client-error` (the client program could not connect, crashed, or never
  started) or `recipe-error` (the recipe under test could not be made) - the run tested less
  than it says, whatever the other clients did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result
from zkjepsen.checker.fairness import ERROR_EVENTS, fairness, fault_grace_ns, release_failures
from zkjepsen.history import NEMESIS, History, Op

FIRST_ERRORS_SHOWN = 5
S = 1_000_000_000


class Exercised:
    KINDS = ()  # never invalid: missing work is unknown

    def __init__(
        self,
        need: Iterable[str] = ("acquire",),
        per_client: Iterable[str] = (),
        errors: Iterable[str] = ERROR_EVENTS,
        release: Iterable[str] = (),
        grace_s: float = 5.0,
    ) -> None:
        self.need = tuple(need)
        self.per_client = tuple(per_client)
        self.errors = frozenset(errors)
        self.release = tuple(release)
        self.grace_ns = int(grace_s * S)

    def check(self, history: History | list[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        client_ops = [op for op in ops if op.process != NEMESIS]
        if not client_ops:
            return Result(
                "unknown", {"reason": "the history has no client ops: nothing was tested"}
            )
        ok: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        first_errors: list[dict[str, Any]] = []
        for op in client_ops:
            if op.type == "ok":
                ok[op.f] += 1
            elif op.type == "event" and op.f in self.errors:
                errors[op.f] += 1
                if len(first_errors) < FIRST_ERRORS_SHOWN:
                    first_errors.append(
                        {"f": op.f, "client": op.actor, "time": op.time, "value": op.value}
                    )
        reasons = [f"no {f} succeeded" for f in self.need if not ok[f]]
        starved: list[Any] = []
        for f in self.per_client:
            fair = fairness(client_ops, (f,))
            idle = sorted(fair["untested"], key=repr)
            starved += fair["starved"]
            if idle and ok[f]:  # none at all is already said above
                why = "; ".join(f"{c}: {fair['untested'][c]}" for c in idle[:3])
                reasons.append(
                    f"client(s) {', '.join(map(str, idle))} invoked {f} but no "
                    f"{f} of theirs succeeded ({why})"
                )
        notes, released = self._releases(ops, ok, reasons)
        if errors:
            first = first_errors[0]
            reasons.append(
                ", ".join(f"{n} {f} event(s)" for f, n in sorted(errors.items()))
                + f" (first, client {first['client']}: {str(first['value'])[:120]})"
            )
        details: dict[str, Any] = {
            "ok": {f: ok[f] for f in (*self.need, *self.per_client, *self.release)},
            "error_events": dict(errors),
            "first_errors": first_errors,
            **released,
        }
        if starved:
            details["starved"] = sorted(set(starved), key=str)
            notes.append(f"client(s) {', '.join(map(str, details['starved']))} starved (liveness)")
        if notes:
            details["note"] = "; ".join(notes)
        if reasons:
            return Result(
                "unknown",
                {
                    **details,
                    "reason": "; ".join(reasons) + ": the run did not test all it claims to",
                },
            )
        return Result(True, details)

    def _releases(
        self, ops: list[Op], ok: Counter[str], reasons: list[str]
    ) -> tuple[list[str], dict[str, Any]]:
        """Judge the releases (see the module docstring): append to `reasons` what makes the
        run untested; return the notes a valid verdict still carries, and the details."""
        if not self.release:
            return [], {}
        done, during, outside = release_failures(
            ops, self.release, fault_grace_ns(ops, self.grace_ns)
        )
        details: dict[str, Any] = {
            "releases": done,
            "releases_failed_in_faults": len(during),
            "releases_failed_without_fault": len(outside),
        }
        failed = [*outside, *during]
        if failed:
            first = failed[0]
            details["first_failed_release"] = {
                "client": first.actor,
                "time": first.time,
                "type": first.type,
                "error": first.extra.get("error"),
            }
        f = "/".join(self.release)
        if done and not any(ok[r] for r in self.release):
            reasons.append(f"no {f} succeeded ({done} completed, all failed)")
        elif outside:
            c = outside[0]
            reasons.append(
                f"{len(outside)} of {done} {f}(s) failed with no fault active (first, client "
                f"{c.actor}: {c.type} {c.extra.get('error') or ''}".rstrip()
                + "), so the lock's hand-over was not tested"
            )
        notes = []
        if during:
            errs = Counter(str(c.extra.get("error") or c.type) for c in during)
            notes.append(
                f"{len(during)} of {done} {f}(s) failed during faults ("
                + ", ".join(f"{n} {e}" for e, n in errs.most_common(3))
                + ")"
            )
        return notes, details
