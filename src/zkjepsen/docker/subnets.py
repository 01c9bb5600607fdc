"""A /24 for each run's network, safe across concurrent runs, processes and engines.

One engine refuses a subnet that overlaps one of its own networks, and the ensemble retries on
that refusal; but two engines on one machine do not see each other's networks, and both put
their bridges into the same kernel routing table, where an overlap silently breaks routing. So,
on a machine-wide lock (a file lock under the scratch root), a candidate is skipped if it
overlaps a route of this machine or a subnet another zkjepsen run on this machine has claimed
(`<scratch>/<run id>/subnet`, removed with the run's scratch dir); the engine's own refusal is
still honoured (it knows networks whose bridges are down).
"""

from __future__ import annotations

import fcntl
import ipaddress
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from zkjepsen.docker import resources
from zkjepsen.errors import EnvironmentProblem

SUBNET_FILE = "subnet"
LOCK_NAME = ".subnets.lock"
ATTEMPTS = 60
Net = ipaddress.IPv4Network


def host_routes(path: Path = Path("/proc/net/route")) -> list[Net]:
    """Destinations of this machine's IPv4 routes (the default route excluded)."""
    out: list[Net] = []
    try:
        lines = path.read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        cols = line.split()
        if len(cols) < 8:
            continue
        dest, mask = (int(c, 16).to_bytes(4, "little") for c in (cols[1], cols[7]))
        if mask == b"\0\0\0\0":
            continue
        out.append(
            ipaddress.IPv4Network(
                f"{ipaddress.IPv4Address(dest)}/{ipaddress.IPv4Address(mask)}", strict=False
            )
        )
    return out


def claimed(root: Path | None = None) -> list[Net]:
    """Subnets claimed by zkjepsen runs on this machine whose scratch dir still exists."""
    root = root or resources.SCRATCH_ROOT
    out = []
    for f in root.glob(f"*/{SUBNET_FILE}"):
        try:
            out.append(ipaddress.IPv4Network(f.read_text().strip()))
        except (OSError, ValueError):
            continue
    return out


@contextmanager
def machine_lock() -> Iterator[None]:
    root = resources.SCRATCH_ROOT
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_NAME, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def candidate(rng: random.Random) -> Net:
    return ipaddress.IPv4Network(f"10.{rng.randrange(60, 250)}.{rng.randrange(0, 256)}.0/24")


def allocate(
    run_id: str, create: Callable[[Net], bool], local: bool = True, rng: random.Random | None = None
) -> Net:
    """Pick a free /24 and `create(subnet)` the network on it; `create` returns False when the
    engine refuses the subnet as overlapping (try another) and raises on any other refusal.
    The choice is recorded in the run's scratch dir until the run is removed."""
    rng = rng or random.Random()
    with machine_lock():
        busy = claimed() + (host_routes() if local else [])
        for _ in range(ATTEMPTS):
            subnet = candidate(rng)
            if any(subnet.overlaps(b) for b in busy):
                continue
            if create(subnet):
                (resources.scratch_dir(run_id) / SUBNET_FILE).write_text(str(subnet))
                return subnet
            busy.append(subnet)
    raise EnvironmentProblem(
        "no free /24 found under 10.60-249.x.0 after "
        f"{ATTEMPTS} tries (every one clashes with a route or network of "
        "this machine); remove unused Docker networks"
    )
