"""Simulated hunts: the hunt's real choice (run/hunt_choice.py `choose`) over a zoo program's real
menu (run/hunt.py `menu` of benchmarks/hunt.py's `base_of(NAME)`), with each run's outcome drawn
from an exposure model instead of run in Docker, so the runs to the first find can be counted
over thousands of seeds where a real hunt (15-130 s a run) affords five (issue 50's 5x goal).

    .venv/bin/python benchmarks/hunt_sim.py [--seeds 2000] [--cap 40] [NAME ...]   # the table
    .venv/bin/python benchmarks/hunt_sim.py --sweep [--seeds 300] [--settings "A;B"] [NAME ...]
    .venv/bin/python benchmarks/hunt_sim.py --five [--seeds 1000] [NAME ...]   # a 5-seed ratio
    .venv/bin/python benchmarks/hunt_sim.py --positions P [--cap 100] [NAME ...]  # one kind alone
    .venv/bin/python benchmarks/hunt_sim.py --calibrate DIR ...   # outcomes of real hunt.jsonl
    .venv/bin/python benchmarks/hunt_sim.py --replay DIR ...      # the sim's choice, real runs

NAME: a model of MODELS (a zoo program, or `program+variant`); none: every model.
`--natures-once P`: acd58ee's reward rule (a kind's fault nature, seen again, earns a landing)
on the share P of close runs it applies to (NATURES_ONCE_SHARE, 0.41, measured); 0: off.

**A simulated hunt** is `run/hunt.py` `hunt()` with one run at a time (`parallel=1`): per run,
`choose` with the hunt's seeded RNG, `run_spec` on the same RNG (as `_Hunt.round` draws the
run's seed and a timed moment's sleep, so the stream of choices is the real hunt's), then the
run's outcome, then `Tally.add(choice, reward)`: what `_Hunt.round` (the try, reward 0) and
`_Hunt.ended` (the reward, to the arm and its parts) add between them when runs go one at a
time; `ended` itself reads a run's stored verdict and history and is not callable without one.
`--replay` checks that claim on real hunts: fed each logged run's reward, the sim must choose
the logged choices, run by run.

**The exposure model** (MODELS, from the real hunts' finds: docs/findings/2026-11-28-hunt.md,
2026-11-29-hunt.md, 2026-11-29-hunt-guidance.md, benchmarks/zoo/README.md, and the live
measurement's hunt.jsonl): which fault kinds (optionally on which moments, aimed at whom, how
long) show the bug and with what chance a run; a pair of faults shows it with the chance that
either of its parts does; `default_p` is every other kind's chance (a bug most faults show),
`background` every run's whatever its fault (a loaded machine's own connection losses). A run
that does not find draws its reach (close / landed / missed) from what that fault kind reached
on the same service in real hunts (CALIBRATION: `--calibrate`'s counts, a kind's own counts
shrunk toward its side's - client or server - pooled ones), and earns REWARD of run/hunt.py;
NOVELTY (a lock state no earlier run reached) is added with the chance the real non-first
runs had it (`novelty`, from the same hunts; `--novelty P` overrides it, 0 turns it off).

Strategies: `guided` and `random` are the hunt's own; `sweep` is guided with every reward
withheld (the kind order the priors alone give: client kinds first, each kind once before any
twice, no program-specific knowledge and no learning); `oracle` always draws the arm and option
the model gives the highest chance (it knows the exposing kinds: a bound on any guidance).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zkjepsen.backends.registry import backend_info  # noqa: E402
from zkjepsen.run import hunt_choice  # noqa: E402
from zkjepsen.run.hunt import NOVELTY, REWARD, Choice, Menu, menu, run_spec  # noqa: E402
from zkjepsen.run.hunt_choice import Tally, at_client, choose  # noqa: E402

OUTCOMES = ("close", "landed", "missed")
# Of the live hunts' close runs (96 by 16:27 UTC), 39 were a fault's nature with no near miss:
# the ones acd58ee's rule turns into a landing when their kind showed a nature before.
NATURES_ONCE_SHARE = 0.41
NATURES_ONCE = 0.0  # the share the sims use: --natures-once
SHRINK_TO_POOL = 3.0  # a kind's own outcome counts weigh against its side's pool as this many runs
KS = (5, 10)


@dataclass(frozen=True)
class Exposure:
    """A fault that shows the bug with chance `p` a run, on these moments, aimed at these roles,
    of these magnitudes (their leading length, `1.5x`); empty: any."""

    fault: str
    p: float
    moments: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    lengths: tuple[str, ...] = ()

    def matches(self, part: Choice) -> bool:
        return (
            part.fault == self.fault
            and (not self.moments or part.moment in self.moments)
            and (not self.targets or part.target in self.targets)
            and (not self.lengths or part.magnitude.split()[0] in self.lengths)
        )


@dataclass(frozen=True)
class Model:
    program: str  # the zoo program whose menu the hunt chooses from
    exposures: tuple[Exposure, ...]
    source: str  # where the figures came from, one line
    default_p: float = 0.0  # every other fault's chance a run
    background: float = 0.0  # every run's chance, whatever its fault

    def p_part(self, part: Choice) -> float:
        return max((e.p for e in self.exposures if e.matches(part)), default=self.default_p)

    def p_find(self, choice: Choice) -> float:
        miss = 1.0 - self.background
        for part in choice.parts():
            miss *= 1.0 - self.p_part(part)
        return 1.0 - miss


# Roles that hit the holder, by moment (ROLES of run/hunt.py): the event of an acquire or of a
# holder's write or age, else the holder by name.
HOLDER = {
    m: ("event",) if m in ("on-acquire", "near-expiry", "on-first-write") else ("holder",)
    for m in ("on-acquire", "near-expiry", "on-first-write", "at-a-time", "mid-acquire")
    + ("while-queued", "on-leader-change", "on-suspended", "on-lost")
}
ON_HOLDER = tuple(HOLDER)
SERVER_CUTS = ("power-loss-leader", "member-remove", "pause-leader", "member-remove-leader")

MODELS: dict[str, Model] = {
    # 2 of the 5 client kinds: h3's 10 hunts (2026-11-29-hunt-guidance.md) and the live 15 (m-b,
    # m-b2): clock-skew-client found in 8 of the 9 runs that had it (alone or in a pair), its
    # miss a +0.5x offset; clock-rate-client in 7 of 7
    "redis_client_clock": Model(
        "redis_client_clock",
        (Exposure("clock-skew-client", 0.85), Exposure("clock-rate-client", 0.95)),
        "2026-11-29-hunt-guidance.md + live m-b, m-b2: skew 8 of 9 runs, rate 7 of 7",
    ),
    # 2 of 11 client kinds behind the proxy: proxy-lose-create (the README's; live m-a guided 1,
    # 1 of 1), proxy-close-after (h3's guided 1; live 2 of 3)
    "zk_orphan_create": Model(
        "zk_orphan_create",
        (Exposure("proxy-lose-create", 0.7), Exposure("proxy-close-after", 0.5)),
        "zoo README, 2026-11-29-hunt-guidance.md, live m-a, m-a3: lose-create 1/1, close-after 2/3",
    ),
    # the same with the loaded machine's own connection losses (h3: load 20-40, 2 finds of 3)
    "zk_orphan_create+load": Model(
        "zk_orphan_create",
        (Exposure("proxy-lose-create", 0.7), Exposure("proxy-close-after", 0.5)),
        "as zk_orphan_create, plus 10 % a run from the load (h3's guided 3, random 1)",
        background=0.1,
    ),
    # mostly server faults that cut its one endpoint (h1's 5 finds: 4 of 4 random hunts, runs
    # 6, 3, 8, 5; live: power-loss-leader 1 of 3), and a cut of the holder a little past its
    # lease (live m-b: isolate-client 1.5x on the holder 2 of 2, 3x 0 of 3; the zoo's own 2x is
    # a lease's nature, 2026-11-29-hunt.md), or the holder's clock fast (clock-rate-client on
    # the holder 2 of 3, elsewhere 0 of 6)
    "etcd_keepalive_ignored": Model(
        "etcd_keepalive_ignored",
        (
            *(Exposure(f, 0.5) for f in (*SERVER_CUTS, "kill-minority")),
            *(Exposure("isolate-client", 0.8, (m,), HOLDER[m], ("1.5x",)) for m in ON_HOLDER),
            *(Exposure("clock-rate-client", 0.6, (m,), HOLDER[m]) for m in ON_HOLDER),
        ),
        "2026-11-29-hunt.md (h1, 9 hunts): power-loss-leader, member-remove, pause-leader, "
        "member-remove-leader, kill-minority; live m-b, m-b2 (6 hunts)",
    ),
    # the server faults alone (h1's finds): a bug only the servers' faults show
    "etcd_keepalive_ignored+server-only": Model(
        "etcd_keepalive_ignored",
        tuple(Exposure(f, 0.5) for f in (*SERVER_CUTS, "kill-minority")),
        "as etcd_keepalive_ignored, its client exposures left out",
    ),
    # most faults: 10 of 10 hunts found it, runs 1, 1, 2, 1, 1 and 1, 1, 1, 1, 2
    "zk_no_relist": Model(
        "zk_no_relist",
        (),
        "2026-11-29-hunt.md: guided and random medians 1 run (10 hunts)",
        default_p=0.65,
    ),
    # pause-client/isolate-client on the holder past its TTL; a restart that forgot the key or
    # a stepped clock, then the stale holder's blind DEL (10 of 10 hunts, random median 2)
    "redis_blind_delete": Model(
        "redis_blind_delete",
        (
            Exposure("pause-client", 0.7),
            Exposure("isolate-client", 0.6),
            *(
                Exposure(f, 0.4)
                for f in ("kill-one", "kill-majority", "power-loss-all", "torn-write", "clock-bump")
            ),
        ),
        "2026-11-29-hunt.md: guided 1, 1, 2, 4, 1; random 2, 1, 2, 2, 1",
        default_p=0.05,
    ),
    # a waiter's lease run out while it waits: server faults (killed majority, partition,
    # paused leader, a server clock at 8x) and a paused or cut waiter (the README's)
    "etcd_waiter_lease": Model(
        "etcd_waiter_lease",
        (
            *(
                Exposure(f, 0.4)
                for f in (
                    "kill-majority",
                    "partition-leader",
                    "pause-leader",
                    "clock-rate-leader",
                    "clock-rate-one",
                )
            ),
            Exposure("pause-client", 0.5, ("while-queued", "mid-acquire", "on-acquire")),
            Exposure("isolate-client", 0.3, ("while-queued", "mid-acquire", "on-acquire")),
        ),
        "2026-11-29-hunt.md: 8 finds (kill-majority 1, partition 1, pause-leader 3, "
        "clock-rate 3); guided 2, 2, 9, 6, none; random 2, 1, 2, 9, none",
    ),
    # a waiter whose session expired watches its old predecessor: a waiter cut off (README)
    # or a fast server clock; 7 finds of 8 (guided 1, 3, 2, 3, 4; random 1, 3, 4, 2 none)
    "zk_stale_predecessor": Model(
        "zk_stale_predecessor",
        (
            Exposure("isolate-client", 0.6, ("while-queued", "mid-acquire", "on-acquire")),
            Exposure("clock-rate-one", 0.4),
            Exposure("clock-rate-leader", 0.4),
        ),
        "zoo README; 2026-11-29-hunt.md (10 hunts)",
        default_p=0.08,
    ),
}


def family_of(program: str) -> str:
    from hunt import base_of  # benchmarks/hunt.py

    base = base_of(program)
    return backend_info(base.backend).family if base.backend else "?"


@cache
def menu_of(program: str) -> Menu:
    from hunt import base_of  # benchmarks/hunt.py

    return menu(base_of(program))


@cache
def base_of_program(program: str) -> Any:
    from hunt import base_of  # benchmarks/hunt.py

    return base_of(program)


# ---- the outcomes of runs that do not find: counted from real hunts (--calibrate) ----

# `--calibrate store/m-a store/m-a3 store/m-b store/m-b2` at 2026-11-29 15:48 UTC (the live
# measurement's hunts so far, 25):
# per service family, per fault kind of a single run (a pair's parts count each), the runs
# that did not find: [close, landed, missed] by the reward less its novelty; `novelty` the
# share of non-first runs that earned NOVELTY.
CALIBRATION: dict[str, Any] = {
    # by the verdict alone (`reached`: no near-miss lift, no novelty), from every m-* store at
    # 16:33 UTC (51 hunts, m-a5 and m-b5 under 3edea30 and acd58ee): --without-near
    "kinds_without_near": {
        "etcd": {
            "clock-bump": [0, 3, 0],
            "clock-rate-client": [5, 10, 1],
            "clock-rate-leader": [4, 1, 0],
            "clock-rate-one": [0, 2, 0],
            "clock-skew-client": [2, 11, 0],
            "clock-strobe": [1, 0, 0],
            "isolate-client": [5, 7, 4],
            "kill-client": [12, 23, 0],
            "kill-leader": [1, 1, 0],
            "kill-majority": [1, 0, 1],
            "kill-minority": [1, 2, 0],
            "kill-one": [0, 1, 0],
            "member-add": [0, 3, 0],
            "member-remove": [1, 1, 0],
            "member-remove-leader": [0, 3, 0],
            "member-replace": [0, 2, 0],
            "partition-bridge": [0, 5, 0],
            "partition-halves": [0, 0, 1],
            "partition-leader": [2, 5, 0],
            "partition-one": [1, 0, 0],
            "pause-client": [4, 18, 5],
            "pause-leader": [0, 2, 0],
            "pause-server": [0, 0, 2],
            "power-loss-all": [1, 1, 1],
            "power-loss-leader": [1, 4, 0],
            "power-loss-majority": [1, 0, 1],
            "power-loss-one": [2, 3, 1],
            "rolling-restart": [1, 1, 0],
            "rolling-upgrade": [0, 2, 0],
            "torn-write": [1, 0, 0],
        },
        "redis": {
            "clock-bump": [0, 1, 0],
            "clock-skew-client": [0, 1, 0],
            "isolate-client": [4, 0, 1],
            "kill-client": [6, 3, 0],
            "kill-leader": [1, 0, 0],
            "kill-majority": [2, 0, 0],
            "kill-one": [2, 0, 0],
            "pause-client": [2, 1, 7],
            "torn-write": [4, 0, 0],
        },
        "zookeeper": {
            "clock-bump": [0, 1, 0],
            "clock-rate-client": [2, 8, 1],
            "clock-skew-client": [3, 0, 10],
            "isolate-client": [5, 3, 1],
            "kill-client": [5, 2, 2],
            "pause-client": [2, 0, 4],
            "pause-server": [0, 1, 0],
            "power-loss-leader": [5, 0, 0],
            "proxy-close-after": [0, 1, 0],
            "proxy-delay-reply": [1, 3, 0],
            "proxy-drop-pings": [0, 0, 4],
            "proxy-drop-request": [2, 3, 1],
            "proxy-hold-session": [3, 0, 0],
            "rolling-restart": [3, 0, 0],
            "torn-write": [0, 1, 0],
        },
    },
    "kinds": {
        "etcd": {
            "clock-rate-client": [4, 3, 0],
            "clock-rate-leader": [1, 0, 0],
            "clock-skew-client": [6, 0, 0],
            "clock-strobe": [1, 0, 0],
            "isolate-client": [5, 2, 0],
            "kill-client": [12, 0, 0],
            "kill-leader": [1, 0, 0],
            "member-add": [1, 0, 0],
            "member-remove-leader": [1, 1, 0],
            "partition-bridge": [0, 1, 0],
            "partition-leader": [1, 0, 0],
            "pause-client": [8, 2, 2],
            "pause-leader": [1, 0, 0],
            "power-loss-leader": [1, 1, 0],
            "power-loss-one": [1, 0, 0],
            "rolling-restart": [2, 0, 0],
            "torn-write": [1, 0, 0],
        },
        "redis": {
            "clock-bump": [0, 1, 0],
            "clock-skew-client": [0, 1, 0],
            "isolate-client": [3, 0, 1],
            "kill-client": [6, 2, 0],
            "kill-leader": [1, 0, 0],
            "kill-majority": [2, 0, 0],
            "kill-one": [2, 0, 0],
            "pause-client": [2, 1, 4],
            "torn-write": [4, 0, 0],
        },
        "zookeeper": {
            "clock-rate-client": [0, 3, 0],
            "clock-skew-client": [0, 0, 3],
            "isolate-client": [3, 1, 0],
            "kill-client": [2, 1, 1],
            "pause-client": [2, 0, 2],
            "proxy-close-after": [0, 1, 0],
            "proxy-delay-reply": [2, 0, 0],
            "proxy-drop-pings": [0, 0, 1],
            "proxy-drop-request": [2, 2, 1],
            "proxy-hold-session": [1, 0, 0],
        },
    },
    "novelty": 0.697,
    "novelty_runs": 66,
    "finds": {
        "etcd_keepalive_ignored": {
            "clock-rate-client": [9, 2],
            "clock-rate-leader": [1, 0],
            "clock-skew-client": [7, 1],
            "clock-strobe": [1, 0],
            "isolate-client": [9, 2],
            "kill-client": [12, 0],
            "kill-leader": [1, 0],
            "member-add": [1, 0],
            "member-remove-leader": [2, 0],
            "partition-bridge": [1, 0],
            "partition-leader": [1, 0],
            "pause-client": [12, 0],
            "pause-leader": [1, 0],
            "power-loss-leader": [3, 1],
            "power-loss-one": [1, 0],
            "rolling-restart": [2, 0],
            "torn-write": [1, 0],
        },
        "redis_client_clock": {
            "clock-bump": [1, 0],
            "clock-rate-client": [7, 7],
            "clock-skew-client": [9, 8],
            "isolate-client": [4, 0],
            "kill-client": [9, 1],
            "kill-leader": [2, 1],
            "kill-majority": [2, 0],
            "kill-one": [2, 0],
            "packet-loss": [1, 1],
            "pause-client": [7, 0],
            "torn-write": [4, 0],
        },
        "zk_orphan_create": {
            "clock-rate-client": [3, 0],
            "clock-skew-client": [3, 0],
            "isolate-client": [4, 0],
            "kill-client": [4, 0],
            "pause-client": [4, 0],
            "proxy-close-after": [3, 2],
            "proxy-delay-reply": [2, 0],
            "proxy-drop-pings": [1, 0],
            "proxy-drop-request": [5, 0],
            "proxy-hold-session": [1, 0],
            "proxy-lose-create": [1, 1],
        },
    },
}


def read_hunts(dirs: list[Path]) -> Iterator[tuple[str, str, int, list[dict[str, Any]]]]:
    """(program, strategy, seed, lines) of every hunt.jsonl under `dirs` (benchmarks/hunt.py's
    folders: bench-hunt-PROGRAM-STRATEGY-SEED/STAMP/hunt.jsonl)."""
    for d in dirs:
        for log in sorted(d.rglob("hunt.jsonl")):
            if "latest" in log.parts:  # the store's link to a hunt's newest folder
                continue
            label = log.parent.parent.name.removeprefix("bench-hunt-")
            program, _, seed = label.rpartition("-")
            program, _, strategy = program.rpartition("-")
            lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
            if lines:
                yield program, strategy, int(seed), lines


def base_class(line: dict[str, Any], first: bool) -> str:
    """What a logged run reached, by its reward less NOVELTY (which includes a near miss's
    lift of a landed or missed run to close, as `_Hunt.ended` gives it)."""
    if line["reached"] == "found":
        return "found"
    r = float(line["reward"])
    if line.get("new_states") and not first and r >= NOVELTY - 1e-9:
        r -= NOVELTY
    return "close" if r >= REWARD["close"] - 1e-9 else "landed" if r > 1e-9 else "missed"


def calibrate(dirs: list[Path]) -> dict[str, Any]:
    kinds: dict[str, dict[str, list[int]]] = {}
    reached_only: dict[str, dict[str, list[int]]] = {}  # by the verdict alone: no near lift
    novel = [0, 0]
    finds: dict[str, dict[str, list[int]]] = {}
    families: dict[str, str] = {}
    for program, _, _, lines in read_hunts(dirs):
        if program not in families:
            try:
                families[program] = family_of(program)
            except SystemExit:
                families[program] = "?"
        fam = families[program]
        for i, line in enumerate(lines):
            c = Choice.from_json(line["choice"])
            got = base_class(line, i == 0)
            for part in c.parts():
                row = finds.setdefault(program, {}).setdefault(part.fault, [0, 0])
                row[0] += 1
                row[1] += got == "found"
            if got == "found":
                continue
            if i:
                novel[0] += 1
                novel[1] += bool(line.get("new_states"))
            for part in c.parts():
                counts = kinds.setdefault(fam, {}).setdefault(part.fault, [0, 0, 0])
                counts[OUTCOMES.index(got)] += 1
                plain = reached_only.setdefault(fam, {}).setdefault(part.fault, [0, 0, 0])
                plain[OUTCOMES.index(line["reached"])] += 1
    return {
        "kinds": kinds,
        "kinds_without_near": reached_only,
        "novelty": round(novel[1] / novel[0], 3) if novel[0] else 0.0,
        "novelty_runs": novel[0],
        "finds": finds,  # program -> fault -> [runs with it, runs that found]
    }


def said(cal: dict[str, Any]) -> str:
    """The calibration as CALIBRATION's literal: a kind's counts, a program's finds, a line each."""
    out = ["{"]
    for table in ("kinds", "kinds_without_near"):
        out.append(f"    {table!r}: {{")
        for fam, kinds in sorted(cal[table].items()):
            out.append(f"        {fam!r}: {{")
            out += [f"            {k!r}: {v}," for k, v in sorted(kinds.items())]
            out.append("        },")
        out.append("    },")
    out += [f'    "novelty": {cal["novelty"]},']
    out += [f'    "novelty_runs": {cal["novelty_runs"]},', '    "finds": {']
    for prog, faults in sorted(cal["finds"].items()):
        out.append(f"        {prog!r}: {{")
        out += [f"            {k!r}: {v}," for k, v in sorted(faults.items())]
        out.append("        },")
    return "\n".join([*out, "    },", "}"]).replace("'", '"')


KINDS_TABLE = "kinds"  # --without-near: "kinds_without_near" (3edea30's near misses, roughly)


def pooled(family: str, client: bool) -> list[float]:
    """The side's (client or server) outcome shares on the family, else over every family."""
    table = CALIBRATION.get(KINDS_TABLE, {})
    for fams in ([family], list(table)):
        tot = [0, 0, 0]
        for fam in fams:
            for kind, counts in table.get(fam, {}).items():
                if at_client(kind) == client:
                    tot = [a + b for a, b in zip(tot, counts, strict=True)]
        if sum(tot):
            return [x / sum(tot) for x in tot]
    return [0.4, 0.3, 0.3] if client else [0.3, 0.3, 0.4]


@cache
def outcome_shares(family: str, kind: str) -> tuple[float, float, float]:
    """A single kind's shares of close, landed, missed: its own counts shrunk toward its side's
    pool by SHRINK_TO_POOL runs' weight."""
    pool = pooled(family, at_client(kind))
    own = CALIBRATION.get(KINDS_TABLE, {}).get(family, {}).get(kind, [0, 0, 0])
    n = sum(own)
    a, b, _ = (
        (o + SHRINK_TO_POOL * p) / (n + SHRINK_TO_POOL) for o, p in zip(own, pool, strict=True)
    )
    return a, b, 1.0 - a - b


def draw_outcome(family: str, choice: Choice, rng: random.Random) -> str:
    """A run that did not find: the best reach of its parts, each drawn from its kind's
    shares (a pair reaches what the better of its two faults does)."""
    best = 2
    for part in choice.parts():
        close, landed, _ = outcome_shares(family, part.fault)
        u = rng.random()
        best = min(best, 0 if u < close else 1 if u < close + landed else 2)
    return OUTCOMES[best]


# ---- the simulated hunt ----


@dataclass
class Sim:
    model: Model
    cap: int = 40
    novelty: float | None = None  # None: CALIBRATION's
    outcomes: Callable[[Choice, random.Random], str] | None = None  # None: draw_outcome
    # acd58ee's rule (run/hunt.py `ended`): a close run whose only news is a fault's nature its
    # kind (or a pair's kinds) had shown before earns a landing. This is the chance a close run
    # is such a one (a nature, no near miss); 0: the rule off (the reward before acd58ee).
    # None: NATURES_ONCE (--natures-once).
    natures_once: float | None = None
    family: str = field(init=False)
    menu: Menu = field(init=False)
    tally: Tally = field(init=False, default_factory=Tally)

    def __post_init__(self) -> None:
        self.menu = menu_of(self.model.program)
        self.family = family_of(self.model.program)
        if self.novelty is None:
            self.novelty = float(CALIBRATION.get("novelty", 0.0))
        if self.natures_once is None:
            self.natures_once = NATURES_ONCE

    def outcome(self, choice: Choice, rng: random.Random) -> str:
        if self.outcomes is not None:
            return self.outcomes(choice, rng)
        return draw_outcome(self.family, choice, rng)

    def hunt(self, strategy: str, seed: int) -> int | None:
        """The runs to the first find (1-based), or None within `cap` runs."""
        base = base_of_program(self.model.program)
        rng = random.Random(seed)  # the hunt's own, as run/hunt.py's hunt() seeds it
        world = random.Random(f"world {seed}")  # the runs' outcomes: not the choice's stream
        tally = self.tally = Tally()  # the last hunt's, to read
        natured: set[str] = set()  # kinds whose close runs showed a nature (`_Hunt.natures`)
        self.chosen: list[Choice] = []  # the last hunt's choices, in order
        best = self.oracle_choice() if strategy == "oracle" else None
        for i in range(self.cap):
            if best is not None:
                choice = best
            else:
                choice, _ = choose(
                    "guided" if strategy == "sweep" else strategy, self.menu, tally, rng
                )
                run_spec(base, choice, rng.randrange(2**31), rng)  # _Hunt.round's draws
            self.chosen.append(choice)
            if world.random() < self.model.p_find(choice):
                return i + 1
            reached = self.outcome(choice, world)
            reward = REWARD[reached]
            if reached == "close" and world.random() < (self.natures_once or 0.0):
                kind = choice.arm[1]
                if natured & {kind, *kind.split(" + ")}:
                    reward = REWARD["landed"]  # the same nature again (all natures as one)
                natured.add(kind)
            if i and world.random() < (self.novelty or 0.0):
                reward = min(1.0, reward + NOVELTY)
            tally.add(choice, 0.0 if strategy == "sweep" else reward)
        return None

    def oracle_choice(self) -> Choice:
        options = [c for a in self.menu.arms for c in self.menu.choices(a)]
        return max(options, key=self.model.p_find)


@dataclass
class Stats:
    runs: list[int | None]
    cap: int

    @property
    def found(self) -> float:
        return sum(r is not None for r in self.runs) / len(self.runs)

    @property
    def mean(self) -> float:
        """Mean runs, a hunt that found nothing counted as `cap` (a lower bound of its own)."""
        return statistics.fmean(r if r is not None else self.cap for r in self.runs)

    @property
    def median(self) -> float:
        return statistics.median(r if r is not None else math.inf for r in self.runs)

    def within(self, k: int) -> float:
        return sum(r is not None and r <= k for r in self.runs) / len(self.runs)


def simulate(sim: Sim, strategy: str, seeds: range) -> Stats:
    return Stats([sim.hunt(strategy, s) for s in seeds], sim.cap)


@contextmanager
def constants(**given: float) -> Iterator[None]:
    """run/hunt_choice.py's constants (PRIOR, SERVER_PRIOR, EXPLORE, SHRINK, PAIR_WAIT) set for
    the block (read at each call, so `choose` sees them), then restored."""
    old = {k: getattr(hunt_choice, k) for k in given}
    try:
        for k, v in given.items():
            setattr(hunt_choice, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(hunt_choice, k, v)


def fmt(x: float) -> str:
    return "none" if math.isinf(x) else f"{x:.3g}"


def ratio(a: float, b: float) -> str:
    if math.isinf(a) or math.isinf(b) or not b:
        return "-"
    return f"{a / b:.2f}"


def table(names: list[str], n: int, cap: int, strategies: tuple[str, ...]) -> str:
    rows = [
        f"| model | strategy | found within {cap} | mean runs (cap {cap}) | median runs | "
        + " | ".join(f"P(found within {k})" for k in KS)
        + " | random/this: median, mean |",
        "|---|---|---|---|---|" + "---|" * len(KS) + "---|",
    ]
    for name in names:
        sim = Sim(MODELS[name], cap)
        got = {s: simulate(sim, s, range(1, n + 1)) for s in strategies}
        r = got.get("random")
        for s, st in got.items():
            rel = (
                f"{ratio(r.median, st.median)}, {ratio(r.mean, st.mean)}"
                if r is not None and s != "random"
                else "-"
            )
            rows.append(
                f"| `{name}` | {s} | {st.found:.0%} | {st.mean:.2f} | {fmt(st.median)} | "
                + " | ".join(f"{st.within(k):.0%}" for k in KS)
                + f" | {rel} |"
            )
    return "\n".join(rows)


# Each changed alone from today's (PRIOR 0.5, SERVER_PRIOR 0.25, EXPLORE 0.5, SHRINK 1,
# PAIR_WAIT 0), and two
# together; NOVELTY (run/hunt.py) off as the sim's own parameter.
SWEEP: list[tuple[str, dict[str, float], float | None]] = [
    ("today", {}, None),
    ("PRIOR 0.75", {"PRIOR": 0.75}, None),
    ("PRIOR 1.0", {"PRIOR": 1.0}, None),
    ("SERVER_PRIOR 0.4", {"SERVER_PRIOR": 0.4}, None),
    ("SERVER_PRIOR 0.5", {"SERVER_PRIOR": 0.5}, None),
    ("EXPLORE 0.25", {"EXPLORE": 0.25}, None),
    ("EXPLORE 1.0", {"EXPLORE": 1.0}, None),
    ("SHRINK 0.5", {"SHRINK": 0.5}, None),
    ("SHRINK 2", {"SHRINK": 2.0}, None),
    ("EXPLORE 2.0", {"EXPLORE": 2.0}, None),
    ("PAIR_WAIT 0.25", {"PAIR_WAIT": 0.25}, None),
    ("PAIR_WAIT 0.375", {"PAIR_WAIT": 0.375}, None),
    ("PRIOR 1.0, EXPLORE 0.25", {"PRIOR": 1.0, "EXPLORE": 0.25}, None),
    ("SERVER_PRIOR 0.4, EXPLORE 1.0", {"SERVER_PRIOR": 0.4, "EXPLORE": 1.0}, None),
    ("EXPLORE 1.0, PAIR_WAIT 0.375", {"EXPLORE": 1.0, "PAIR_WAIT": 0.375}, None),
    ("no novelty", {}, 0.0),
]


def sweep(names: list[str], n: int, cap: int, only: list[str] | None = None) -> str:
    """Guided's mean runs per model under each setting (`only` those labels, and today's),
    and each over today's."""
    means: dict[str, dict[str, float]] = {}
    for label, given, novelty in SWEEP:
        if only and label != "today" and label not in only:
            continue
        with constants(**given):
            means[label] = {
                name: simulate(Sim(MODELS[name], cap, novelty), "guided", range(1, n + 1)).mean
                for name in names
            }
    head = "| setting | " + " | ".join(f"`{x}`" for x in names) + " | geometric mean | worst |"
    rows = [head, "|---|" + "---|" * (len(names) + 2)]
    today = means["today"]
    for label, m in means.items():
        rel = [m[x] / today[x] for x in names]
        geo = math.exp(statistics.fmean(math.log(x) for x in rel))
        rows.append(
            f"| {label} | "
            + " | ".join(f"{m[x]:.2f} ({r:.2f})" for x, r in zip(names, rel, strict=True))
            + f" | {geo:.2f} | {max(rel):.2f} |"
        )
    return "\n".join(rows)


def five(names: list[str], n: int, cap: int, k: int = 5, draws: int = 4000) -> str:
    """What a benchmark of `k` seeds a strategy would show: the ratio of random's median runs
    to guided's over `k` hunts each, resampled from the simulated hunts (a hunt that found
    nothing counted as `cap`): its 10th, 50th and 90th percentiles, and how often it is 5 or
    more."""
    rows = [
        f"| model | {k}-seed ratio of medians: 10 %, 50 %, 90 % | P(ratio >= 5) |",
        "|---|---|---|",
    ]
    pick = random.Random(f"{k} seeds")
    for name in names:
        sim = Sim(MODELS[name], cap)
        got = {
            s: [r if r is not None else cap for r in simulate(sim, s, range(1, n + 1)).runs]
            for s in ("guided", "random")
        }
        ratios = sorted(
            statistics.median(pick.choices(got["random"], k=k))
            / statistics.median(pick.choices(got["guided"], k=k))
            for _ in range(draws)
        )
        q = [ratios[int(f * (draws - 1))] for f in (0.1, 0.5, 0.9)]
        big = sum(r >= 5 for r in ratios) / draws
        rows.append(f"| `{name}` | {q[0]:.2f}, {q[1]:.2f}, {q[2]:.2f} | {big:.0%} |")
    return "\n".join(rows)


def positions(program: str, n: int, cap: int, p: float) -> str:
    """Each single kind of the program's menu alone showing the bug with chance `p` a run:
    the mean runs (cap `cap`) of each strategy, by the kind's side, and the worst kind."""
    m = menu_of(program)
    singles = [k for k in dict.fromkeys(a[1] for a in m.arms) if " + " not in k]
    strategies = ("guided", "sweep", "random")
    by: dict[str, dict[str, list[float]]] = {"client": {}, "server": {}}
    for kind in singles:
        sim = Sim(Model(program, (Exposure(kind, p),), f"only {kind}"), cap)
        side = "client" if at_client(kind) else "server"
        for s in strategies:
            by[side].setdefault(s, []).append(simulate(sim, s, range(1, n + 1)).mean)
    rows = []
    for side, got in by.items():
        cells = ", ".join(
            f"{s} {statistics.fmean(v):.1f} (worst kind {max(v):.1f})" for s, v in got.items()
        )
        rows.append(f"| `{program}` | {side} ({len(got['guided'])} kinds) | {cells} |")
    return "\n".join(rows)


def replay(dirs: list[Path]) -> str:
    """Each logged hunt replayed: the sim's choices, fed the logged rewards, against the
    logged choices, run by run; a strategy's first choice is the seed's."""
    out = []
    for program, strategy, seed, lines in read_hunts(dirs):
        base = base_of_program(program)
        m = menu_of(program)
        rng = random.Random(seed)
        tally = Tally()
        same = 0
        for line in lines:
            choice, _ = choose(strategy, m, tally, rng)
            run_spec(base, choice, rng.randrange(2**31), rng)
            if choice.to_json() != line["choice"]:
                break
            same += 1
            tally.add(choice, float(line["reward"]))
        out.append(f"{program} {strategy} {seed}: {same} of {len(lines)} choices the same")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--seeds", type=int, default=2000, help="hunts per strategy (seeds 1..N)")
    p.add_argument("--cap", type=int, default=40, help="runs a hunt makes at most")
    p.add_argument("--strategies", default="guided,random,sweep,oracle")
    p.add_argument("--novelty", type=float, default=None, help="P(NOVELTY), default calibrated")
    p.add_argument(
        "--natures-once",
        type=float,
        default=0.0,
        metavar="P",
        help="acd58ee's reward rule, a close run being a nature without a near miss with P",
    )
    p.add_argument(
        "--without-near",
        action="store_true",
        help="a run's reach by its verdict alone, no near-miss lift (3edea30, roughly)",
    )
    p.add_argument("--sweep", action="store_true", help="guided under changed constants")
    p.add_argument("--settings", help="--sweep: only these labels of SWEEP, `;` between them")
    p.add_argument("--five", action="store_true", help="the ratio a 5-seed benchmark shows")
    p.add_argument("--calibrate", nargs="+", type=Path, metavar="DIR")
    p.add_argument("--replay", nargs="+", type=Path, metavar="DIR")
    p.add_argument(
        "--positions", type=float, metavar="P", help="each single kind alone shows it with P"
    )
    a = p.parse_args(argv)
    if a.calibrate:
        print(said(calibrate(a.calibrate)))
        return 0
    if a.replay:
        print(replay(a.replay))
        return 0
    names = a.names or list(MODELS)
    unknown = [x for x in names if x not in MODELS]
    if unknown or a.seeds < 1 or a.cap < 1:
        print(
            f"not a model, or no seeds or runs: {', '.join(unknown) or a.seeds}; models: "
            f"{', '.join(MODELS)}",
            file=sys.stderr,
        )
        return 254
    if a.novelty is not None:
        CALIBRATION["novelty"] = a.novelty
    global NATURES_ONCE, KINDS_TABLE
    NATURES_ONCE = a.natures_once
    KINDS_TABLE = "kinds_without_near" if a.without_near else "kinds"
    print(
        f"N {a.seeds} hunts a strategy, cap {a.cap} runs, novelty {CALIBRATION.get('novelty')}, "
        f"natures once {NATURES_ONCE}, outcomes {KINDS_TABLE}"
    )
    if a.positions is not None:
        print("| program | one kind shows it, its side | mean runs: guided, sweep, random |")
        print("|---|---|---|")
        for program in dict.fromkeys(MODELS[x].program for x in names):
            print(positions(program, a.seeds, a.cap, a.positions))
    elif a.sweep:
        print(sweep(names, a.seeds, a.cap, a.settings.split(";") if a.settings else None))
    elif a.five:
        print(five(names, a.seeds, a.cap))
    else:
        print(table(names, a.seeds, a.cap, tuple(a.strategies.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
