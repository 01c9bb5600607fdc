"""Membership faults through the service's own reconfiguration (ZooKeeper 3.5+ `reconfig`,
etcd `member add/remove`): remove a member, add a fresh one (empty data directory), or replace
one. Each records the configuration before and after it (version, members) in its detail, so
in `schedule.json`, and its end brings the cluster back to the run's size.

A removed server is stopped and kept (its container, labelled with the run id, and its log go
at teardown); an added one gets the next unused index and address (`n4` in a 3-server run).
The clients' connect strings are not rewritten: they name servers that come and go, as in
production. A member change that fails (a server that does not join) is recorded as the
fault's error with the service's own words, not raised out of the run.

What makes one land (faultkinds/landing.py): a member change the members the service lists
after it (`served`) being the ones asked for (`intended`: before, less the removed, plus the
added); a roll every server seen serving after its own step (`served`: the version it says it
runs; an upgrade's, another than before). A roll that stops part way (no next version, a server
that does not come back) missed, and a server that did not come back is also the run's
`recovery` finding (checker/recovery.py reads `failed_to_start`, as after a disk fault).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, cast

from zkjepsen.backends.base import Backend, RestartsServers, Upgradable
from zkjepsen.backends.base import Reconfigurable as Members
from zkjepsen.docker.cluster import Node
from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.disk import why_stopped
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.targets import NemesisContext


class Reconfigurable(Backend, Members, Protocol):
    """A backend with the "reconfigure" ability (ZooKeeperEnsemble, EtcdBackend)."""


def _members(ctx: NemesisContext) -> Reconfigurable:
    """The backend as one whose membership changes. A run whose backend cannot was refused
    before it started (faultkinds' one predicate): not being one here is zkjepsen's bug."""
    if not isinstance(ctx.backend, Members):
        raise NemesisError("this backend cannot change its membership (a fault not refused)")
    return cast(Reconfigurable, ctx.backend)


def _config(be: Reconfigurable) -> dict[str, Any]:
    try:
        return be.membership()
    except Exception as e:  # noqa: BLE001 - recorded: the config could not be read then
        return {"error": f"{type(e).__name__}: {e}"}


@dataclass(frozen=True)
class MemberFault:
    """`action`: "remove" (its end adds a fresh member), "add" (its end removes the added one)
    or "replace" (remove, then add, at the start; its end changes nothing)."""

    action: str
    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        be = _members(ctx)
        if self.action == "add":
            return [], {}
        leader = be.leader()
        detail: Detail = {"leader": leader.name if leader else None}
        if target == "leader" and leader is not None:
            return [leader.name], detail
        if target not in ("one", "leader", "follower", "random", "all"):
            return [target.split(",")[0]], detail
        followers = [n.name for n in be.nodes if leader is None or n.name != leader.name]
        return [rng.choice(followers)], detail

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        be = _members(ctx)
        detail["size"] = len(be.nodes)
        detail["before"] = _config(be)
        try:
            if self.action in ("remove", "replace"):
                _remove(ctx, be, targets[0], detail)
            if self.action in ("add", "replace"):
                _add(be, detail)
        finally:
            detail["after"] = _config(be)
            _served(detail)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        be = _members(ctx)
        size = detail.get("size") or len(be.nodes)
        try:
            while len(be.nodes) < size:  # a removal (or a replacement that did not add)
                _add(be, detail, "healed_with")
            if self.action == "add" and detail.get("added") and len(be.nodes) > size:
                _remove(ctx, be, detail["added"], detail, "healed_by_removing")
        finally:
            detail["healed"] = _config(be)


def _served(detail: Detail) -> None:
    """`served`: the members listed after the change (None: not read); `intended`: the members
    before, less the one removed, plus the one added (None: the list before was not read)."""
    before, after = detail.get("before") or {}, detail.get("after") or {}
    detail["served"] = after.get("members")
    if isinstance(before.get("members"), list):
        gone = {detail.get("removed")}
        detail["intended"] = [m for m in before["members"] if m not in gone] + (
            [detail["added"]] if detail.get("added") else []
        )


def _remove(
    ctx: NemesisContext, be: Reconfigurable, name: str, detail: Detail, key: str = "removed"
) -> None:
    node = ctx.node(name)
    t0 = time.monotonic()
    be.remove_member(node)
    detail[key] = name
    detail[f"{key}_s"] = round(time.monotonic() - t0, 3)


def _add(be: Reconfigurable, detail: Detail, key: str = "added") -> None:
    """Add a fresh member; `<key>_ready_s`: from the request until every member serves and
    one leads (the new member caught up with the data)."""
    t0 = time.monotonic()
    node = be.add_member()
    detail[key] = node.name
    detail[f"{key}_ready_s"] = round(time.monotonic() - t0, 3)


class Restartable(Backend, RestartsServers, Upgradable, Protocol):
    """A backend with the "restart-servers" ability, and "upgrade" for an upgrade
    (ZooKeeperEnsemble, EtcdBackend)."""


def _restartable(ctx: NemesisContext, upgrade: bool) -> Restartable:
    """The backend as one that restarts its servers one by one (and upgrades them). A run
    whose backend cannot was refused before it started: not being one here is zkjepsen's bug."""
    if not isinstance(ctx.backend, RestartsServers) or (
        upgrade and not isinstance(ctx.backend, Upgradable)
    ):
        raise NemesisError(
            "this backend cannot restart its servers one by one (a fault not refused)"
        )
    return cast(Restartable, ctx.backend)


@dataclass(frozen=True)
class RollingFault:
    """One server at a time, followers first and the leader last: a new container on the
    server's own data (`upgrade`: on the next version's image), each step waiting until every
    server serves and one leads. Every step records every server's version as the server says
    it; a server that does not come back ends the roll with its log's end in `failed` (a
    finding of the run, not a crash of the tool). Its end changes nothing: an upgrade stays."""

    upgrade: bool
    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        be = _restartable(ctx, self.upgrade)
        leader = be.leader()
        names = [n.name for n in be.nodes]
        order = [n for n in names if leader is None or n != leader.name]
        return order + ([leader.name] if leader else []), {
            "leader": leader.name if leader else None
        }

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        be = _restartable(ctx, self.upgrade)
        detail["versions"] = _versions(be)
        image = None
        if self.upgrade:
            t0 = time.monotonic()
            image = be.upgrade_image()
            detail.update(image=image, image_s=round(time.monotonic() - t0, 3))
        steps: list[dict[str, Any]] = detail.setdefault("steps", [])
        served: dict[str, str | None] = detail.setdefault("served", {})
        for step, name in enumerate(targets, start=1):
            node, t0 = ctx.node(name), time.monotonic()
            try:
                be.restart_server(node, image, step)
            except Exception as e:  # noqa: BLE001 - the finding: which server, its own words
                _not_back(be, node, f"{type(e).__name__}: {e}", detail)
                return
            leader = be.leader()
            steps.append(
                {
                    "node": name,
                    "s": round(time.monotonic() - t0, 3),
                    "leader": leader.name if leader else None,
                    "versions": _versions(be),
                }
            )
            served[name] = steps[-1]["versions"].get(name)  # what it says it runs, after its step

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        detail["versions_at_end"] = _versions(_restartable(ctx, False))


def _not_back(be: Restartable, node: Node, error: str, detail: Detail) -> None:
    """A step that did not come back: `failed` (the roll missed); and when the server does not
    serve now, `failed_to_start` / `why_not_started` as after a disk fault (a recovery finding)."""
    log = be.logs(node)
    tail = " | ".join(log.strip().splitlines()[-8:])
    detail["failed"] = {"node": node.name, "error": error, "log": tail}
    if be.server_version(node) is None:
        detail["failed_to_start"] = {node.name: "\n".join(log.splitlines()[-12:])}
        detail["why_not_started"] = {node.name: (why_stopped(log.splitlines()) or error)[:400]}


def _versions(be: Restartable) -> dict[str, str | None]:
    return {n.name: be.server_version(n) for n in be.nodes}


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Nothing to put back: a member change is the service's own reconfiguration and each
    kind's end makes the change it owes (a removed member's replacement added, an added one
    removed); an upgrade stays by design. A server left stopped is the process family's to
    start."""
    return []


MEMBERSHIP = FaultFamily("membership", heal=heal, rank=6)
MemberFault.family = MEMBERSHIP
RollingFault.family = MEMBERSHIP
