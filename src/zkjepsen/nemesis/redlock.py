"""Redlock faults: clients that see different majorities of the masters, and a master that
restarts without persistence while a client holds the lock through it.

Martin Kleppmann's case against Redlock ("How to do distributed locking", 2016): client 1
takes the lock on masters A, B, C while D and E are cut off from it; C crashes and restarts
empty (no persistence, no delayed restart); client 2 takes the lock on C, D, E. Both hold.

- `partition-redlock`: half the clients (never the one holding now) lose two of the five
  masters, chosen from n2..n5; the other half see all five. Every client still sees a
  majority, and any two majorities share a master, so this alone must not split the lock
  (the control).
- `partition-redlock-restart`: the same cut; then, once a client of the cut half acquires (its lock
  is then on exactly the three masters it sees), one of those masters other than n1 is SIGKILLed and
  started again: it comes back empty (`save ""`, no AOF: backends/redis/cluster.py), and the other
  half can reach a majority (the empty master and the two the cut half cannot see) while the first
  holder still holds. `detail` records the holder at the restart, the lock's value on every master
  before it (the holder's on exactly its side's three) and on the restarted master after (gone: the
  proof that it forgot), and how long it was down. A cut client's every try waits out the two
  masters it cannot see while an uncut one's takes milliseconds, so where the uncut clients hand
  the lock straight to each other (little think time) the cut half seldom wins it, and the
  fault does not land: `restarted` is false, and landing says why.

The target `shared-master` (any fault on one server: kill-one, pause-server, clock-bump...)
is a master the CURRENT holder's lock is on: the masters that said yes to its acquire, as the
recipe recorded them in the acquire's record (`granted`, recipes/redlock.py), read from the
live history at the firing (history/holding.py `grants`), never guessed. A fault aimed at it
when no holder's record names its masters waits for the next such holder (a trigger's aim,
nemesis/triggers.py; a timed fault here, up to SHARED_MASTER_WAIT session timeouts, then it
is unresolved). Its loss is Kleppmann's case: a holder on exactly 3 masters keeps 2 when one
forgets, and a second client reaches a majority with the other two (`decisive`: the grant is
exactly a quorum; on 4 or 5 masters one loss is not enough, and the detail says so).
`detail["shared_master"]` names the holder, the masters of its grant and the one hit; right
before the hit, the master itself is asked for its lock keys (`lock_on_master`), and
`held_on_master` says whether a holder whose recorded grant names that master had its lock
there: the proof at the target (faultkinds/landing.py: a fault whose master held no such lock
missed).

n1 is never cut and never restarted: it also stores the resource and the fencing-token
counter (backends/redis/session.py), which are not part of the lock. So n1 is a master both
sides always share: a forward jump of its clock while a cut client holds (the catalogue's
`kleppmann-redlock-clock-jump`) lets the other side reach a majority. A target naming clients
(`client:2`, `client:2,client:3`) cuts those (a scenario that triggers on one of them).
"""

from __future__ import annotations

import random
import time
from typing import Any

from zkjepsen.backends.redis.session import LOCK_PREFIX
from zkjepsen.docker.cluster import Node
from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis import NemesisError, NoTargets
from zkjepsen.nemesis.family import Detail, Params
from zkjepsen.nemesis.partition import IptablesFault, drop_both_ways
from zkjepsen.nemesis.targets import NemesisContext, resolve_client, running_clients
from zkjepsen.nemesis.triggers import choose_master, grant_of

RESOURCE_MASTER = "n1"
SHARED_MASTER_WAIT = 3.0  # a timed shared-master fault waits this many session timeouts


class PartitionRedlock(IptablesFault):
    """Cut half the clients from two masters; with `restart`, then restart a master the cut
    half still sees while one of them holds."""

    def __init__(self, restart: bool) -> None:
        self.restart = restart

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        masters = [n.name for n in ctx.backend.nodes]
        if len(masters) < 5 or RESOURCE_MASTER not in masters:
            raise NemesisError(f"{len(masters)} servers: these faults need Redlock's 5 masters")
        live = sorted(f"c{h.index}" for h in running_clients(ctx))
        if len(live) < 2:
            raise NoTargets("these faults need two running clients (two sides)")
        if target.startswith("client:"):  # the cut half named (`client:2,client:3`)
            named = {f"c{int(t.split(':', 1)[1])}" for t in target.split(",")}
            cut, holder, how = sorted(named & set(live), key=lambda c: int(c[1:])), None, ""
            if not cut:
                raise NoTargets(f"none of {target} is running")
        else:
            # The current holder stays on the side that sees every master: its release then
            # clears all five, and the cut half's next lock sits on exactly its three masters.
            holder, how = resolve_client(ctx, "holder", rng)
            others = rng.sample([c for c in live if c != holder], len(live) - 1)
            cut = sorted(others[: len(live) // 2], key=lambda c: int(c[1:]))
        unseen = sorted(rng.sample([m for m in masters if m != RESOURCE_MASTER], 2))
        seen = [m for m in masters if m not in unseen]
        detail: Detail = {
            "holder_when_cut": holder if how == "holder" else None,
            "cut_clients": cut,
            "unseen_masters": unseen,
            "seen_masters": seen,  # the cut half's only majority
        }
        if self.restart:
            detail["restart"] = rng.choice([m for m in seen if m != RESOURCE_MASTER])
        return cut, detail

    def rules(
        self, ctx: NemesisContext, targets: list[str], detail: Detail
    ) -> dict[str, list[list[str]]]:
        ips = [ctx.node(m).ip for m in detail["unseen_masters"]]
        return {c: drop_both_ways(ips) for c in targets}

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        super().apply(ctx, targets, detail)
        if self.restart:
            restart_under_holder(ctx, targets, detail)


def restart_under_holder(ctx: NemesisContext, cut: list[str], detail: Detail) -> None:
    """Wait (up to 3 TTLs) until a cut client holds a lock it took after the cut landed, and
    no lock taken by a cut client before its cut is left on the masters it no longer sees;
    then kill and start the `restart` master. Without such an acquire the master is not restarted
    (`detail["restarted"] = False`): the fault did not happen, and the detail says so."""
    node = ctx.node(detail["restart"])
    live = ctx.live
    if live is None:
        raise NemesisError("partition-redlock-restart needs the clients' histories")
    before = live.holding().holders
    latest = max(before.values(), default=-1)  # acquires up to now were made before the cut
    deadline = time.monotonic() + 3 * ctx.session_timeout_s
    found = _hold_on_the_cut_side(ctx, live, latest, cut, detail, deadline)
    detail["restarted"] = found is not None
    if found is None:
        return
    holder, detail["lock_before"] = found
    detail["holder"] = f"c{holder}"
    t0 = time.monotonic()
    ctx.backend.kill(node)
    ctx.backend.restart(node)
    while _lock_values(ctx, node) is None and time.monotonic() - t0 < 10:
        time.sleep(0.02)
    detail["down_s"] = round(time.monotonic() - t0, 3)
    detail["lock_after"] = _lock_values(ctx, node)  # {} or the next holder's: it forgot
    detail["holding_after_restart"] = holder in live.holding().holders


def _hold_on_the_cut_side(
    ctx: NemesisContext,
    live: LiveHistory,
    latest: int,
    cut: list[str],
    detail: Detail,
    deadline: float,
) -> tuple[int, dict[str, Any]] | None:
    """The newest cut client holding a lock taken after the cut, and where the lock is, master
    by master, while it held: the holder's value on exactly the masters its side sees is the
    proof that the cut shaped its majority. None if no cut client held by the deadline."""
    cut_idx = {int(c[1:]) for c in cut}
    unseen = [ctx.node(m) for m in detail["unseen_masters"]]
    nodes = list(ctx.backend.nodes)
    while time.monotonic() < deadline:
        time.sleep(0.01)
        held = live.holding().holders
        fresh = {i: t for i, t in held.items() if t > latest and i in cut_idx}
        if not fresh:
            continue
        holder = max(fresh, key=lambda i: fresh[i])
        # A cut client's lock taken just before its cut landed stays on the masters it no
        # longer sees until its TTL runs out, and blocks the other side's majority: wait
        # until it has expired (the other side's own keys there are passing attempts).
        if _stale(ctx, unseen, cut_idx):
            continue
        values = ctx.each(lambda n: _lock_values(ctx, n), nodes)
        # The snapshot counts only if the holder still held the same lock after it: a
        # release logs its invoke before it deletes a key, so a snapshot taken mid-release
        # (the key gone from some masters only) is seen here and taken again.
        if live.holding().holders.get(holder) == fresh[holder]:
            return holder, dict(zip([n.name for n in nodes], values, strict=True))
    return None


def _stale(ctx: NemesisContext, unseen: list[Node], cut_idx: set[int]) -> bool:
    for node in unseen:
        values = _lock_values(ctx, node) or {}
        if any(v.split(":", 1)[0] in {f"client-{i}" for i in cut_idx} for v in values.values()):
            return True
    return False


def _lock_values(ctx: NemesisContext, node: Node) -> dict[str, str] | None:
    """The master's lock keys and their values (the holder's random value); None: the
    master does not answer (restarting). Asked from the host (a few ms; a docker exec would
    take 0.1-0.3 s of the holder's critical section)."""
    # here, not at the top: a service's client library, loaded by runs of that service
    import redis

    r = redis.Redis(host=node.ip, port=node.port, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        keys = list(r.scan_iter(match=LOCK_PREFIX + "*"))
        # (bytes: the client is made without decode_responses)
        return {k.decode(): bytes(r.get(k) or b"").decode(errors="replace") for k in keys}  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - down or still starting
        return None
    finally:
        r.close()


def resolve_shared_master(
    ctx: NemesisContext, prefer: int | None, rng: random.Random
) -> tuple[str, Detail]:
    """The master a `shared-master` fault hits, and how it was chosen: one of the masters the
    current holder's grant is on, as its acquire's record names them (`prefer`: the client
    the trigger's firing named, while it still holds). Waits for such a holder (up to
    SHARED_MASTER_WAIT session timeouts); NoTargets if none came."""
    live = ctx.live
    if live is None:
        raise NemesisError("shared-master needs the clients' histories (their grants)")
    names = {n.address: n.name for n in ctx.backend.nodes}
    wait_s = SHARED_MASTER_WAIT * ctx.session_timeout_s
    deadline = time.monotonic() + wait_s
    unknown: tuple[str, ...] = ()
    while True:
        now = live.holding()
        found = grant_of(now, prefer)
        if found is not None:
            holder, granted = found
            chosen = choose_master(granted, names, rng)
            if chosen is not None:
                master, on = chosen
                quorum = len(names) // 2 + 1
                return master, {
                    "shared_master": {
                        "holder": f"c{holder}",
                        "granted": on,  # the masters its acquire's record names
                        "master": master,
                        "grant_ns": now.holders[holder],
                        "named_by": "trigger" if holder == prefer else "holder",
                        # its loss leaves the holder short of a majority (a grant of exactly a
                        # quorum): the masters outside the grant and this one make another
                        "decisive": len(on) == quorum,
                    }
                }
            unknown = granted
        if time.monotonic() >= deadline:
            why = (
                f" (its grant names {', '.join(unknown)}: no server of this run)" if unknown else ""
            )
            raise NoTargets(
                f"shared-master: no holder's acquire named the masters that granted it within "
                f"{wait_s:g} s{why}"
            )
        time.sleep(0.01)


def observe_shared_master(ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
    """Right before the hit: the master's own lock keys (`lock_on_master`; None: it did not
    answer) and whether a holder whose recorded grant names that master had its lock there
    now (`held_on_master`, the holders in `holders_on_master`). Asked of who holds now, not
    of the holder chosen, so that a replay (the same master, another moment) says the same
    thing of its own hit."""
    master = targets[0] if len(targets) == 1 else None
    live = ctx.live
    if master is None or live is None:
        detail["held_on_master"] = False
        return
    names = {n.address: n.name for n in ctx.backend.nodes}
    now = live.holding()
    granted_here = [c for c, g in now.grants.items() if master in {names.get(a) for a in g}]
    values = _lock_values(ctx, ctx.node(master))
    owners = {v.split(":", 1)[0] for v in (values or {}).values()}
    there = sorted(c for c in granted_here if f"client-{c}" in owners)
    detail["lock_on_master"] = values
    detail["holders_on_master"] = [f"c{c}" for c in there]
    detail["held_on_master"] = bool(there)
