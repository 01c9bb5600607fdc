"""A matrix's cells: the spec of each run, the engine they go to, the progress lines and the
manifest written after every run, and the table of verdicts per cell."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from zkjepsen.cli.engines import prepare
from zkjepsen.spec import TestSpec

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)


MANIFEST_COMMON = ("workload", "nodes", "clients", "time_limit_s", "session_timeout_s", "params")


def cell_table(records: list[dict], na: dict[str, str]) -> dict:
    """Each cell's summary over its runs (in seed order); a cell that does not apply: n/a."""
    from zkjepsen.report import findings

    results: dict[str, list[dict]] = {}
    for r in sorted(records, key=lambda r: r["seed"]):
        results.setdefault(r["cell"], []).append(r)
    cells = {k: findings.cell_summary(v) for k, v in results.items()}
    cells.update({k: {"na": why} for k, why in na.items()})
    return cells


def resume_note(finished: int, root: Path) -> str:
    from zkjepsen.report.findings import MANIFEST

    return (
        f"the matrix's {finished} finished run{'' if finished == 1 else 's'} "
        f"{'is' if finished == 1 else 'are'} on record in {Path(root) / MANIFEST}: "
        f"`zkjepsen merge {root}` renders them, the same matrix command with --resume "
        "continues it"
    )


def family_of(recipe_at_backend: str) -> str:
    """The service ("zookeeper", "etcd", ...) a matrix row's RECIPE[@BACKEND] runs on."""
    from zkjepsen.backends.registry import backend_info
    from zkjepsen.recipes import resolve_backend

    recipe, _, backend = recipe_at_backend.partition("@")
    return backend_info(resolve_backend(recipe, backend or None)).family


def axis_rows(recipes: list[str], axes: dict[str, tuple[str, list]]) -> list[str]:
    """The table's rows: a recipe, or with a service's axis (`--zk-versions`) one row of that
    service's recipes per value ("kazoo zk3.4"; another service's recipe keeps one row)."""
    from zkjepsen.backends.registry import service

    rows = []
    for rc in recipes:
        family = family_of(rc)
        if family not in axes:
            rows.append(rc)
            continue
        field, values = axes[family]
        tag = next(o.row_tag for o in service(family).options if o.axis and o.field == field)
        rows += [f"{rc} {tag}{v}" for v in values]
    return rows


def row_settings(row: str, tables: dict[str, dict]) -> tuple[str, str, dict]:
    """(recipe, backend, its service's settings table) of a matrix row: the options' table of
    the row's service, with the row's axis value ("kazoo zk3.4": version 3.4)."""
    from zkjepsen.backends.registry import service

    recipe_at, _, suffix = row.partition(" ")
    family = family_of(recipe_at)
    table = dict(tables.get(family, {}))
    for opt in service(family).options:
        if suffix and opt.axis and opt.row_tag and suffix.startswith(opt.row_tag):
            table[opt.field] = suffix[len(opt.row_tag) :]
    recipe, _, backend = recipe_at.partition("@")
    return recipe, backend, table


def cell_specs(
    cells: list[str], runs: int, seed: int, tables: dict[str, dict], common: dict
) -> list[tuple[str, TestSpec]]:
    """(cell, spec) of every run of the matrix: run k of a cell has seed + k - 1. Run-major:
    every cell's first run, then every cell's second... so a matrix cut short (a deadline, a
    crash) leaves every cell partly filled, not the last rows empty. `tables`: each service's
    settings from the options ({"zookeeper": {"version": "3.9"}, "etcd": {...}}), for that
    service's rows only (a matrix of four services takes --zk-version for its ZooKeeper rows)."""
    from zkjepsen.backends.registry import service

    out = []
    rows = {c.split("|")[0]: row_settings(c.split("|")[0], tables) for c in cells}
    for i in range(runs):
        for cell in cells:
            row, nemesis = cell.split("|")
            recipe, backend, table = rows[row]
            spec = TestSpec(
                recipe=recipe,
                backend=backend or None,
                service=service(family_of(row.partition(" ")[0])).settings(**table)
                if table
                else None,
                nemesis=nemesis.split("+"),
                seed=seed + i,
                **common,
            )
            out.append((cell, spec))
    return out


def matrix_engine(engine, specs):
    """The engine the runs go to, with the images the matrix's cells need (the first run's
    specs were checked, so their backend and settings are settled; the rest are copies)."""
    return prepare(engine, specs=tuple(s for _, s in specs if s.backend))


def _described(spec) -> str:
    return spec.service.describe() if spec.service is not None else ""


class Progress:
    """A matrix's progress lines, and its manifest rewritten after every run (a matrix killed
    half-way still has its finished runs on record; `zkjepsen merge STORE` renders them)."""

    def __init__(self, total: int, width: int, manifest: tuple, finished: list[dict]) -> None:
        self.total, self.width, self.manifest, self.finished = total, width, manifest, finished

    def begin(self, i, job, engine) -> None:
        console.print(
            f"[{i + 1}/{self.total}] {job.spec.recipe} x {'+'.join(job.spec.nemesis)} "
            f"seed {job.spec.seed}"
            + (f" {said}" if (said := _described(job.spec)) else "")
            + (f" on {engine.name}" if self.width > 1 else ""),
            markup=False,
            highlight=False,
        )

    def done(self, i, o) -> None:
        from zkjepsen.report import findings

        self.finished.append(self.record(o))
        store_root, settings, shard, origin = self.manifest
        findings.write_manifest(store_root, settings, shard, self.finished, origin)
        from zkjepsen.report.summary import power_line

        error = o.run.results.get("error")
        power = power_line(o.run.results) if o.run.valid is True and not error else ""
        console.print(
            f"    {'' if self.width == 1 else f'[{i + 1}] '}-> {o.run.valid}  "
            + (f"{power}  " if power else "")
            + (f"(error: {error})" if error else f"({o.run.store_dir})"),
            markup=False,
            highlight=False,
        )

    @staticmethod
    def record(o) -> dict:
        from zkjepsen.report.junit import folder_of

        return {
            "cell": o.job.tag,
            "seed": o.job.spec.seed,
            "valid": o.run.valid,
            "results": o.run.results,
            "store": folder_of(o.run),  # "" for a run that never had a folder
            "engine": o.engine,
        }
