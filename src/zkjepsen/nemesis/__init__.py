"""The nemesis: faults injected into a real ensemble and its client processes, always healed.

Three families, one module each: `partition` (iptables inside each container's own network
namespace), `process` (SIGKILL/restart and cgroup-freezer pause of servers AND clients), `clock`
(libfaketime control files of the ZooKeeper JVMs). `schedule.run_nemesis` executes a seeded plan
from `zkjepsen.nemesis.generator` and writes every fault to `nemesis.jsonl` (history ops) and
`schedule.json` (replayable).

This module stays import-light (no docker): the CLI and the runner read `NEMESES` to validate
names before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Nemesis(Protocol):
    """Jepsen's shape. `invoke` takes an op {"f", "phase": "start"|"end", "fault_id", "target" or
    "targets", ...} and returns it completed (resolved targets, detail, times)."""

    def setup(self) -> None: ...
    def invoke(self, op: dict[str, Any]) -> dict[str, Any]: ...
    def teardown(self) -> None: ...  # ALWAYS heals: no partition, paused process or skew remains
    def fs(self) -> list[str]: ...


@dataclass(frozen=True)
class FaultKind:
    name: str
    family: str  # partition | process | clock
    target: str  # default target spec (see nemesis.targets)
    description: str
    # Default length: None = the schedule's fault duration; "1.5x" = 1.5 x the negotiated
    # session timeout (of the target client when there is one).
    duration: str | None = None


_KINDS = [
    FaultKind("none", "none", "all", "no faults (a baseline run)"),
    FaultKind("partition-one", "partition", "one",
              "cut one random server off from the other servers"),
    FaultKind("partition-leader", "partition", "leader",
              "cut the current leader off from the other servers"),
    FaultKind("partition-halves", "partition", "all",
              "split the servers into a random minority and majority"),
    FaultKind("partition-ring", "partition", "all",
              "majorities ring: every server sees a majority, no two the same one (>= 5 nodes)"),
    FaultKind("partition-bridge", "partition", "all",
              "two halves joined only through one bridge server"),
    FaultKind("isolate-client", "partition", "holder",
              "drop every packet between one client (the lock holder if known) and all servers",
              duration="2x"),
    FaultKind("packet-loss", "partition", "all",
              "drop a random fraction (default 10%) of packets to and from the target servers"),
    FaultKind("kill-one", "process", "one", "SIGKILL one random server, restart it at the end"),
    FaultKind("kill-leader", "process", "leader", "SIGKILL the leader, restart it at the end"),
    FaultKind("kill-minority", "process", "minority", "SIGKILL a minority of servers"),
    FaultKind("kill-majority", "process", "majority",
              "SIGKILL a majority of servers (the ensemble stops serving)"),
    FaultKind("pause-server", "process", "one", "freeze one random server (cgroup freezer)"),
    FaultKind("pause-leader", "process", "leader", "freeze the leader (cgroup freezer)"),
    FaultKind("pause-client", "process", "holder",
              "freeze one client (the lock holder if known) for 1.5x its session timeout",
              duration="1.5x"),
    FaultKind("kill-client", "process", "holder",
              "SIGKILL one client (the lock holder if known); it restarts with a new session"),
    FaultKind("clock-bump", "clock", "one",
              "step one server's clock by +-1..60 s (libfaketime moves its monotonic clock too)"),
    FaultKind("clock-strobe", "clock", "one",
              "flip one server's clock between +d and 0 every ~1.2 s"),
    FaultKind("clock-rate-leader", "clock", "leader",
              "run the leader's clock k x fast (default 4x): it expires sessions k x early"),
]

FAULTS: dict[str, FaultKind] = {k.name: k for k in _KINDS}
# name -> one-line description, for `zkjepsen list nemeses` and spec validation.
NEMESES: dict[str, str] = {k.name: k.description for k in _KINDS}


class NemesisError(Exception):
    """A fault could not be applied or undone (Docker refused, iptables failed)."""
