"""Disk faults: power loss (the servers lose what they had not fsynced) and corrupt files.

A power loss first stops every target's server process at once (SIGSTOP: it acknowledges
nothing more; asking the layers one by one takes seconds on a loaded machine, during which the
servers not yet asked went on acknowledging), then asks each target's power-loss layer
(docker/powerfs.py) to drop what was written since the last fsync (it counts the bytes:
`lost_bytes` per server in the schedule) and from then on to fail every disk operation, then
SIGKILLs the container; the end boots it again, on
what had been fsynced (what the servers wrote while starting is settled on disk first:
`settle`). `torn-write` lets the newest un-fsynced write survive in part.
A power loss on an acquire lands right after the acquirer's next acknowledged write (its
increment: `await_ack`), so there is acknowledged state among what it may take: on the acquire
itself it could take only sessions and lock nodes (the first acquire after the layer's sync).
`corrupt-file` stops one server, flips bits in (or truncates) the newest of the data files its
service declares (`data_files`, globs under its data directory), and boots it at the end.

A server that cannot boot again (its log says why: ZooKeeper refusing a torn log) is a finding
of the run, recorded in the fault's end (`failed_to_start`), not an error of the tool.

What makes one land (faultkinds/landing.py): the layer's own answer for every target (`lost`:
its counts of what it dropped; `{"unanswered": 1}` when its answer was lost), or for a corrupt
file the file and what changed in it; and every target seen running after its boot (`booted`)
or recorded as could-not-boot.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from zkjepsen.backends.base import NamesDataFiles
from zkjepsen.history.holding import ACQUIRE_FS, RELEASE_FS
from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.targets import NemesisContext, resolve_servers

BOOT_WATCH_S = 8.0  # a server still down this long after its boot is a finding
# A holder's write is acknowledged ~0.05 s after its acquire idle, ~0.3-1 s on this loaded
# 2-core machine: 5 s is several times that. None within it: the power loss lands anyway.
ACK_WAIT_S = 5.0
NOT_WRITES = (*ACQUIRE_FS, *RELEASE_FS, "read", "session", "session-state")
LOG_SETTLE_S = 1.0


@dataclass(frozen=True)
class PowerLoss:
    """`mode`: drop (every un-fsynced write is gone) or torn (the newest survives in part);
    `servers`: whom it hits when a trigger aims it at a client (the kind's default target: a
    power loss on an acquire hits the servers, the acquire says only when)."""

    mode: str = "drop"
    servers: str = "one"
    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        # writeback_s: what is older the kernel had written back (Linux: 30 s); 0: nothing.
        detail: Detail = {"writeback_s": float(params.get("writeback_s", 0))}
        if target.startswith("client:") or target == "holder":
            detail["when"], target = f"{target} acquired", self.servers
        if target == "leader":
            leader = ctx.backend.leader()
            detail["leader"] = leader.name if leader else None
        return resolve_servers(ctx, target, rng), detail

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        acquirer = _acquirer(ctx, str(detail["when"]).split()[0]) if detail.get("when") else None
        if acquirer is not None:
            detail["after_ack"] = await_ack(ctx, *acquirer)
        live = ctx.live
        holders = live.holding().holders if live is not None else {}
        detail["holders_at_power_loss"] = [f"c{i}" for i in sorted(holders)]
        ctx.each(lambda name: _halt(ctx, name), targets)  # all at once, then each layer drops

        # halted, each is restarted at the end (`undo` boots it) whatever the layer says next
        detail["stopped"] = list(targets)

        def one(name: str) -> tuple[str, dict[str, int]]:
            node = ctx.node(name)
            counts = ctx.backend.power(node, self.mode, detail.get("writeback_s", 0.0))
            power_off(ctx, node)
            return name, counts

        results = ctx.each(one, targets)
        detail["lost_bytes"] = {n: c.get("lost_bytes", 0) for n, c in results}
        detail["lost"] = dict(results)
        missing = [n for n, c in results if not c]
        if missing:
            raise NemesisError(
                f"{', '.join(missing)} answered no power-loss counts (the layer is not running "
                "there): killed without dropping anything"
            )

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        boot(ctx, stopped_of(targets, detail), detail)


def _halt(ctx: NemesisContext, name: str) -> None:
    """Stop the server process (SIGSTOP) where the backend can; one that is not running (it
    died already) is left to the drop and the kill, which say so."""
    try:
        ctx.backend.halt(ctx.node(name))
    except Exception:  # noqa: BLE001 - not running: nothing more to stop
        return


def power_off(ctx: NemesisContext, node: Any) -> None:
    """SIGKILL the server; one that already stopped is off too (PostgreSQL ends itself at the
    first failed fsync of its now failing disk: PANIC, and the container exits)."""
    try:
        ctx.backend.kill(node)
    except Exception:
        if ctx.backend.state(node) == "running":
            raise


def _acquirer(ctx: NemesisContext, target_client: str) -> tuple[int, int] | None:
    """(client, its acquire's history time) of the acquire a triggered power loss follows:
    `client:N`'s, or for `holder` the latest holder's; None when nobody holds."""
    if ctx.live is None:
        return None
    holds = ctx.live.holding().holders
    if target_client.startswith("client:"):
        idx = int(target_client.split(":", 1)[1])
        return (idx, holds[idx]) if idx in holds else None
    return max(((i, t) for i, t in holds.items()), key=lambda h: h[1], default=None)


def await_ack(ctx: NemesisContext, client: int, since_ns: int) -> dict[str, Any] | None:
    """Wait (at most ACK_WAIT_S) for `client`'s first write acknowledged after `since_ns`
    (history time: its acquire); what it was, or None if none came in time."""
    live = ctx.live
    if live is None:
        return None
    records = live.cursor(client)  # its records from the first, each looked at once
    deadline = time.monotonic() + ACK_WAIT_S
    while True:
        for r in records.poll():
            at, f = r.get("time", 0), r.get("f")
            if at > since_ns and r.get("type") == "ok" and f not in NOT_WRITES:
                return {"client": f"c{client}", "f": f, "ok_ns": at}
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def settle(ctx: NemesisContext) -> None:
    """At the main phase's start: what the servers wrote while starting is on disk (a machine
    that has run a while), so a power loss takes only what the test's own traffic left."""
    ctx.each(lambda node: ctx.backend.power(node, "sync"), list(ctx.backend.nodes))


def stopped_of(targets: list[str], detail: Detail) -> list[str]:
    """The targets the apply stopped (`stopped`): only those are booted at the end. An apply
    that failed before it stopped a server leaves it running; booting it would restart it,
    the very effect the fault is recorded as never having had."""
    stopped = set(detail.get("stopped") or ())
    return [t for t in targets if t in stopped]


def boot(ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
    """Start each target again; one still down after `BOOT_WATCH_S` is recorded with the end
    of its log (`failed_to_start`)."""
    ctx.each(lambda name: ctx.backend.restart(ctx.node(name)), targets)
    deadline = time.monotonic() + BOOT_WATCH_S
    down: dict[str, str] = {}
    while time.monotonic() < deadline:
        down = {n: s for n in targets if (s := ctx.backend.state(ctx.node(n)) or "") != "running"}
        if down:
            break
        time.sleep(0.5)
    detail["booted"] = [n for n in targets if n not in down]
    if down:
        # the engine copies a container's last lines after it exits: read them a moment later
        # (etcd's fatal "walpb: crc mismatch" was missing from the tail read at once)
        time.sleep(LOG_SETTLE_S)
        logs = {n: ctx.backend.logs(ctx.node(n)) for n in sorted(down)}
        detail["failed_to_start"] = {n: _tail(log) for n, log in logs.items()}
        # the verdict's `recovery` part says why (checker/recovery.py)
        whys = {n: why_stopped(log.splitlines()) for n, log in logs.items()}
        detail["why_not_started"] = {n: why[:400] for n, why in whys.items() if why is not None}


# What the line that says why a server stopped holds, the likeliest first: a Go panic's
# message (etcd's "tocommit(114) is out of range"), etcd's zap logger at fatal ("walpb: crc
# mismatch"), the Go runtime's signal (bbolt's SIGBUS on a db file shorter than its pages), the
# cause of a Java exception (ZooKeeper's "CRC check failed"), any other exception.
WHY = ("panic: ", '"level":"fatal"', '"level":"panic"', "[signal ", "Caused by: ", "Exception")


def why_stopped(lines: list[str]) -> str | None:
    """The line of a server's log that says why it stopped (WHY), or None."""
    for marker in WHY:
        found = [x for x in lines if marker in x]
        if found:  # the last: a crash-looping server's last boot
            return found[-1]
    return None


def _tail(log: str, lines: int = 12) -> str:
    """A log's last lines, after the line that says why it stopped when that is further up
    (a Go panic's message comes before its stack)."""
    all_lines = log.splitlines()
    tail = all_lines[-lines:]
    why = why_stopped(all_lines)
    return "\n".join(([why[:400]] if why is not None and why not in tail else []) + tail)


@dataclass(frozen=True)
class CorruptFile:
    """Stop one server, damage the newest of its data files, boot it at the end."""

    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        if target.startswith("client:") or target == "holder":
            target = "one"  # on a trigger's client: when, not whom
        mode = str(params.get("mode", "flip"))
        if mode not in ("flip", "truncate"):
            raise NemesisError(f"corrupt-file's mode is flip or truncate, not {mode!r}")
        return resolve_servers(ctx, target, rng), {"mode": mode, "seed": rng.randrange(2**31)}

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        # Whether it can go in, asked before any server is stopped: a fault that cannot damage
        # a file must change nothing (a Redis that has saved nothing yet, stopped and booted
        # for a fault "that never went in", came back empty and its fence counter restarted).
        empty = [name for name in targets if newest_data_file(ctx, name) is None]
        if empty:
            raise NemesisError(f"{', '.join(empty)} has none of its data files yet")
        for name in targets:
            ctx.backend.kill(ctx.node(name))
            detail.setdefault("stopped", []).append(name)  # restarted at the end, whatever next
            path = newest_data_file(ctx, name)
            if path is None:
                raise NemesisError(f"{name}'s data files went as it stopped")
            detail["file"] = str(path.name)
            detail.update(corrupt(path, detail["mode"], random.Random(detail["seed"])))

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        boot(ctx, stopped_of(targets, detail), detail)


def newest_data_file(ctx: NemesisContext, name: str) -> Path | None:
    """The newest file matching the backend's `data_files` in the server's data directory (on
    this host: the run's scratch; under the power-loss layer, its live files)."""
    backend: Any = ctx.backend
    base = Path(backend.scratch) / "nodes" / name / "data"
    if (base / ".powerfs-live").is_dir():
        base = base / ".powerfs-live"
    if not isinstance(backend, NamesDataFiles):  # DATA_FILES: refused before the run
        return None
    globs = backend.corrupt_files
    found = [p for g in globs for p in base.glob(g) if p.is_file()]
    return max(found, key=lambda p: (p.stat().st_mtime_ns, p.name)) if found else None


def corrupt(path: Path, mode: str, rng: random.Random, flips: int = 16) -> dict[str, Any]:
    """Flip `flips` random bytes of the file's written part (up to its last non-zero byte:
    logs are preallocated with zeros), or cut that part in half."""
    data = path.read_bytes()
    end = len(data.rstrip(b"\0")) or len(data)
    if mode == "truncate":
        with path.open("r+b") as f:
            f.truncate(end // 2)
        return {"size": len(data), "truncated_to": end // 2}
    buf = bytearray(data)
    offsets = sorted(rng.randrange(end) for _ in range(flips)) if end else []
    for off in offsets:
        buf[off] ^= 0xFF
    path.write_bytes(bytes(buf))
    return {"size": len(data), "flipped_offsets": offsets}


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Nothing of its own: a server a disk fault left stopped (its boot failed, a run
    interrupted) is down as a killed one is, and the process family's heal starts it; the power
    layer's undo record is the server's to replay when it boots."""
    return []


# `prepare`: what the servers wrote while starting is on disk before the first power loss.
DISK = FaultFamily("disk", heal=heal, rank=5, prepare=settle)
PowerLoss.family = DISK
CorruptFile.family = DISK
