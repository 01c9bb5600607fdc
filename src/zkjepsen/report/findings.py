"""Findings tables (recipe x fault), CI shards of a matrix, and merging the shards' stores.

A matrix run writes `matrix-runs.json` at the root of its store: its settings, its shard, and
every run (cell, seed, verdict, violation kinds counted, the run's folder relative to the store).
`merge` reads those files from several shard stores and rebuilds the one table the unsharded
matrix would have written: the cells are whole on one shard (`shard_of`), so each shard's runs
are exactly the unsharded matrix's runs of those cells, with the same seeds.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from zkjepsen.backends.registry import backend_info
from zkjepsen.checker import as_result
from zkjepsen.checker.power import Power
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import RunFacts, refusals
from zkjepsen.faultkinds.abilities import CLIENT_ABILITIES
from zkjepsen.report import manifest
from zkjepsen.report.manifest import (  # noqa: F401 - the shards' names, re-exported
    MANIFEST,
    cells_of_shard,
    parse_shard,
    shard_of,
)
from zkjepsen.report.services import manifest_services, services_text
from zkjepsen.report.stats import rate_text
from zkjepsen.report.summary import power_of_results

# Servers (and clients) of a run a question names none of: more than any kind's predicate asks
# for (faultkinds: at_least), so none refuses on the count alone.
ANY_SIZE = 99
# Settings every shard of one matrix must share; anything else is two different matrices.
SAME = (
    "workload",
    "nodes",
    "clients",
    "time_limit_s",
    "session_timeout_s",
    "params",
    "runs",
    "seed",
    "interval_s",
    "recipes",
    "nemeses",
    "services",
)


def same_setting(a: dict, b: dict, k: str) -> bool:
    if k == "services":
        return manifest_services(a) == manifest_services(b)
    return a.get(k) == b.get(k)


def cell_summary(runs: list[dict]) -> dict:
    """Counts for one recipe x fault cell: invalid runs, unknown runs, and runs with at least
    one belief / effect overlap violation."""

    kinds = [{v.kind for _, v in as_result(r["results"]).named_violations()} for r in runs]
    invalid = sum(r["valid"] is False for r in runs)
    return {
        "runs": len(runs),
        "invalid": invalid,
        "rate": rate_text(invalid, len(runs)),  # with its 95 % Wilson interval
        "unknown": sum(r["valid"] not in (True, False) for r in runs),
        "belief": sum("belief" in k for k in kinds),
        "effect": sum("effect" in k for k in kinds),
        # the atomicity checker: a holder read a multi-step update left half-done
        "half_done": sum("half-done-read" in k for k in kinds),
        "stores": [r["store"] for r in runs],
        **_cell_power(runs),
    }


def _cell_power(runs: list[dict]) -> dict:
    """The cell's runs' power pooled (checker/power.py): faults that landed where the lock could
    break, how many a violation followed, and the bound on the per-fault rate; nothing for a
    cell without faults or without a lock."""

    powers = [p for r in runs if (p := power_of_results(r["results"])) is not None]
    if not powers:
        return {}
    pooled = Power.pooled(powers)
    return {
        "landed": pooled.opportunities(),
        "landed_violated": pooled.violated(),
        "power_upper": pooled.upper(),
        "power": pooled.line(),
    }


def fault_whys(nemeses: list[str], backend: str) -> list[str]:
    """Why each of the faults cannot run on `backend` whatever else its run is: the faults' one
    predicate (faultkinds `refusals`) over what the backend declares, every client ability and
    as many servers as it can run (a stored matrix's cell names no more). What a matrix's
    record must list n/a (report/manifest.py); the matrix itself asks each cell's whole run
    (cli/matrix.py `cell_refusal`)."""
    info = backend_info(backend)
    nodes = info.nodes or max(info.sizes, default=ANY_SIZE)
    run = RunFacts(
        backend, nodes, info.abilities, frozenset(CLIENT_ABILITIES), client_count=ANY_SIZE
    )
    refused = refusals(run, nemeses)
    return [refused[n] for n in nemeses if n in refused]


def servers_per_backend(recipes: list[str], nodes: int) -> dict[str, int]:
    """backend -> its servers, for the backends the recipes (`NAME` or `NAME@BACKEND`) run on:
    a fixed shape (one Redis master, five Redlock masters) or the matrix's `--nodes`."""

    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.recipes import resolve_backend

    out = {}
    for rc in recipes:
        name, _, backend = rc.partition("@")
        b = resolve_backend(name, backend or None)
        out[b] = backend_info(b).nodes or nodes
    return out


def cell_text(c: dict | None) -> str:
    if not c:
        return "-"
    if "na" in c:
        return "n/a (" + c["na"].split(": ", 1)[-1] + ")"

    text = f"{rate_text(c['invalid'], c['runs'])} invalid"
    if c["unknown"]:
        text += f", {c['unknown']} unknown"
    text += f" (belief {c['belief']}, effect {c['effect']}"
    # Older manifests predate the atomicity count; a cell without it says nothing about it.
    text += f", half-done {c['half_done']})" if "half_done" in c else ")"
    if "landed" in c:  # the pooled power of its runs (none before power existed, or no lock)
        text += f"; {c['landed_violated']}/{c['landed']} landed faults violated" + (
            f", rate ≤ {100 * c['power_upper']:.0f} %" if c["landed"] else ""
        )
    return text


def markdown_table(cells: dict, recipes: list[str], nemeses: list[str], header: str) -> str:
    lines = [
        header,
        "",
        "| recipe | " + " | ".join(nemeses) + " |",
        "|---|" + "---|" * len(nemeses),
    ]
    for rc in recipes:
        row = [cell_text(cells.get(f"{rc}|{nm}")) for nm in nemeses]
        lines.append(f"| {rc} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Each cell: runs judged invalid / runs, with the rate and its 95 % Wilson interval (how "
        "little a handful of runs says about the true rate); in parentheses, runs with at "
        "least one "
        "belief overlap (two clients believed they held the lock) and with at least one "
        "effect overlap (the protected resource accepted writes out of lock order: "
        "atomicity broken), and with at least one half-done read (a holder found the "
        "previous holder's two-step update half done: that holder lost the lock between its "
        "writes, and a fence can only refuse the second). belief > 0 with effect = 0 means "
        "fencing held."
        + (
            " After the `;`: of the faults that landed where the lock could break (a holder "
            "frozen or cut past its session timeout, killed while holding...; "
            "docs/verdicts.md), how many a violation followed, and the one-sided 95 % bound "
            "on the per-fault violation rate, pooled over the cell's runs."
            if any("landed" in c for c in cells.values())
            else ""
        )
        + (
            " n/a: the fault exercises nothing on that recipe's backend (not run)."
            if any("na" in c for c in cells.values())
            else ""
        ),
    ]
    return "\n".join(lines) + "\n"


# ---- the manifest and merge -----------------------------------------------------------------
def write_manifest(
    store_root: Path,
    settings: dict,
    shard: tuple[int, int] | None,
    runs: list[dict],
    origin: dict | None = None,
) -> Path:
    """`runs`: {"cell", "seed", "valid", "results", "store", "engine"} per run; `origin`:
    {"started", "where"} of the matrix, so a merged table still says when and where it ran."""
    root = Path(store_root)
    root.mkdir(parents=True, exist_ok=True)
    rel = []
    for r in runs:
        if not r["store"]:  # a run that never had a folder (it failed before it started)
            rel.append({**r, "store": ""})
            continue
        store = Path(r["store"])
        try:
            store = store.resolve().relative_to(root.resolve())
        except ValueError:
            pass
        rel.append({**r, "store": str(store)})
    doc = {
        "settings": settings,
        "shard": list(shard) if shard else None,
        "runs": rel,
        "origin": origin or {},
        "checksum": zlib.crc32(json.dumps(settings, sort_keys=True).encode()),
    }
    path = root / MANIFEST
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    tmp.replace(path)
    return path


def read_manifest(where: Path) -> dict:
    """The manifest of store `where`, checked whole first (report/manifest.py)."""
    return manifest.read_manifest(where, manifest.Readers(cell_summary, fault_whys))


def merge(manifests: list[dict]) -> tuple[dict, dict[str, dict], list[str]]:
    """(settings, cells, notes): one matrix from its shards' manifests. Refuses shards of
    different matrices and a cell run twice; a missing shard is a note (its cells stay "-")."""
    if not manifests:
        raise BadInput("merge needs at least one store")
    base = manifests[0]["settings"]
    for m in manifests[1:]:
        diff = [k for k in SAME if not same_setting(m["settings"], base, k)]
        if diff:
            raise BadInput(
                f"these stores hold different matrices ({', '.join(diff)} differ); "
                "merge only the shards of one matrix"
            )
    shards = [tuple(m["shard"]) if m["shard"] else (1, 1) for m in manifests]
    notes = []
    totals = {n for _, n in shards}
    if len(totals) > 1:
        raise BadInput(f"the stores are shards of different splits ({sorted(totals)} shards)")
    (total,) = totals
    seen = [i for i, _ in shards]
    dup = sorted({i for i in seen if seen.count(i) > 1})
    if dup:
        raise BadInput(f"shard {dup[0]}/{total} is given twice; give each shard's store once")
    missing = sorted(set(range(1, total + 1)) - set(seen))
    if missing:
        notes.append(
            f"shards {', '.join(f'{i}/{total}' for i in missing)} missing: their cells show '-'"
        )
    na = base.get("not_applicable") or {}
    if any((m["settings"].get("not_applicable") or {}) != na for m in manifests):
        raise BadInput(
            "these stores hold different matrices (not_applicable differs); merge only the "
            "shards of one matrix"
        )
    return base, _cells(manifests, na), notes


def _cells(manifests: list[dict], na: dict[str, str]) -> dict[str, dict]:
    """Each cell's summary over its runs in seed order, from the one store that holds it (each
    store was checked alone: report/manifest.py); the n/a cells with why."""
    by_cell: dict[str, list[dict]] = {}
    held: dict[str, int] = {}
    for k, m in enumerate(manifests):
        for r in sorted(m["runs"], key=lambda r: r["seed"]):
            if held.setdefault(r["cell"], k) != k:
                raise BadInput(
                    f"cell {r['cell'].replace('|', ' x ')} is in two of the stores; give each "
                    "shard's store once"
                )
            by_cell.setdefault(r["cell"], []).append(r)
    cells = {k: cell_summary(v) for k, v in by_cell.items()}
    cells.update({k: {"na": why} for k, why in na.items()})
    return cells


def runs_per_cell_text(planned: int, cells: dict[str, dict] | None, n_cells: int) -> str:
    """ "10 runs per cell", or, for a matrix cut short, what it really holds ("8-10 runs per
    cell (10 planned)"): a table never claims more runs than it counts. n/a cells (never
    run) are not counted."""
    ran = {k: c for k, c in (cells or {}).items() if "na" not in c}
    n_cells -= len(cells or {}) - len(ran)
    cells = ran if cells is not None else None
    counts = [c["runs"] for c in (cells or {}).values()] + [0] * (n_cells - len(cells or {}))
    if not counts:  # every cell is n/a: none was run
        return f"no runs ({planned} per cell planned, every cell n/a)"
    if cells is None or (counts and min(counts) == max(counts) == planned):
        return f"{planned} runs per cell"
    lo, hi = min(counts), max(counts)
    held = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return f"{held} runs per cell ({planned} planned)"


def resumable(
    store_root: Path, settings: dict, shard: tuple[int, int] | None, now: str
) -> tuple[list[dict], str]:
    """(runs on record, when the matrix started) for `matrix --resume`: the store must hold
    the same matrix (every setting but the number of runs) and the same shard."""
    if not (Path(store_root) / MANIFEST).exists():
        raise BadInput(
            f"--resume: {store_root} holds no {MANIFEST}; give the --store of the matrix "
            "to continue, or drop --resume"
        )
    m = read_manifest(store_root)
    diff = [k for k in SAME if k != "runs" and not same_setting(m["settings"], settings, k)]
    if (tuple(m["shard"]) if m["shard"] else None) != shard:
        diff.append("shard")
    if diff:
        raise BadInput(
            f"--resume: {store_root} holds a different matrix ({', '.join(diff)} differ); "
            "give the options it was started with, or a new --store"
        )
    return m["runs"], (m.get("origin") or {}).get("started") or now


def merged_origin(manifests: list[dict], merged_at: str) -> tuple[str, str]:
    """(when, where) for a merged table: the earliest start of the stores' matrices and the
    machines they ran on (stores written before origins were recorded say only when merged)."""
    origins = [m.get("origin") or {} for m in manifests]
    starts = sorted(o["started"] for o in origins if o.get("started"))
    wheres = list(dict.fromkeys(o["where"] for o in origins if o.get("where")))
    when = f"{starts[0]} (merged {merged_at})" if starts else f"before {merged_at}"
    n = len(manifests)
    merged = f"{n} store{'s' if n > 1 else ''} merged"
    return when, (f"{'; '.join(wheres)}; {merged}" if wheres else merged)


def settings_header(
    s: dict[str, Any], when: str, where: str, cells: dict[str, dict] | None = None
) -> str:
    n_cells = len(s.get("recipes", [])) * len(s.get("nemeses", []))
    return (
        f"Findings matrix: workload `{s['workload']}`, {_servers_text(s)} ({services_text(s)}), "
        f"{s['clients']} "
        f"clients, {s['time_limit_s']:g} s per run, session timeout "
        f"{s['session_timeout_s']:g} s, params {s['params']}, "
        + (f"faults every ~{s['interval_s']:g} s, " if s.get("interval_s", 10.0) != 10.0 else "")
        + (f"faults on `{s['fault_trigger']}`, " if s.get("fault_trigger") else "")
        + f"{runs_per_cell_text(s['runs'], cells, n_cells)}; run {when} on {where}."
    )


def _servers_text(s: dict[str, Any]) -> str:
    servers = s.get("servers") or {}
    if len(servers) <= 1:
        return f"{next(iter(servers.values()), s['nodes'])} servers"
    return "servers: " + ", ".join(f"{b} {n}" for b, n in servers.items())
