"""A sweep's record and its result: the violation rate at each point with its Wilson 95 %
interval (belief, effect and half-done apart), the boundary each shows (report/boundary.py),
and the table, JSON and words of it. The plot and the page: report/sweep_page.py.

A sweep writes `sweep-runs.json` in its folder after every run, as a matrix writes
matrix-runs.json: its settings (the axis among them) and each run (its point, seed, verdict,
results and folder relative to the sweep's). `--resume` continues it, `merge` renders it (or
joins the records of one sweep's folders). It is read back through the one opener and checked
whole (SCHEMA, then the rules relating its fields) before anything acts on it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from zkjepsen.checker import as_result
from zkjepsen.errors import BadInput
from zkjepsen.report.boundary import Point, estimate
from zkjepsen.report.stats import wilson
from zkjepsen.store import check_verdicts, regular, schema
from zkjepsen.store.schema import (
    Anything,
    Field,
    Int,
    ListOf,
    MapOf,
    Num,
    OneOf,
    Opt,
    Scalar,
    Str,
    Table,
    Wrong,
)

RECORD = "sweep-runs.json"
FIX = "give the folder of a `zkjepsen sweep` (its sweep-runs.json as the sweep wrote it)"
# What a run shows, each judged on its own: the verdict, and the three kinds of violation.
MEASURES = ("invalid", "belief", "effect", "half_done")
KIND_OF = {"belief": "belief", "effect": "effect", "half_done": "half-done-read"}
# Settings a --resume and a merge must find the same: anything else is another sweep. The
# runs per point may grow; the target rate and the refinement only read the points.
LOOSE = ("runs", "target_rate", "until_boundary")
VERDICT = OneOf((True, False, "unknown"))

AXIS = Table(
    {
        "fault": Str(),
        "param": Str(),
        "relative": OneOf((True, False)),
        "timing_s": Opt(Num(above=0)),
        "grid": ListOf(Num(), min=2, unique=True),
        "grain": Num(above=0),
    },
    what="the swept axis",
)
SETTINGS = Table(
    {
        "recipe": Str(),
        "backend": Str(),
        "workload": Str(),
        "nodes": Int(1, 9),
        "clients": Int(1, 100),
        "time_limit_s": Num(above=0),
        "session_timeout_s": Num(above=0),
        "interval_s": Num(0, 3600),
        "params": MapOf(Scalar()),
        "fault_trigger": Field(Opt(Str()), required=False),
        "seed": Int(),
        "runs": Int(1, 100),
        "target_rate": Num(above=0, hi=1),
        "until_boundary": Opt(Num(above=0)),
        "services": Field(Opt(MapOf(Anything())), required=False),
        "axis": AXIS,
    },
    what="the sweep's settings",
)
RUN = Table(
    {
        "point": Num(),
        "seed": Int(),
        "valid": VERDICT,
        "results": Table({"valid": VERDICT}, rest=Anything(), what="a verdict table"),
        "store": Str(empty=True),
        "engine": Field(Opt(Str(empty=True)), required=False),
        # The host's 1-minute load average when the run ended (None: not known): clock and
        # pause boundaries shift with it (timing on a loaded machine stretches).
        "load": Field(Opt(Num(lo=0)), required=False),
    },
    what="a run's record",
)
SCHEMA = Table(
    {
        "settings": SETTINGS,
        "runs": ListOf(RUN),
        "origin": Field(Opt(MapOf(Str())), required=False),
    },
    what="a sweep's record of its runs",
)


# ---- the record -----------------------------------------------------------------------------
def host_load() -> float | None:
    """The host's 1-minute load average now (None where the system does not say)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def write_record(folder: Path, settings: dict, runs: list[dict], origin: dict) -> Path:
    """The record, whole or not at all (through a temporary file); runs' folders relative."""
    folder.mkdir(parents=True, exist_ok=True)
    rel = []
    for r in runs:
        store = r["store"]
        if store:
            try:
                store = str(Path(store).resolve().relative_to(folder.resolve()))
            except ValueError:
                pass  # a run kept elsewhere (a worker's folder brought back): as it is
        rel.append({**r, "store": store})
    doc = {"settings": settings, "runs": rel, "origin": origin}
    path = folder / RECORD
    tmp = folder / f".{RECORD}.tmp"
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    tmp.replace(path)
    return path


def read_record(where: Path) -> dict:
    """The record of the sweep in `where` (or the file), checked whole; each run's folder made
    absolute."""
    path = Path(where)
    if path.is_dir():
        path = path / RECORD
    if not path.is_symlink() and not path.exists():
        raise BadInput(f"{where} has no readable {RECORD}; {FIX}")
    doc = regular.read_json(path, RECORD, FIX)
    schema.check(doc, SCHEMA, path, FIX)
    try:
        _check_runs(doc)
    except Wrong as w:
        raise schema.refusal(path, w, FIX) from None
    for r in doc["runs"]:
        if r["store"] and not Path(r["store"]).is_absolute():
            r["store"] = str(path.parent / r["store"])
    return doc


def _check_runs(doc: dict) -> None:
    """Each run once, at a seed the sweep ran, with the verdict its parts make."""
    s = doc["settings"]
    seeds = range(s["seed"], s["seed"] + s["runs"])
    seen: set[tuple[float, int]] = set()
    for k, r in enumerate(doc["runs"]):
        at = f"runs[{k}]"
        if r["seed"] not in seeds:
            raise Wrong(f"{at}.seed", r["seed"], f"a seed the sweep ran ({seeds[0]}-{seeds[-1]})")
        if (r["point"], r["seed"]) in seen:
            raise Wrong(at, [r["point"], r["seed"]], "a run not listed before (each run once)")
        seen.add((r["point"], r["seed"]))
        try:
            check_verdicts(r["results"], Path(at))
        except BadInput:
            raise Wrong(f"{at}.results", r["results"], "a verdict table zkjepsen writes") from None
        if (
            type(r["valid"]) is not type(r["results"]["valid"])
            or r["valid"] != r["results"]["valid"]
        ):
            raise Wrong(f"{at}.valid", r["valid"], f"its verdict's ({r['results']['valid']})")


def differing(a: dict, b: dict) -> list[str]:
    """The settings two records of one sweep may not differ in, that they differ in."""
    return sorted(k for k in set(a) | set(b) if k not in LOOSE and a.get(k) != b.get(k))


def merge_records(docs: list[dict]) -> dict:
    """One record from the records of one sweep's folders (the first's settings, the most
    runs per point any of them planned); the same run in two of them is refused."""
    if not docs:
        raise BadInput("merge needs at least one sweep folder")
    base = dict(docs[0]["settings"])
    runs: list[dict] = []
    seen: set[tuple[float, int]] = set()
    for d in docs:
        diff = differing(d["settings"], base)
        if diff:
            raise BadInput(
                f"these folders hold different sweeps ({', '.join(diff)} differ); merge only "
                "the folders of one sweep"
            )
        base["runs"] = max(base["runs"], d["settings"]["runs"])
        for r in d["runs"]:
            if (r["point"], r["seed"]) in seen:
                raise BadInput(
                    f"the run at {r['point']:g} with seed {r['seed']} is in two of the folders; "
                    "give each folder once"
                )
            seen.add((r["point"], r["seed"]))
            runs.append(r)
    origin = docs[0].get("origin") or {}
    return {"settings": base, "runs": runs, "origin": origin}


# ---- the result -----------------------------------------------------------------------------
def _kinds(results: dict) -> set[str]:
    return {v.kind for _, v in as_result(results).named_violations()}


# A magnitude at which the fault changes nothing: its runs are unknown by design (the landing
# rule sees no effect at the target, so no fault landed), which is no gap in the curve.
NO_FAULT = {
    "rate": (1.0, "a rate of 1 is no fault: the clock runs at real speed, so no fault can land "
             "(\"clock never read\") and every run is unknown by design; the control is a run "
             "without the fault (`--nemesis none`)"),
    "offset_s": (0.0, "an offset of 0 is no fault: the clock is not moved, so no fault can land "
                 "and a run is unknown by design unless the fault's other effects were seen"),
    "duration": (0.0, "a length of 0 is no fault: nothing is held, so no fault can land"),
}  # fmt: skip


# Where the fault is least at the value given (no fault) and grows both ways from it: a sweep
# reads one side, and below it the break grows as the magnitude falls (a slow clock's lag).
TWO_SIDED = {"rate": 1.0}


def falling(axis: dict) -> bool:
    """The break grows as the axis's magnitude falls: a rate sweep at or below 1 (a slow
    clock)."""
    at = TWO_SIDED.get(axis["param"])
    return at is not None and max(axis["grid"]) <= at


def no_fault(axis: dict, magnitude: float) -> str | None:
    """Why the fault does nothing at `magnitude` on `axis` (None: it does something)."""
    at = NO_FAULT.get(axis["param"])
    return at[1] if at is not None and math.isclose(magnitude, at[0], abs_tol=1e-9) else None


def why_unknown(results: dict) -> str:
    """One unknown run's reason, as its verdict table says it (the power line's, first)."""
    res = as_result(results)
    parts = sorted(res.parts.items(), key=lambda kv: kv[0] != "power")
    whys = [str(p.reason) for _, p in parts if p.valid not in (True, False) and p.reason]
    text = whys[0] if whys else str(results.get("error") or res.reason or "verdict unknown")
    return text if len(text) <= 240 else text[:239] + "…"


def load_range(runs: list[dict]) -> dict | None:
    """The host's load average over the runs that recorded it: {min, max, runs}, or None."""
    loads = [r["load"] for r in runs if r.get("load") is not None]
    if not loads:
        return None
    return {"min": min(loads), "max": max(loads), "runs": len(loads)}


def point_summary(magnitude: float, runs: list[dict]) -> dict:
    """One point: its runs, those judged, and per measure how many of those showed it, the
    rate and its Wilson 95 % interval. An unknown run is counted apart, never as clean."""
    judged = [r for r in runs if r["valid"] in (True, False)]
    kinds = [_kinds(r["results"]) for r in judged]
    counts = {
        "invalid": sum(r["valid"] is False for r in judged),
        **{m: sum(k in ks for ks in kinds) for m, k in KIND_OF.items()},
    }
    rates = {}
    for m, k in counts.items():
        lo, hi = wilson(k, len(judged))
        rates[m] = {"k": k, "n": len(judged), "lo": lo, "hi": hi}
    ordered = sorted(runs, key=lambda r: r["seed"])
    whys = [why_unknown(r["results"]) for r in runs if r["valid"] not in (True, False)]
    return {
        "unknown_why": sorted(set(whys), key=whys.index)[:3],
        "load": load_range(runs),
        "magnitude": magnitude,
        "runs": len(runs),
        "judged": len(judged),
        "unknown": len(runs) - len(judged),
        "rates": rates,
        "seeds": [r["seed"] for r in ordered],
        "verdicts": [r["valid"] for r in ordered],
        "stores": [r["store"] for r in ordered],
    }


def label(axis: dict, magnitude: float) -> str:
    return f"{magnitude:g}{'x' if axis['relative'] else ''}"


def unit(axis: dict) -> str:
    if axis["relative"]:
        return "x"
    return " s" if axis["param"] == "duration" or axis["param"].endswith("_s") else ""


def result(doc: dict) -> dict:
    """The sweep's result: its settings, every point (grid and bisected) and the boundary each
    measure shows."""
    s = doc["settings"]
    axis = s["axis"]
    by: dict[float, list[dict]] = {m: [] for m in axis["grid"]}
    for r in doc["runs"]:
        by.setdefault(r["point"], []).append(r)
    points = [point_summary(m, rs) for m, rs in sorted(by.items())]
    for p in points:
        p["label"] = label(axis, p["magnitude"])
        p["bisected"] = p["magnitude"] not in axis["grid"]
        p["no_fault"] = no_fault(axis, p["magnitude"])
    boundaries = {}
    for m in MEASURES:
        pts = [Point(p["magnitude"], p["rates"][m]["k"], p["judged"]) for p in points if p["runs"]]
        boundaries[m] = estimate(pts, s["target_rate"], unit(axis), falling(axis)).to_json()
    return {
        "settings": s,
        "origin": doc.get("origin") or {},
        "points": points,
        "boundaries": boundaries,
        "runs": sum(p["runs"] for p in points),
        "load": load_range(doc["runs"]),
    }


def pct(x: float) -> str:
    return f"{100 * x:.0f}"


def rate_cell(r: dict) -> str:
    """`3/5 (23-88 %)`."""
    if not r["n"]:
        return "-"
    return f"{r['k']}/{r['n']} ({pct(r['lo'])}-{pct(r['hi'])} %)"


def boundary_text(b: dict, axis: dict) -> str:
    u = unit(axis)
    down = b.get("falling", False)  # a record rendered before slow clocks were read
    if b["at_most"] is None:
        if b["above"] is None:
            return "not broken"
        return f"not broken; safe {'down' if down else 'up'} to {b['above']:g}{u}"
    if b["above"] is None:
        return f"at or {'above' if down else 'below'} {b['at_most']:g}{u}"
    if down:
        return f"in [{b['at_most']:g}{u}, {b['above']:g}{u})"
    return f"in ({b['above']:g}{u}, {b['at_most']:g}{u}]"


def boundary_rule(axis: dict) -> str:
    """Where the boundary lies, in the axis's direction."""
    if falling(axis):
        return "below the last safe point, at or above the first broken one (a slow clock)"
    return "above the last safe point, at or below the first broken one"


def header(res: dict) -> str:
    s = res["settings"]
    axis = s["axis"]
    x = f" (x = {axis['timing_s']:g} s, the lock's timing)" if axis["relative"] else ""
    return (
        f"Sweep: recipe `{s['recipe']}` on {s['backend']}, fault `{axis['fault']}` over "
        f"`{axis['param']}`{x}; workload `{s['workload']}`, {s['clients']} clients, "
        f"{s['time_limit_s']:g} s per run, session timeout {s['session_timeout_s']:g} s, params "
        f"{s['params']}, {s['runs']} runs per point (seeds {s['seed']}-"
        f"{s['seed'] + s['runs'] - 1}), target rate {pct(s['target_rate'])} %; "
        f"{res['runs']} runs"
        + (f"; started {res['origin']['started']}" if res["origin"].get("started") else "")
        + (
            f"; the host's load average {res['load']['min']:g}-{res['load']['max']:g} as the "
            f"runs ended ({res['load']['runs']} runs said)"
            if res.get("load")
            else ""
        )
        + "."
    )


def unjudged_notes(res: dict) -> list[str]:
    """A sentence per point where no run was judged: why (no gap left unexplained)."""
    out = []
    for p in res["points"]:
        if p["runs"] and not p["judged"]:
            why = p.get("no_fault") or "; ".join(p.get("unknown_why") or ["verdict unknown"])
            out.append(f"{p['label']}: every run unknown: {why}.")
    return out


def unjudged(res: dict) -> list[str]:
    notes = unjudged_notes(res)
    return ["", "Points where no run was judged:", "", *(f"- {n}" for n in notes)] if notes else []


def markdown(res: dict) -> str:
    """The table: a row per point, the rate of each measure with its interval."""
    axis = res["settings"]["axis"]
    lines = [
        header(res),
        "",
        f"| {axis['param']} | runs | unknown | invalid | belief | effect | half-done |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in res["points"]:
        cells = [rate_cell(p["rates"][m]) for m in MEASURES]
        mark = " (bisected)" if p["bisected"] else ""
        lines.append(
            f"| {p['label']}{mark} | {p['runs']} | {p['unknown']} | " + " | ".join(cells) + " |"
        )
    lines += unjudged(res)
    lines += ["", f"Boundary ({boundary_rule(axis)}):", ""]
    for m in MEASURES:
        b = res["boundaries"][m]
        lines.append(f"- {m}: {boundary_text(b, axis)}. " + "; ".join(b["said"]) + ".")
    lines += [
        "",
        "Each cell: runs showing it / runs judged (valid or invalid; an unknown run is counted "
        "apart), with the 95 % Wilson interval. Broken: at least one run showed it. Safe: the "
        "interval's upper end is below the target rate.",
    ]
    return "\n".join(lines) + "\n"
