"""What the runner tells one client process: the typed record that crosses the container
boundary as `/control/spec-cN.json`. Stdlib only (it is read inside the client containers).

This is the first half of the client wire: the program under test learns its servers, session
timeout, identity, workload and parameters from it; the recorder writes the history beside it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

OUT_DIR = "/out"  # where a client container sees its own output directory (read-write)
CONTROL_DIR = "/control"  # the run's control files (start barrier, specs), read-only
# The wire proxy's control token, in the client container's environment (client/pool.py).
PROXY_TOKEN_ENV = "ZKJEPSEN_PROXY_TOKEN"
# Client N's libfaketime control file in CONTROL_DIR (nemesis/client_clock.py writes it).
CONTROL_NAME = "faketime-c{n}"
# Client N's zkj-timewarp control file in CONTROL_DIR (docker/timewarp.py): for programs
# libfaketime cannot reach (Go, any other language but Python and Java).
WARP_NAME = "timewarp-c{n}"
# zkj-timewarp in the client images (docker/timewarp.LAUNCHER; spelled here too, since the
# recorder inside a container imports no docker code).
WARP_LAUNCHER = "/opt/zkjepsen/drivers/timewarp/zkj-timewarp"
# Where the launcher keeps its observation page (`ZKJ_TIMEWARP_OBSERVE`: what the program's
# processes read from their clocks, client/clockwatch.py) in a client container: the program's
# uid creates it, in its own scratch tmpfs (client/seal.py); the recorder reads it (mode 0644).
WARP_SEEN = "/tmp/.zkj-timewarp-seen"


@dataclass(frozen=True)
class ClientSpec:
    client: int  # logical client number, 1..N
    nclients: int
    hosts: str  # ZooKeeper connect string this client uses
    session_timeout_s: float
    workload: str
    recipe: str  # registry name or "package.module:Name"
    t0_ns: int  # CLOCK_MONOTONIC of the test's start (the history's time zero)
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    deadline_monotonic: float = 0.0  # 0: wait at the start barrier for the real deadline
    start_file: str | None = f"{CONTROL_DIR}/start"  # the start barrier (None: begin at once)
    out: str = OUT_DIR
    connect_timeout_s: float = 15.0
    env: dict[str, str] = field(default_factory=dict)  # extra environment of the container
    # Extra environment of the program under test only, never of the recorder beside it:
    # libfaketime (client clock faults) skews the program's clocks, not the history's stamps.
    program_env: dict[str, str] = field(default_factory=dict)
    # zkj-timewarp (client clock faults on a program libfaketime cannot reach): the program
    # starts under the launcher, reading its clocks through this control file; "": it does not.
    program_warp: str = ""
    # The program under test (client wire protocol): argv in the container; empty: in-process.
    command: list[str] = field(default_factory=list)
    program_mount: str | None = None  # host dir mounted read-only at client.command.PROGRAM_DIR
    program_cwd: str | None = None
    program_uid: int | None = None  # the program runs as this uid (client/seal.py); None: ours
    proxy: bool = False  # connect through a ZooKeeper wire proxy (client.zkproxy) in-process

    @property
    def history_file(self) -> Path:
        return Path(self.out) / f"client-{self.client}.jsonl"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ClientSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> ClientSpec:
        return cls.from_json(json.loads(Path(path).read_text()))
