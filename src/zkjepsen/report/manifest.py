"""`matrix-runs.json`: its one schema, and the one reader every command uses (`merge`,
`matrix --resume`).

A matrix writes it at the root of its store (report/findings.write_manifest); it comes back
copied from CI shards, hand-edited or made up. Before anything acts on it, it is read through the
one opener (store/regular.py: a regular file, bounded, nested at most 64 levels) and checked
against SCHEMA (store/schema.py: every field's type and range), then against the rules that relate
its fields: a run's cell is one of the matrix's, not n/a and of this shard; its seed is one the
matrix ran; no (cell, seed) twice; its `valid` is its verdict's; its verdict is one the findings
table can read. Anything else is one sentence naming the file and the field, exit 254.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.backends.registry import service, services
from zkjepsen.checker import merge_valid
from zkjepsen.errors import BadInput
from zkjepsen.recipes import resolve_backend
from zkjepsen.report.services import manifest_services
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

MANIFEST = "matrix-runs.json"
FIX = "give the --store of a `zkjepsen matrix` run (its matrix-runs.json as the matrix wrote it)"
VERDICT = OneOf((True, False, "unknown"))

RUN = Table(
    {
        "cell": Str(),  # RECIPE[@BACKEND][ row-tag]|NEMESIS[+NEMESIS]
        "seed": Int(),
        "valid": VERDICT,
        "results": Table(
            {
                "valid": VERDICT,
                # the part the table reads besides the verdicts: the run's power
                "power": Field(Table({"valid": VERDICT}, rest=Anything()), required=False),
            },
            rest=Anything(),
            what="a verdict table",
        ),
        "store": Str(empty=True),  # relative to the store; "" for a run that never had a folder
        "engine": Field(Opt(Str(empty=True)), required=False),
    },
    what="a run's record",
)

ORIGIN = Table(
    {"started": Field(Str(), required=False), "where": Field(Str(), required=False)},
    what="a table of when and where the matrix ran",
)


def settings_table() -> Table:
    """The settings' fields: what `matrix` writes now, and what older matrices wrote (no
    interval, no tables per service but ZooKeeper's flat keys, no servers...)."""
    legacy = {k: Field(Anything(), required=False) for s in services().values() for k in s.legacy}
    return Table(
        {
            "workload": Str(),
            "nodes": Int(1, 9),
            "clients": Int(1, 100),
            "time_limit_s": Num(above=0),
            "session_timeout_s": Num(above=0),
            "params": MapOf(Scalar()),
            "runs": Int(1, 100),
            "seed": Int(),
            "interval_s": Field(Num(0, 3600), required=False),
            "fault_trigger": Field(Str(), required=False),
            "recipes": ListOf(Str(), min=1, unique=True),
            "nemeses": ListOf(Str(), min=1, unique=True),
            "not_applicable": Field(Opt(MapOf(Str())), required=False),
            "servers": Field(Opt(MapOf(Int(1, 100))), required=False),
            "services": Field(MapOf(MapOf(Anything())), required=False),
            **legacy,
        },
        what="the matrix's settings",
    )


def manifest_schema() -> Table:
    return Table(
        {
            "settings": settings_table(),
            "shard": Opt(ListOf(Int(1), min=2, max=2)),
            "runs": ListOf(RUN),
            "origin": Field(Opt(ORIGIN), required=False),
            "checksum": Field(Opt(Int()), required=False),
        },
        what="a matrix's record of its runs",
    )


@dataclass(frozen=True)
class Readers:
    """What the findings table reads a record with (report/findings.py, which imports this
    module): its summary of a cell's runs, run on each record so that a verdict it cannot read
    is refused here; and why faults exercise nothing on a backend (the fault registry)."""

    summary: Callable[[list[dict]], Any]
    fault_whys: Callable[[list[str], str], list[str]]


def read_manifest(where: Path, readers: Readers) -> dict:
    """The manifest in store `where` (or the file itself), checked whole before it is used;
    each run's `store` made absolute (relative to the manifest's folder)."""
    path = Path(where)
    if path.is_dir():
        path = path / MANIFEST
    if not path.is_symlink() and not path.exists():
        raise BadInput(f"{where} has no readable {MANIFEST}; {FIX}")
    doc = regular.read_json(path, MANIFEST, FIX)
    check_manifest(doc, path, readers)
    for r in doc["runs"]:
        if r["store"] and not Path(r["store"]).is_absolute():
            r["store"] = str(path.parent / r["store"])
    return doc


def check_manifest(doc: Any, path: Path, readers: Readers) -> None:
    """SCHEMA, then the rules relating the fields (the module docstring)."""
    schema.check(doc, manifest_schema(), path, FIX)
    try:
        _check_services(doc["settings"])
        _check_runs(doc, readers)
    except Wrong as w:
        raise schema.refusal(path, w, FIX) from None


def _check_services(settings: dict) -> None:
    """Each service's table names a service and makes its settings, an axis value at a time
    (what the table's header says of them: report/services.services_text)."""
    for name, table in manifest_services(settings).items():
        at = f"settings.services.{name}" if "services" in settings else "settings"
        axes = [k for k, v in table.items() if isinstance(v, list)]
        try:
            svc = service(name)
            if len(axes) > 1:
                raise BadInput("more than one axis")
            for v in table[axes[0]] if axes else [None]:
                svc.from_table({**table, **({axes[0]: v} if axes else {})}, name)
        except (BadInput, TypeError, ValueError):
            raise Wrong(at, table, f"settings of a service zkjepsen runs ({name})") from None


def matrix_cells(settings: dict) -> list[str]:
    return [f"{rc}|{nm}" for rc in settings["recipes"] for nm in settings["nemeses"]]


def _check_runs(doc: dict, readers: Readers) -> None:
    s = doc["settings"]
    cells = matrix_cells(s)
    na = s.get("not_applicable") or {}
    for cell in na:
        if cell not in cells:
            raise Wrong(f"settings.not_applicable.{cell}", na[cell], "a cell of this matrix")
    _check_not_applicable(cells, na, readers)
    shard = doc["shard"]
    if shard is not None and shard[0] > shard[1]:
        raise Wrong("shard", shard, "[i, N] with 1 <= i <= N")
    mine = set(cells_of_shard(cells, tuple(shard) if shard else None))
    seeds = range(s["seed"], s["seed"] + s["runs"])
    seen: set[tuple[str, int]] = set()
    stores: set[str] = set()
    for k, r in enumerate(doc["runs"]):
        at = f"runs[{k}]"
        if r["cell"] not in cells or r["cell"] in na:
            why = "a cell this matrix ran" + (" (this one is n/a)" if r["cell"] in na else "")
            raise Wrong(f"{at}.cell", r["cell"], why)
        if r["cell"] not in mine:
            raise Wrong(f"{at}.cell", r["cell"], f"a cell of shard {shard[0]}/{shard[1]}")
        if r["seed"] not in seeds:
            raise Wrong(f"{at}.seed", r["seed"], f"a seed the matrix ran ({seeds[0]}-{seeds[-1]})")
        if (r["cell"], r["seed"]) in seen:
            raise Wrong(at, [r["cell"], r["seed"]], "a run not listed before (each run once)")
        seen.add((r["cell"], r["seed"]))
        if r["store"] and r["store"] in stores:
            raise Wrong(f"{at}.store", r["store"], "a folder no other run has")
        stores.add(r["store"])
        _check_verdict(r, at, readers.summary)


def _check_not_applicable(cells: list[str], na: dict[str, str], readers: Readers) -> None:
    """A cell whose fault exercises nothing on its recipe's backend is recorded n/a (a matrix
    never runs it): a record without it would render it as a cell merely not run yet."""
    for cell in cells:
        row, _, nemeses = cell.partition("|")
        recipe, _, backend = row.split(" ")[0].partition("@")
        try:
            where = resolve_backend(recipe, backend or None)
        except BadInput:  # a recipe this zkjepsen does not know: nothing to say of its cells
            continue
        if cell not in na and readers.fault_whys(nemeses.split("+"), where):
            why = f"a table naming {cell} (its fault cannot run on {where})"
            raise Wrong("settings.not_applicable", na, why)


def _check_verdict(r: dict, at: str, readable: Callable[[list[dict]], Any]) -> None:
    """The run's `valid` is its verdict's, which is the worst of its parts' (as a run composes
    it); and the table reads it (its parts' verdicts, violations and power) now, so that the
    table is never where a foreign one fails."""
    results = r["results"]
    try:
        check_verdicts(results, Path(at))  # every part's `valid` a verdict
    except BadInput:
        raise Wrong(f"{at}.results", results, "a verdict table zkjepsen writes") from None
    if not _same(results["valid"], r["valid"]):
        raise Wrong(f"{at}.valid", r["valid"], f"its verdict's ({results['valid']})")
    parts = [v["valid"] for v in results.values() if isinstance(v, dict) and "valid" in v]
    if parts and not _same(merge_valid(parts), results["valid"]):
        worst = merge_valid(parts)
        raise Wrong(f"{at}.results.valid", results["valid"], f"its parts' worst ({worst})")
    try:
        readable([r])
    except (BadInput, TypeError, ValueError, KeyError, AttributeError, IndexError):
        raise Wrong(f"{at}.results", results, "a verdict table zkjepsen writes") from None


# ---- shards ---------------------------------------------------------------------------------
def parse_shard(text: str | None) -> tuple[int, int] | None:
    """`i/N` with 1 <= i <= N, or None."""
    if text is None:
        return None
    i, sep, n = text.partition("/")
    try:
        i_, n_ = int(i), int(n)
    except ValueError:
        i_ = n_ = 0
    if not sep or not 1 <= i_ <= n_:
        raise BadInput(f"--shard {text!r} is not i/N with 1 <= i <= N (e.g. 1/4)")
    return i_, n_


def shard_of(cell: str, index: int, shards: int) -> int:
    """The shard (1..N) that runs a cell: round robin over the cells in table order, so every
    shard gets a near-equal share, whatever machine or process computes it."""
    del cell  # the order alone decides; the name is there for readers of the call
    return index % shards + 1


def cells_of_shard(cells: list[str], shard: tuple[int, int] | None) -> list[str]:
    if shard is None:
        return list(cells)
    i, n = shard
    return [c for k, c in enumerate(cells) if shard_of(c, k, n) == i]


def _same(a: Any, b: Any) -> bool:
    """The same verdict (`true` is not `1`)."""
    return type(a) is type(b) and a == b
