"""Guided vs random hunts on the zoo: per program, strategy and seed, the runs and the wall time
to the first violation the hunt finds (or how many runs it made without one), then the median
per program and strategy over the hunts that found one, and the gate's verdict on the program.

    .venv/bin/python benchmarks/hunt.py [--budget 4m] [--seeds 1,2,3,4,5] [--store DIR] \
        [--strategies guided,random] [--gate | --gate-only] [--out rows.jsonl] [--image IMG] \
        [--param KEY=VALUE ...] NAME ...
    .venv/bin/python benchmarks/hunt.py --table rows.jsonl ...   # the markdown table of rows
    .venv/bin/python benchmarks/hunt.py --block rows.jsonl ...   # a note's JSON block of them
    .venv/bin/python benchmarks/hunt.py --gate-table rows.jsonl ...  # program x gate scenario
    .venv/bin/python benchmarks/hunt.py --learned rows.jsonl ...  # the kinds guided preferred

NAME: a zoo program without .py (benchmarks/zoo/NAME.toml, or benchmarks/zoo-outside/'s, gives
its service, command, workload, clients, session and parameters, a fenced control's
`resource`/`property` among them; its schedule is ignored: the hunt chooses). Or
`recipe:RECIPE[@FAULT,...]`: a recipe of the catalogue on its own backend with the hunt's
defaults, as `zkjepsen hunt --recipe RECIPE [--faults FAULT,...]` takes it
(`recipe:kazoo@kill-leader`: one cell, the fault kind pinned; a pinned fault that needs the wire
proxy turns it on; `--param` applies to recipe names only). Each hunt is run/hunt.py's `hunt()`
with the CLI's short defaults (cli/hunt.py `hunt_base`), one after another (the machine is
shared): no confirmation, no shrink, the first run that finds ends it. `--gate`: once per
program, the gate's three scenarios (run/gate.py, as `zkjepsen gate` with the program's
settings, the first seed) and its verdict. `--gate-only`: the gate and no hunt, every scenario
run to its own end (as `zkjepsen gate --run-all`: the first invalid one does not end the
others), so each scenario's verdict is known; each scenario's row says what it saw (its belief
overlaps, how many beyond a lease's or a fault's nature, its effect overlaps, and what the
hunt's rule calls the run: `found` a defect, `close` only a fault's nature). `--out`: each row
as a JSON line as it ends (a table is made from them).

The figures are a sample of the seeds given, on a loaded machine (the load average is printed
at the start of each hunt): wall times include every run's setup and teardown; the runs column
is the one to compare. For a fenced control (`property = effect`), a hunt that finds nothing is
the goal: its row says how many runs it made.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ZOO = Path(__file__).resolve().parent / "zoo"
KEYS = ("backend", "client_cmd", "workload", "clients", "nodes", "proxy")
# what `zkjepsen gate` takes of a program's settings
GATE_KEYS = ("backend", "client_cmd", "client_dir", "workload", "proxy", "image")


# The outsider's zoo (benchmarks/zoo-outside/README.md): programs written from the user docs
# alone, hunted the same way; its names do not meet the zoo's.
ZOOS = (ZOO, ZOO.parent / "zoo-outside")


def zoo_of(name: str) -> Path:
    """The zoo folder that holds NAME.toml (the zoo's first, then the outsider's)."""
    for folder in ZOOS:
        if (folder / f"{name}.toml").is_file():
            return folder
    raise SystemExit(f"{name!r} is not a program of {' or '.join(str(z) for z in ZOOS)}")


def settings_of(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the program's target settings, its params) from its .toml."""
    zoo = zoo_of(name)
    conf = tomllib.loads((zoo / f"{name}.toml").read_text())
    given = {k: conf.get(k) for k in KEYS} | {"client_dir": str(zoo), **IMAGE}
    if conf.get("session_timeout_s") is not None:
        given["session_timeout_s"] = conf["session_timeout_s"]
    return given, dict(conf.get("params") or {})


IMAGE: dict[str, str] = {}  # --image, when given: the servers' image of every run


RECIPE = "recipe:"
PARAMS: dict[str, Any] = {}  # --param: the workload parameters of every recipe NAME


def cell_of(name: str) -> tuple[str, list[str] | None]:
    """`recipe:kazoo@kill-leader` -> ("kazoo", ["kill-leader"]); no `@`: every fault (None)."""
    recipe, _, faults = name.removeprefix(RECIPE).partition("@")
    return recipe, [f.strip() for f in faults.split(",")] if faults else None


def recipe_base(name: str):
    """A recipe NAME's base spec: `zkjepsen hunt --recipe R --faults F --param ...` with the
    CLI's defaults (15 s runs, its own session), behind the wire proxy if a pinned fault
    needs one."""
    from zkjepsen.cli.hunt import hunt_base
    from zkjepsen.faultkinds import KINDS, WIRE_PROXY

    recipe, faults = cell_of(name)
    proxy = any(WIRE_PROXY in KINDS[f].client_needs for f in faults or () if f in KINDS)
    given = {"recipe": recipe, "proxy": proxy or None, **IMAGE}
    return hunt_base(given, 15.0, None, dict(PARAMS), {})


def base_of(name: str):
    from zkjepsen.cli.hunt import hunt_base

    if name.startswith(RECIPE):
        return recipe_base(name)
    given, params = settings_of(name)
    session = given.pop("session_timeout_s", None)
    # the program's own run length where it needs more than the hunt's 15 s (a waiter stuck
    # behind an orphan shows past liveness's bound only in a longer run: zoo README)
    limit = max(
        15.0,
        float(tomllib.loads((zoo_of(name) / f"{name}.toml").read_text()).get("time_limit_s", 0)),
    )
    return hunt_base(given, limit, session, params, {})


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def lines_of(folder: Path) -> list[dict]:
    log = folder / "hunt.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines() if x] if log.exists() else []


def one(name: str, strategy: str, seed: int, budget_s: float, store: Path) -> dict:
    from zkjepsen.run.hunt import hunt, menu
    from zkjepsen.store import new_run_dir

    base = base_of(name)
    label = name.removeprefix(RECIPE).replace("@", "-").replace(",", "-")
    folder = new_run_dir(f"bench-hunt-{label}-{strategy}-{seed}", store).path
    at_start = load()
    only = cell_of(name)[1] if name.startswith(RECIPE) else None  # --faults, as the CLI's
    r = hunt(base, menu(base, only), budget_s, strategy, seed, folder)
    found = r.found
    lines = lines_of(folder)
    split = next((x for x in lines if "belief overlaps" in x["words"]), None)
    return {
        "program": name,
        "strategy": strategy,
        "seed": seed,
        "found": found is not None,
        "runs": (found["run"] + 1) if found else r.runs,
        "wall_s": found["elapsed_s"] if found else round(r.wall_s, 1),
        "per_run_s": round(r.wall_s / max(1, r.runs), 1),
        "what": (found["choice"] if found else r.coverage_line()),
        "words": found["words"] if found else "",
        "reached": [x["reached"] for x in lines],
        # the first run with a split of any nature (a lease's too), 1-based, and when it ended
        "first_split": [split["run"] + 1, split["elapsed_s"]] if split else None,
        "load": at_start,
        "folder": str(folder),
    }


WORD = {True: "VALID", False: "INVALID"}


def scenario_of(row: Any, wall_s: float | None) -> dict:
    """One gate scenario's run, as the note's table reads it: its verdict, what its lock part
    saw, and what the hunt's rule (run/hunt.py `finding`) calls the run: `found` (a defect of
    the lock, or an invalid part no nature explains), `close` (each violation a lease's or a
    fault's nature), `landed`/`missed` (none)."""
    from zkjepsen.run.finding import finding

    results = row.run.results if row.run is not None and isinstance(row.run.results, dict) else {}
    lock = results.get("lock") if isinstance(results.get("lock"), dict) else {}
    details = lock.get("details") if isinstance(lock.get("details"), dict) else lock
    reached, words = finding(results)
    return {
        "scenario": row.scenario,
        "verdict": WORD.get(row.valid, "UNKNOWN"),
        "reached": reached,
        "words": words,
        "splits": details.get("belief_overlap_count"),
        "beyond": details.get("beyond_lease_count"),
        "lease": details.get("lease_split_count"),
        "effect": details.get("effect_overlap_count"),
        "invalid": sorted(
            k for k, p in results.items() if isinstance(p, dict) and p.get("valid") is False
        ),
        "line": row.line,
        "skipped": row.skipped,
        "wall_s": wall_s,
        "folder": row.store_dir,
    }


def gate_of(name: str, seed: int, store: Path, run_all: bool = False) -> dict:
    """The gate's three scenarios on the program (its settings, as `zkjepsen gate` would take
    them), one at a time: the verdict and each scenario's line and what it saw. `run_all`:
    every scenario to its own end (`gate --run-all`), not just until the first invalid one."""
    from zkjepsen.run.gate import SCENARIOS, gate_specs, run_gate, verdict

    given, params = settings_of(name)
    settings = {k: v for k, v in given.items() if v is not None and k in GATE_KEYS}
    settings |= {"seed": seed, "time_limit_s": 60.0, "params": params}
    names = list(SCENARIOS)
    at_start = load()
    started = time.monotonic()
    ended: list[float] = []  # one scenario at a time: each one's wall is from the one before

    def done(row: Any) -> None:
        ended.append(time.monotonic())
        print(f"  {name} {row.scenario}: {WORD.get(row.valid, 'UNKNOWN')} {row.line}", flush=True)

    specs = gate_specs(settings, names, 0.10)
    rows = run_gate(specs, names, 1, store / "gate" / name, on_done=done, run_all=run_all)
    walls = [round(b - a, 1) for a, b in zip([started, *ended], ended, strict=False)]
    v = verdict(rows)
    return {
        "program": name,
        "strategy": "gate",
        "seed": seed,
        "run_all": run_all,
        "verdict": WORD.get(v, "UNKNOWN"),
        "rows": [f"{r.scenario} {r.valid}: {r.line}" for r in rows],
        "scenarios": [
            scenario_of(r, walls[i] if i < len(walls) and not r.skipped else None)
            for i, r in enumerate(rows)
        ],
        "wall_s": round(time.monotonic() - started, 1),
        "load": load(),  # at its end; `load_start` at its start
        "load_start": at_start,
    }


def gate_cell(s: dict) -> str:
    """One scenario of the gate table: `INVALID, found: 1 of 1 beyond (12 s)`."""
    if s.get("skipped"):
        return f"{s['verdict']} ({s['skipped']})"
    seen = f"{s['splits'] or 0} splits, {s['beyond'] or 0} beyond, {s['effect'] or 0} effect"
    wall = f", {s['wall_s']:.0f} s" if s.get("wall_s") is not None else ""
    bad = f"; invalid: {', '.join(s['invalid'])}" if s["invalid"] else ""
    return f"{s['verdict']}, {s['reached']} ({seen}{bad}{wall})"


def loads(g: dict) -> str:
    """A gate row's load average at its start and its end: `7.6-18.4`."""
    end = g["load"].split()[-1]
    return f"{g['load_start'].split()[-1]}-{end}" if g.get("load_start") else end


def gate_table(paths: list[Path]) -> str:
    """The gate rows `--out` wrote, as a markdown table: program x scenario, the verdict."""
    rows = [json.loads(x) for p in paths for x in p.read_text().splitlines() if x.strip()]
    gates = [r for r in rows if r["strategy"] == "gate" and r.get("scenarios")]
    names = list(dict.fromkeys(s["scenario"] for g in gates for s in g["scenarios"]))
    out = [
        "| program | " + " | ".join(names) + " | the gate | wall | load |",
        "|---|" + "---|" * (len(names) + 3),
    ]
    for g in gates:
        by = {s["scenario"]: gate_cell(s) for s in g["scenarios"]}
        cells = [by.get(n, "-") for n in names]
        out.append(
            f"| `{g['program']}` | "
            + " | ".join(cells)
            + f" | {g['verdict']} | {g['wall_s']:.0f} s | {loads(g)} |"
        )
    return "\n".join(out)


def summary(rows: list[dict], names: list[str], strategies: list[str]) -> None:
    print("\nprogram                strategy  found  median runs  median wall s (every hunt)")
    for name in names:
        for strategy in strategies:
            got = [r for r in rows if r["program"] == name and r["strategy"] == strategy]
            hit = [r for r in got if r["found"]]
            runs, wall = (said(*median_of(got, k), "") if got else "-" for k in ("runs", "wall_s"))
            print(f"{name:22} {strategy:8}  {len(hit)}/{len(got)}  {runs:>11}  {wall}")
        for g in (r for r in rows if r["program"] == name and r["strategy"] == "gate"):
            print(f"{name:22} gate      {g['verdict']}: " + "; ".join(g["rows"]))


def cell(rows: list[dict]) -> str:
    """One strategy's hunts on one program: found k of n, the runs to the first violation of
    each seed (`-` none within the budget, with its runs), their median, the median wall."""
    if not rows:
        return "not measured"
    hit = [r for r in rows if r["found"]]
    each = ", ".join(
        str(r["runs"]) if r["found"] else f"none in {r['runs']}"
        for r in sorted(rows, key=lambda r: r["seed"])
    )
    if not hit:
        return f"0 of {len(rows)} ({each})"
    runs, wall = said(*median_of(rows, "runs"), " runs"), said(*median_of(rows, "wall_s"), " s")
    return f"{len(hit)} of {len(rows)}: runs {each}; median {runs}, {wall}"


def median_of(rows: list[dict], key: str) -> tuple[float, bool]:
    """The median over EVERY hunt of `key` (runs, wall time) to the first violation, and
    whether it is censored. A hunt that found none within the budget took longer than it ran
    (right-censored): it counts after every hunt that found one (exact for the wall time, whose
    budget is the same for all; for runs, near enough where hunts make about as many runs), at
    its own figure as a bound. The median is censored when it falls on such a hunt (half or
    more found none): then it is a lower bound. The median of the finds alone (as this table
    gave it until 2026-11-30) drops the hunts that failed, and a strategy that found once in
    five, at run 1, would have had the best median."""
    ranked = sorted(rows, key=lambda r: (not r["found"], r[key]))
    n = len(ranked)
    mid = ranked[(n - 1) // 2 : n // 2 + 1]  # the middle one, or the two middle ones
    return sum(r[key] for r in mid) / len(mid), not mid[-1]["found"]


def said(value: float, censored: bool, unit: str) -> str:
    """A median as the table says it: `23 runs`, `503 s`; `> 27 runs` when censored."""
    shown = f"{value:.0f}" if unit == " s" else f"{value:g}"
    return f"{'> ' if censored else ''}{shown}{unit}"


def kinds(rows: list[dict]) -> str:
    """What the hunts that found something found, counted: splits beyond a lease's or a fault's
    nature (checker/nature.py), or the invalid parts (`invalid: atomicity`); then the fault
    kinds of the runs that found them (a pair's two as `a + b`), counted."""
    beyond = "splits beyond a lease's or a fault's nature"
    hit = [r for r in rows if r["found"]]
    words = [beyond if "beyond a lease" in r["words"] else r["words"] for r in hit]
    said = ", ".join(f"{w} {words.count(w)}" for w in dict.fromkeys(words))
    by = [fault_of(r["what"]) for r in hit if isinstance(r.get("what"), dict)]
    if by:
        said += "; by " + ", ".join(f"{k} {by.count(k)}" for k in sorted(set(by), key=by.index))
    return said


def fault_of(choice: dict) -> str:
    """A found run's fault kinds, from its choice: `clock-skew-client`, a pair `a + b`."""
    then = choice.get("then")
    return str(choice["fault"]) + (f" + {fault_of(then)}" if isinstance(then, dict) else "")


def ratio(by: dict[str, list[dict]]) -> str:
    """Random's median over guided's, in runs and in wall time to the first violation, over
    every hunt of each (`median_of`: a hunt that found none counts as longer than it ran; the
    issue's goal: guided's median at least 5x shorter, on the programs random finds at all).
    `>= k` when random's median is censored (a lower bound); `-` when either found none, or
    guided's median is censored."""
    if not all(any(r["found"] for r in by.get(s, ())) for s in ("guided", "random")):
        return "-"
    out = []
    for key, unit in (("runs", "runs"), ("wall_s", "wall")):
        (g, g_cut), (r, r_cut) = median_of(by["guided"], key), median_of(by["random"], key)
        if g_cut:
            return "-"
        out.append(f"{'>= ' if r_cut else ''}{r / g:.1f}x {unit}")
    return ", ".join(out)


def cost(rows: list[dict]) -> str:
    """The median wall time of a run (its setup and teardown included) over the hunts."""
    each = [r["per_run_s"] for r in rows if r.get("per_run_s")]
    return f"{statistics.median(each):.0f} s" if each else "-"


def programs(paths: list[Path]) -> list[dict]:
    """The rows `--out` wrote (one file or several), per program: its seeds, each strategy's
    cell, what the finds were, the gate's verdict and the load they ran at."""
    rows = [json.loads(x) for p in paths for x in p.read_text().splitlines() if x.strip()]
    out = []
    for name in dict.fromkeys(r["program"] for r in rows):
        mine = [r for r in rows if r["program"] == name]
        hunts = [r for r in mine if r["strategy"] != "gate"]
        gate = next((r for r in mine if r["strategy"] == "gate"), None)
        loads = sorted(float(r["load"].split()[1]) for r in mine)
        by = {s: [r for r in hunts if r["strategy"] == s] for s in ("guided", "random")}
        out.append(
            {
                "program": f"`{name}`",
                "seeds": ",".join(str(s) for s in sorted({r["seed"] for r in hunts})),
                "guided": cell(by["guided"]),
                "random": cell(by["random"]),
                "finds": kinds(hunts) or "-",
                "ratio": ratio(by),
                "cost": cost(hunts),
                "gate": f"{gate['verdict']} ({gate['wall_s']:.0f} s)" if gate else "not run",
                "load": f"{loads[0]:.0f}-{loads[-1]:.0f}",
            }
        )
    return out


def table(paths: list[Path]) -> str:
    """The markdown table of the rows `--out` wrote (one file or several)."""
    out = [
        "| program | seeds | guided: found, runs to the first violation | random: the same "
        "| random's median / guided's | what the finds were, by | a run | the gate | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ("program", "seeds", "guided", "random", "ratio", "finds", "cost", "gate", "load")
    out += ["| " + " | ".join(p[k] for k in keys) + " |" for p in programs(paths)]
    return "\n".join(out)


def block(paths: list[Path]) -> str:
    """The same rows as a dated note's JSON block of hunted cells (docs/findings.md's table of
    them is drawn from such blocks: benchmarks/findings_current.py); `budget`, `date`,
    `command` and `section` are left to fill."""
    fill = {"budget": "", "date": "", "command": "", "section": ""}
    drop = ("gate", "ratio", "cost")  # the table's columns, not findings.md's
    rows = [{k: v for k, v in p.items() if k not in drop} | fill for p in programs(paths)]
    return json.dumps(rows, indent=1, ensure_ascii=False)


def learned(paths: list[Path]) -> str:
    """What the guided hunts learned to prefer, per program: each fault kind (a pair as
    `a + b`) its hunts drew, how often, and the mean reward its runs earned (run/hunt.py
    REWARD: 1 found, 0.5 close, 0.25 landed, 0 missed, novelty on top), best first; read
    from each hunt's own hunt.jsonl (its folder in the row)."""
    rows = [json.loads(x) for p in paths for x in p.read_text().splitlines() if x.strip()]
    out = ["| program | guided runs | kinds drawn | best by mean reward (runs, mean) |"]
    out.append("|---|---|---|---|")
    for name in dict.fromkeys(r["program"] for r in rows):
        runs = [
            line
            for r in rows
            if r["program"] == name and r["strategy"] == "guided" and r.get("folder")
            for line in lines_of(Path(r["folder"]))
        ]
        if not runs:
            continue
        by: dict[str, list[float]] = {}
        for line in runs:
            by.setdefault(fault_of(line["choice"]), []).append(float(line.get("reward", 0.0)))
        ranked = sorted(by.items(), key=lambda kv: (-statistics.mean(kv[1]), -len(kv[1])))
        best = ", ".join(f"{k} ({len(v)}, {statistics.mean(v):.2f})" for k, v in ranked[:4])
        out.append(f"| `{name}` | {len(runs)} | {len(by)} | {best} |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    shown = {"--table": table, "--block": block, "--gate-table": gate_table, "--learned": learned}
    if argv[:1] and argv[0] in shown:  # of rows already measured: nothing is run
        print(shown[argv[0]]([Path(p) for p in argv[1:]]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--budget", default="4m")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--strategies", default="guided,random")
    ap.add_argument("--gate", action="store_true", help="the gate's verdict on each program")
    ap.add_argument(
        "--gate-only",
        action="store_true",
        help="only the gate, each of its scenarios to its own end (`gate --run-all`); no hunt",
    )
    ap.add_argument("--store", type=Path, default=Path("store"))
    ap.add_argument("--out", type=Path, default=None, help="each row as a JSON line")
    ap.add_argument("--image", default=None, help="the servers' image (as `hunt --image`)")
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE, recipe NAMEs only")
    args = ap.parse_args(argv)
    from zkjepsen.cli.engines import prepare
    from zkjepsen.cli.options import parse_duration, parse_params

    budget_s = parse_duration(args.budget, "--budget")
    PARAMS.update(parse_params(args.param))
    if args.image:
        IMAGE["image"] = args.image
    seeds = [int(s) for s in args.seeds.split(",")]
    strategies = [s.strip() for s in args.strategies.split(",")]
    if not args.image:  # (with --image: that image as it is, nothing built)
        prepare(None, base_of(args.names[0]).image, specs=tuple(base_of(n) for n in args.names))
    rows = []

    def keep(row: dict) -> None:
        rows.append(row)
        if args.out is not None:
            with args.out.open("a") as f:
                f.write(json.dumps(row, default=str) + "\n")

    for name in args.names:
        if args.gate or args.gate_only:
            g = gate_of(name, seeds[0], args.store, run_all=args.gate_only)
            keep(g)
            print(f"{name:22} gate: {g['verdict']} ({g['wall_s']:.0f} s, {g['load']})", flush=True)
        for seed in seeds if not args.gate_only else ():
            for strategy in strategies:
                row = one(name, strategy, seed, budget_s, args.store)
                keep(row)
                state = "found" if row["found"] else "none"
                print(
                    f"{name:22} {strategy:7} seed {seed}: {state} after {row['runs']} runs, "
                    f"{row['wall_s']:.0f} s ({row['load']})  {row['what']}",
                    flush=True,
                )
    summary(rows, args.names, strategies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
