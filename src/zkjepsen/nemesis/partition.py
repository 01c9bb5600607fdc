"""Network faults as packet drops inside each container's own network namespace.

Every rule lives in ONE chain named for the run (`zkj-<stamp>-<hex>`), created in the container's
netns and jumped to from its INPUT and OUTPUT. Servers run iptables themselves; clients have no
NET_ADMIN (they run the code under test), so their rules are written from a sidecar that shares
their netns (docker/netns.py). The host's own chains are never touched, so two
runs on one machine cannot interfere, and healing removes exactly that chain. A container that
is killed loses its netns and its rules with it; `docker start` gives it a clean one.

The same chain serves both hooks: `-s X` matches only on INPUT and `-d X` only on OUTPUT inside
a container whose own address is neither, so each cut drops both directions on both sides.
Server partitions cut server-to-server links only (as Jepsen's do); clients keep reaching every
server, and a client on a server that lost its quorum is disconnected by that server and moves.
There is no `tc netem` on this kernel: loss is iptables' `statistic` match; no latency fault.
`packet-loss` puts the loss rules on every target server for every peer, both directions; a
packet between two target servers meets two lossy hooks (sender OUTPUT, receiver INPUT), so its
loss is 1-(1-p)^2 (19% at p=0.1).

A cut lands when it drops packets (faultkinds/landing.py): its undo first reads the counters of
its own rules (`iptables -S CHAIN -v`, in the same exec that then deletes them) and records
`dropped` {container: packets}; a container whose counters could not be read is in
`dropped_unread` with why.
"""

from __future__ import annotations

import hashlib
import random
import shlex
from dataclasses import dataclass
from typing import ClassVar

from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.process import note_holding
from zkjepsen.nemesis.targets import (
    NemesisContext,
    resolve_client,
    resolve_servers,
    running_clients,
)

DEFAULT_LOSS = 0.1


def chain_name(run_id: str) -> str:
    # iptables chain names are at most 28 characters; run ids are 23.
    return run_id if len(run_id) <= 28 else "zkj-" + hashlib.sha1(run_id.encode()).hexdigest()[:12]


# ---- which links to cut ------------------------------------------------------------------------
def grudge_from_components(components: list[list[str]]) -> dict[str, list[str]]:
    """Each node -> the nodes it must not talk to (everything outside its component)."""
    everyone = [n for c in components for n in c]
    return {n: sorted(m for m in everyone if m not in comp) for comp in components for n in comp}


def halves(names: list[str], rng: random.Random) -> list[list[str]]:
    shuffled = rng.sample(names, len(names))
    k = len(names) // 2  # the minority side (n=5: 2 | 3)
    return [sorted(shuffled[:k]), sorted(shuffled[k:])]


def bridge(names: list[str], rng: random.Random) -> dict[str, list[str]]:
    """Two halves that share one bridge node: A - b - B. Cut A from B only. Needs >= 3 nodes
    (faultkinds: partition-bridge's predicate refuses fewer before a run starts); with fewer it
    would cut nothing, so it is zkjepsen's bug here, never a silent no-op."""
    if len(names) < 3:
        raise NemesisError(f"partition-bridge needs 3 or more servers, not {len(names)}")
    shuffled = rng.sample(names, len(names))
    mid = len(names) // 2
    a, b = shuffled[:mid], shuffled[mid + 1 :]
    g: dict[str, list[str]] = {n: [] for n in names}
    for x in a:
        g[x] = sorted(b)
    for y in b:
        g[y] = sorted(a)
    return g


def majorities_ring(names: list[str], rng: random.Random) -> dict[str, list[str]]:
    """Nodes on a shuffled ring; each talks to the nodes within ring distance k where
    2k+1 is at least a majority, so every node sees a majority and no two see the same one.
    Needs >= 4 nodes: with 3 the nearest majority is everyone (nothing to cut). A run with
    fewer is refused before it starts (faultkinds: partition-ring's predicate); here it is
    zkjepsen's bug, never a silent other fault."""
    n = len(names)
    if n < 4:
        raise NemesisError(f"a ring of majorities needs at least 4 servers, not {n}")
    ring = rng.sample(names, n)
    k = (n // 2 + 1) // 2  # n=5: 1 (self + 2 neighbours = 3)
    g: dict[str, list[str]] = {}
    for i, x in enumerate(ring):
        near = {ring[(i + d) % n] for d in range(-k, k + 1)}
        g[x] = sorted(set(names) - near)
    return g


# ---- the fault kinds: resolve / rules / apply / undo --------------------------------------------
class IptablesFault:
    """What every partition kind shares: its `rules` go into the run's chain in each target's
    netns on apply, and exactly those rules come out on undo (others, e.g. a concurrent loss
    fault, stay)."""

    family: ClassVar[FaultFamily]

    def rules(
        self, ctx: NemesisContext, targets: list[str], detail: Detail
    ) -> dict[str, list[list[str]]]:
        """container name -> rule specs (argv after `-A CHAIN`) for this fault."""
        raise NotImplementedError

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        q = shlex.quote(chain_name(ctx.run_id))

        def one(item: tuple[str, list[list[str]]]) -> None:
            name, specs = item
            lines = [f"iptables -w -N {q} 2>/dev/null || true"]
            lines += [f"iptables -w -A {q} " + " ".join(map(shlex.quote, s)) for s in specs]
            # Jump last, so the rules are complete before any packet sees them.
            lines += [
                f"iptables -w -C {h} -j {q} 2>/dev/null || iptables -w -I {h} -j {q}"
                for h in ("INPUT", "OUTPUT")
            ]
            _run(ctx, name, " && ".join(f"( {x} )" for x in lines))

        ctx.each(one, list(self.rules(ctx, targets, detail).items()))

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        q = shlex.quote(chain_name(ctx.run_id))

        def one(item: tuple[str, list[list[str]]]) -> tuple[str, int | None, str]:
            name, specs = item
            deletes = "; ".join(
                f"iptables -w -D {q} " + " ".join(map(shlex.quote, s)) + " 2>/dev/null"
                for s in specs
            )
            # The last fault out removes the chain and its jumps: nothing of ours stays behind.
            drop_empty = (
                f'[ "$(iptables -w -S {q} | wc -l)" -le 1 ] && {{ {HEAL_SCRIPT.format(c=q)}; }}'
            )
            # Counters first, in the same exec: once deleted, a rule's count is gone.
            script = f"iptables -w -S {q} -v 2>&1; echo {COUNTED}; {deletes}; {drop_empty}; true"
            try:
                out = _run(ctx, name, script)
            except Exception as e:  # noqa: BLE001 - recorded below, then raised as before
                return name, None, f"{type(e).__name__}: {str(e)[:160]}"
            listing, counted, _ = out.partition(COUNTED)
            if not counted:
                return name, None, "no counters listed"
            return name, dropped_by(listing, specs), ""

        results = ctx.each(one, list(self.rules(ctx, targets, detail).items()))
        detail["dropped"] = {n: c for n, c, _ in results if c is not None}
        unread = {n: why for n, c, why in results if c is None}
        if unread:
            detail["dropped_unread"] = unread
            raise NemesisError("; ".join(f"{n}: {why}" for n, why in sorted(unread.items())))


LAYOUTS = {
    "halves": lambda names, rng: grudge_from_components(halves(names, rng)),
    "ring": majorities_ring,
    "bridge": bridge,
}


@dataclass(frozen=True)
class Cut(IptablesFault):
    """Server-to-server cuts. `layout`: "alone" (the target servers against the rest), or
    "halves", "ring", "bridge" (who must not talk to whom, drawn from the fault's RNG)."""

    layout: str

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        names = [n.name for n in ctx.backend.nodes]
        detail: Detail = {}
        if self.layout == "alone":
            alone = resolve_servers(ctx, target, rng)
            detail["components"] = [alone, [n for n in names if n not in alone]]
            detail["grudge"] = grudge_from_components(detail["components"])
            return alone, detail  # the history names the isolated server, not every peer
        if self.layout == "halves":
            detail["components"] = halves(names, rng)
            g = grudge_from_components(detail["components"])
        else:
            g = LAYOUTS[self.layout](names, rng)
        detail["grudge"] = {k: v for k, v in g.items() if v}
        return sorted(detail["grudge"]), detail

    def rules(
        self, ctx: NemesisContext, targets: list[str], detail: Detail
    ) -> dict[str, list[list[str]]]:
        return {
            node: drop_both_ways([ctx.node(peer).ip for peer in peers])
            for node, peers in detail["grudge"].items()
        }


class IsolateClient(IptablesFault):
    """Every packet between one client and every server, dropped in the client's netns; target
    `all`: every running client at once (the servers keep serving, and expiring sessions)."""

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        servers = [n.name for n in ctx.backend.nodes]
        if target == "all":  # every client at once: the ensemble gone for all, its servers up
            every = [f"c{h.index}" for h in running_clients(ctx)]
            return every, {"chosen": "all", "servers": servers}
        client, how = resolve_client(ctx, target, rng)
        return [client], {"chosen": how, "servers": servers}

    def rules(
        self, ctx: NemesisContext, targets: list[str], detail: Detail
    ) -> dict[str, list[list[str]]]:
        cut = drop_both_ways([ctx.node(n).ip for n in detail["servers"]])
        return {t: cut for t in targets}

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        super().apply(ctx, targets, detail)

        note_holding(ctx, targets[0], detail)


class PacketLoss(IptablesFault):
    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        return (
            resolve_servers(ctx, target, rng),
            {"probability": float(params.get("probability", DEFAULT_LOSS))},
        )

    def rules(
        self, ctx: NemesisContext, targets: list[str], detail: Detail
    ) -> dict[str, list[list[str]]]:
        p = f"{detail['probability']:.4f}"
        peers = [n.ip for n in ctx.backend.nodes] + [h.ip for h in ctx.clients()]
        out = {}
        for t in targets:
            mine = ctx.node(t).ip
            out[t] = [
                [d, ip, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP"]
                for ip in peers
                if ip != mine
                for d in ("-s", "-d")
            ]
        return out


COUNTED = "--zkj-counted--"  # ends the counters' listing in an undo's output


def dropped_by(listing: str, specs: list[list[str]]) -> int:
    """The packets `specs`' rules dropped, from `iptables -S CHAIN -v` (`-A C -s IP/32 [-m
    statistic ...] -c PKTS BYTES -j DROP`): a rule is told by its direction, address and
    whether it is a loss rule (another fault's identical rule in the chain counts here too)."""
    ours = {_rule_key(s) for s in specs}
    total = 0
    for line in listing.splitlines():
        words = line.split()
        if words[:1] != ["-A"] or "-c" not in words:
            continue
        at = words.index("-c")
        if _rule_key(words) in ours and words[at + 1].isdigit():
            total += int(words[at + 1])
    return total


def _rule_key(words: list[str]) -> tuple[str, str, bool]:
    way = next((w for w in words if w in ("-s", "-d")), "")
    ip = words[words.index(way) + 1].removesuffix("/32") if way else ""
    return way, ip, "statistic" in words


def drop_both_ways(ips: list[str]) -> list[list[str]]:
    return [r for ip in ips for r in (["-s", ip, "-j", "DROP"], ["-d", ip, "-j", "DROP"])]


def _run(ctx: NemesisContext, name: str, script: str) -> str:
    if name.startswith("c"):
        # From a sidecar: the client has no NET_ADMIN, so it cannot flush what we put there.
        code, out = ctx.client(name).net_exec(["sh", "-c", script])
    else:
        code, out = ctx.backend.exec(ctx.node(name), ["sh", "-c", script])
    if code != 0:
        raise NemesisError(f"iptables in {name} failed ({code}): {out.strip()[-300:]}")
    return str(out)


HEAL_SCRIPT = (
    "for h in INPUT OUTPUT; do while iptables -w -D $h -j {c} 2>/dev/null; do :; done;"
    " done; iptables -w -F {c} 2>/dev/null; iptables -w -X {c} 2>/dev/null; "
    "! iptables -w -S {c} >/dev/null 2>&1"
)


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Remove the run's chain from every running container (servers and clients). Returns
    the containers where that failed (e.g. frozen ones: resume them first)."""
    script = HEAL_SCRIPT.format(c=shlex.quote(chain_name(ctx.run_id)))
    names = [n.name for n in ctx.backend.nodes] + [h.name for h in ctx.clients()]

    def one(name: str) -> str | None:
        try:
            _run(ctx, name, script)
            return None
        except Exception as e:  # noqa: BLE001 - a stopped container has no netns to heal
            return None if _gone(e) else f"{name}: {e}"

    return [e for e in ctx.each(one, names) if e]


def _gone(e: Exception) -> bool:
    msg = str(e)
    # "non running container": a sidecar cannot join the netns of a stopped client.
    return any(
        s in msg for s in ("is not running", "non running container", "No such container", "404")
    )


# After the thaw (iptables cannot run in a frozen container). Every kind that writes rules
# into the run's chain is of this family, redlock's cut too: one chain, one heal.
PARTITION = FaultFamily("partition", heal=heal, rank=1)
IptablesFault.family = PARTITION
