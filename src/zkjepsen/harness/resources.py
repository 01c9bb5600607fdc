"""Run ids, labels and cleanup: nothing zkjepsen creates outlives its run.

Every container and network carries `zkjepsen.run=<run id>` and `zkjepsen.owner=<pid>:<start>`.
Host-side scratch (node data dirs, faketime control files) lives in `/var/tmp/zkjepsen/<run id>/`.
`cleanup` removes the resources of runs whose owner process is gone (a crashed or SIGKILLed
runner) and that were not deliberately detached by `cluster up`; `--all` removes every run's.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from zkjepsen.errors import EnvironmentProblem

RUN_LABEL = "zkjepsen.run"
OWNER_LABEL = "zkjepsen.owner"
ROLE_LABEL = "zkjepsen.role"
SCRATCH_ROOT = Path(os.environ.get("ZKJEPSEN_SCRATCH", "/var/tmp/zkjepsen"))
DETACHED_MARKER = "detached"


def new_run_id() -> str:
    return f"zkj-{time.strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(2)}"


def _proc_start(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime) tells a live owner from a recycled pid.
    return stat.rsplit(")", 1)[1].split()[19]


def owner_token(pid: int | None = None) -> str:
    pid = pid or os.getpid()
    return f"{pid}:{_proc_start(pid)}"


def owner_alive(token: str) -> bool:
    pid_s, _, start = token.partition(":")
    try:
        pid = int(pid_s)
    except ValueError:
        return False
    return _proc_start(pid) == start


def labels(run_id: str, role: str, **extra: str) -> dict[str, str]:
    return {RUN_LABEL: run_id, OWNER_LABEL: owner_token(), ROLE_LABEL: role,
            **{f"zkjepsen.{k}": str(v) for k, v in extra.items()}}


def scratch_dir(run_id: str) -> Path:
    d = SCRATCH_ROOT / run_id
    d.mkdir(parents=True, exist_ok=True)
    return d


def docker_client():
    """A Docker client, or one clear sentence about why there is none."""
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except docker.errors.DockerException as e:
        msg = str(e)
        if "Permission denied" in msg or "PermissionError" in msg:
            raise EnvironmentProblem(
                "permission denied on the Docker socket; run as root or add your user to the "
                "`docker` group") from None
        raise EnvironmentProblem(
            "cannot reach a Docker engine (is it installed and running? `docker info` should "
            "work; set DOCKER_HOST if it listens elsewhere)") from None


@dataclass
class RunResources:
    run_id: str
    containers: list = field(default_factory=list)
    networks: list = field(default_factory=list)
    owners: set[str] = field(default_factory=set)
    detached: bool = False

    @property
    def orphaned(self) -> bool:
        return not self.detached and not any(owner_alive(o) for o in self.owners)


def find_runs(client) -> dict[str, RunResources]:
    """Every run with a labelled container, network or scratch dir. Containers are the engine's
    list entries (dicts with "Id", "Labels", "State"): listing without inspecting each one, so
    a container another run removes meanwhile cannot make this fail."""
    runs: dict[str, RunResources] = {}
    for c in client.api.containers(all=True, filters={"label": RUN_LABEL}):
        labels_ = c.get("Labels") or {}
        r = runs.setdefault(labels_[RUN_LABEL], RunResources(labels_[RUN_LABEL]))
        r.containers.append(c)
        r.owners.add(labels_.get(OWNER_LABEL, ""))
    for n in client.networks.list(filters={"label": RUN_LABEL}):
        run_id = n.attrs["Labels"][RUN_LABEL]
        r = runs.setdefault(run_id, RunResources(run_id))
        r.networks.append(n)
        r.owners.add(n.attrs["Labels"].get(OWNER_LABEL, ""))
    if SCRATCH_ROOT.is_dir():
        for d in SCRATCH_ROOT.iterdir():
            runs.setdefault(d.name, RunResources(d.name))
    for r in runs.values():
        r.detached = (SCRATCH_ROOT / r.run_id / DETACHED_MARKER).exists()
    return runs


def remove_run(client, run_id: str) -> tuple[int, int]:
    """Remove every container, network and scratch dir of one run; returns (containers, networks).

    Containers are paused by some faults: `remove(force=True)` kills paused containers too,
    and their network namespaces (with any iptables rules the nemesis put there) go with them.
    """
    import docker.errors

    nc = nn = 0
    for c in client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}):
        try:
            client.api.remove_container(c["Id"], force=True, v=True)
            nc += 1
        except docker.errors.NotFound:
            pass
    for n in client.networks.list(filters={"label": f"{RUN_LABEL}={run_id}"}):
        try:
            n.remove()
            nn += 1
        except docker.errors.NotFound:
            pass
    shutil.rmtree(SCRATCH_ROOT / run_id, ignore_errors=True)
    return nc, nn
