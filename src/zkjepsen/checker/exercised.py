"""What a run must have exercised before any verdict about it can be valid.

A safety checker finds no violation where nothing happened: a lock nobody acquired is trivially
exclusive, and a recipe that cannot even be built in the clients gives a history of error
events and no acquires. So each workload states what its clients must have done, and this
checker answers `unknown` with the reason when the history lacks it (never `False`: missing
work is not a violation of the property, and `compose` lets a real violation still win):
- every op in `need` completed `ok` at least once;
- every client that invoked an op in `per_client` had one complete `ok` (a client that only
  ever failed was not tested);
- no error event: `client-error` (the client program could not connect, crashed, or never
  started) or `recipe-error` (the recipe under test could not be made) - the run tested less
  than it says, whatever the other clients did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result
from zkjepsen.history import NEMESIS, History, Op

ERROR_EVENTS = ("client-error", "recipe-error")
FIRST_ERRORS_SHOWN = 5


class Exercised:
    KINDS = ()  # never invalid: missing work is unknown

    def __init__(
        self,
        need: Iterable[str] = ("acquire",),
        per_client: Iterable[str] = (),
        errors: Iterable[str] = ERROR_EVENTS,
    ) -> None:
        self.need = tuple(need)
        self.per_client = tuple(per_client)
        self.errors = frozenset(errors)

    def check(self, history: History | list[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        client_ops = [op for op in ops if op.process != NEMESIS]
        if not client_ops:
            return Result(
                "unknown", {"reason": "the history has no client ops: nothing was tested"}
            )
        ok: Counter[str] = Counter()
        invoked: dict[str, set[Any]] = {f: set() for f in self.per_client}
        succeeded: dict[str, set[Any]] = {f: set() for f in self.per_client}
        errors: Counter[str] = Counter()
        first_errors: list[dict[str, Any]] = []
        for op in client_ops:
            if op.type == "ok":
                ok[op.f] += 1
                if op.f in succeeded:
                    succeeded[op.f].add(op.actor)
            elif op.type == "invoke" and op.f in invoked:
                invoked[op.f].add(op.actor)
            elif op.type == "event" and op.f in self.errors:
                errors[op.f] += 1
                if len(first_errors) < FIRST_ERRORS_SHOWN:
                    first_errors.append(
                        {"f": op.f, "client": op.actor, "time": op.time, "value": op.value}
                    )
        reasons = [f"no {f} succeeded" for f in self.need if not ok[f]]
        for f in self.per_client:
            idle = sorted(invoked[f] - succeeded[f], key=repr)
            if idle and ok[f]:  # none at all is already said above
                reasons.append(
                    f"client(s) {', '.join(map(str, idle))} invoked {f} but no "
                    f"{f} of theirs succeeded"
                )
        if errors:
            first = first_errors[0]
            reasons.append(
                ", ".join(f"{n} {f} event(s)" for f, n in sorted(errors.items()))
                + f" (first, client {first['client']}: {str(first['value'])[:120]})"
            )
        details: dict[str, Any] = {
            "ok": {f: ok[f] for f in (*self.need, *self.per_client)},
            "error_events": dict(errors),
            "first_errors": first_errors,
        }
        if reasons:
            return Result(
                "unknown",
                {
                    **details,
                    "reason": "; ".join(reasons) + ": the run did not test all it claims to",
                },
            )
        return Result(True, details)
