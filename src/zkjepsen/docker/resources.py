"""Run ids, labels and cleanup: nothing zkjepsen creates outlives its run.

Every container and network carries `zkjepsen.run=<run id>` and `zkjepsen.owner=<pid>:<start>`.
Host-side scratch (node data dirs, faketime control files) lives in `/var/tmp/zkjepsen/<run id>/`.
The scratch dir holds an `owner` file (the same token) from the moment it exists, so a run whose
containers are already gone but whose teardown is still running is not mistaken for an orphan;
an `engine` file (the engine the run lives on, so `cleanup --engine X` only looks at X's runs);
and a `subnet` file (the /24 it claimed, see `subnets`).
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
OWNER_FILE = "owner"
# A scratch dir without an owner file is being created right now (mkdir, then the file) unless
# it is older than this: only then is it a crashed run's.
STARTING_GRACE_S = 120.0
ENGINE_FILE = "engine"
DEFAULT_ENGINE = "default"


def new_run_id() -> str:
    # Runs started in the same second by parallel workers differ in 32 random bits.
    return f"zkj-{time.strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(4)}"


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


def labels(run_id: str, role: str, **extra: object) -> dict[str, str]:
    return {
        RUN_LABEL: run_id,
        OWNER_LABEL: owner_token(),
        ROLE_LABEL: role,
        **{f"zkjepsen.{k}": str(v) for k, v in extra.items()},
    }


def scratch_dir(run_id: str) -> Path:
    """The run's scratch dir, created with its owner file (this process) if it is new."""
    d = SCRATCH_ROOT / run_id
    d.mkdir(parents=True, exist_ok=True)
    owner = d / OWNER_FILE
    if not owner.exists():
        tmp = d / f".{OWNER_FILE}.{os.getpid()}"
        tmp.write_text(owner_token())
        tmp.replace(owner)  # never a half-written token
    return d


def claim_scratch(run_id: str, engine: str = DEFAULT_ENGINE) -> Path:
    """The run's scratch dir (with its owner file), recording which engine the run lives on."""
    d = scratch_dir(run_id)
    (d / ENGINE_FILE).write_text(engine)
    return d


def scratch_engine(d: Path) -> str:
    try:
        return (d / ENGINE_FILE).read_text().strip() or DEFAULT_ENGINE
    except OSError:
        return DEFAULT_ENGINE  # a run from before engines were recorded, or just starting


def _scratch_owner(d: Path) -> tuple[str | None, bool]:
    """(owner token, still starting) of one scratch dir."""
    try:
        return (d / OWNER_FILE).read_text().strip(), False
    except OSError:
        pass
    try:
        young = time.time() - d.stat().st_mtime < STARTING_GRACE_S
    except OSError:
        young = False  # gone meanwhile
    return None, young


def docker_client():
    """A Docker client, or one clear sentence about why there is none."""
    # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
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
                "`docker` group"
            ) from None
        raise EnvironmentProblem(
            "cannot reach a Docker engine (is it installed and running? `docker info` should "
            "work; set DOCKER_HOST if it listens elsewhere)"
        ) from None


@dataclass
class RunResources:
    run_id: str
    containers: list = field(default_factory=list)
    networks: list = field(default_factory=list)
    owners: set[str] = field(default_factory=set)
    detached: bool = False
    starting: bool = False  # a scratch dir so young that its owner file may not exist yet

    @property
    def orphaned(self) -> bool:
        # A young scratch dir without an owner file protects a run that is still starting, but
        # only while nothing names an owner: containers or networks whose owners are all dead
        # belong to a crashed run, whatever its scratch dir looks like.
        known = [o for o in self.owners if o]
        if self.detached or any(owner_alive(o) for o in known):
            return False
        return bool(known) or not self.starting

    @property
    def owner_alive(self) -> bool:
        return any(owner_alive(o) for o in self.owners)


def find_runs(client, engine: str = DEFAULT_ENGINE) -> dict[str, RunResources]:
    """Every run with a labelled container or network on this engine, or a scratch dir of a run
    on this engine (`engine`: its key as the run recorded it). Containers are the engine's
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
            if not d.is_dir() or (d.name not in runs and scratch_engine(d) != engine):
                continue  # the lock file, or a run living on another engine
            r = runs.setdefault(d.name, RunResources(d.name))
            owner, r.starting = _scratch_owner(d)
            if owner:
                r.owners.add(owner)
    for r in runs.values():
        r.detached = (SCRATCH_ROOT / r.run_id / DETACHED_MARKER).exists()
    return runs


def run_containers(client, flt: dict) -> list[dict]:
    """A run's containers (every role)."""
    return client.api.containers(all=True, filters=flt)


def remove_run(client, run_id: str) -> tuple[int, int]:
    """Remove every container, network and scratch dir of one run; returns (containers, networks).

    Containers are paused by some faults: `remove(force=True)` kills paused containers too,
    and their network namespaces (with any iptables rules the nemesis put there) go with them.
    """
    # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
    import docker.errors

    flt = {"label": f"{RUN_LABEL}={run_id}"}
    nc = nn = 0
    # A second pass catches a container a worker thread was still creating during the first
    # (the network cannot go while it is attached).
    for attempt in range(3):
        for c in run_containers(client, flt):
            try:
                client.api.remove_container(c["Id"], force=True, v=True)
                nc += 1
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:
                if "already in progress" not in str(e):
                    raise
        for n in client.networks.list(filters=flt):
            try:
                n.remove()
                nn += 1
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                if attempt == 2:
                    raise
        if not (run_containers(client, flt) or client.networks.list(filters=flt)):
            break
        time.sleep(0.5)
    shutil.rmtree(SCRATCH_ROOT / run_id, ignore_errors=True)
    return nc, nn


def leftovers(client, run_id: str) -> list[str]:
    """What of one run still exists on the engine and the host, e.g. ["2 containers"]; empty
    when nothing is left. Asked of the engine, not remembered: this is what a user is told."""
    flt = {"label": f"{RUN_LABEL}={run_id}"}
    left = []
    containers = run_containers(client, flt)
    networks = client.networks.list(filters=flt)
    if containers:
        left.append(f"{len(containers)} container{'s' if len(containers) > 1 else ''}")
    if networks:
        left.append(f"{len(networks)} network{'s' if len(networks) > 1 else ''}")
    if (SCRATCH_ROOT / run_id).exists():
        left.append(f"scratch dir {SCRATCH_ROOT / run_id}")
    return left
