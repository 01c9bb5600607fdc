"""The nemesis: faults injected into a real ensemble and its client processes, always healed.

A family per module, each bringing its own prepare and heal (`family.FaultFamily`), as Jepsen's
nemesis packages do: `partition` (iptables inside each container's own network namespace),
`process` (SIGKILL/restart and cgroup-freezer pause of servers AND clients), `clock` (the
control files of the servers' and the clients' clocks), `proxy`, `pg`, `disk`, `membership`.
Every fault kind is declared once in `zkjepsen.faultkinds`; `faults.FAULTS` binds each to its
implementation. `schedule.run_nemesis` executes a seeded plan from `zkjepsen.nemesis.generator`
(one `executed.FaultOp` per fault, from plan to record) and writes every fault to
`nemesis.jsonl` (history ops) and `schedule.json` (replayable), naming no family.

The package and `faults` stay import-light (no docker): the CLI and the runner read
the declarations through `faults` to validate names before anything starts.
"""

from __future__ import annotations

from typing import Any, Protocol


class Nemesis(Protocol):
    """Jepsen's shape. `invoke` takes a fault op's table (`executed.FaultOp.to_json()`) with a
    "phase" ("start" or "end") and returns it completed (resolved targets, detail, times)."""

    def setup(self) -> None: ...
    def invoke(self, op: dict[str, Any]) -> dict[str, Any]: ...
    def teardown(self) -> None: ...  # ALWAYS heals: no partition, paused process or skew remains
    def fs(self) -> list[str]: ...


class NemesisError(Exception):
    """A fault could not be applied or undone (Docker refused, iptables failed)."""


class NoTargets(NemesisError):
    """A fault found nothing to act on at its time (its clients had exited or were not yet
    running): the run records it as unresolved and goes on, as Jepsen records a nemesis op that
    could not happen, rather than ending a run whose history is sound."""
