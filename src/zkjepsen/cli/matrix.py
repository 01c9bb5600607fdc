"""`zkjepsen list` and `zkjepsen matrix`: what can be tested, and recipe x fault verdict tables."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from zkjepsen.cli.cells import (
    MANIFEST_COMMON,
    Progress,
    axis_rows,
    cell_specs,
    cell_table,
    console,
    matrix_engine,
    resume_note,
)
from zkjepsen.cli.engines import cluster_option, connect_cluster, engine_option, parallel_option
from zkjepsen.cli.options import STORE_PATH, junit_option, parse_params
from zkjepsen.cli.versions import service_axes, service_options, service_tables
from zkjepsen.errors import BadInput
from zkjepsen.report.findings import cell_summary, markdown_table  # noqa: F401 - re-exported
from zkjepsen.run.outcome import stopped


@click.command("list")
@click.argument(
    "what", type=click.Choice(["recipes", "workloads", "nemeses", "backends", "models"])
)
def list_command(what: str) -> None:
    """List recipes, workloads, nemeses, backends or `check --model` models, one line each."""
    if what == "models":
        rows = model_rows()
    elif what == "recipes":
        from zkjepsen.recipes import RECIPES

        rows = [
            (
                n,
                f"{r.language:<6} {r.source:<7}  {r.description}  [expect: {r.flaw}]"
                + (f"  [on: {', '.join(r.backends)}]" if r.backends != ("zookeeper",) else ""),
            )
            for n, r in sorted(RECIPES.items())
        ]
        rows.append(
            (
                "exec:PATH",
                "any    user     your own program, speaking the client wire "
                "protocol (docs/client-protocol.md); or --client-cmd CMD",
            )
        )
    elif what == "workloads":
        from zkjepsen.workloads import WORKLOADS, get_workload
        from zkjepsen.workloads.params import params_line

        rows = []  # each workload, then its --params with their defaults
        for n in sorted(WORKLOADS):
            rows.append((n, get_workload(n).description))
            if params_line(n):
                rows.append(("", f"  --param {params_line(n)}"))
    elif what == "backends":
        from zkjepsen.backends.registry import backends

        rows = [(n, b.description) for n, b in sorted(backends().items())]
    else:
        from zkjepsen.nemesis.faults import nemesis_lines

        rows = nemesis_lines()
    width = max(len(n) for n, _ in rows)
    for name, desc in rows:
        click.echo(f"{name.ljust(width)}  {desc}")


def model_rows() -> list[tuple[str, str]]:
    """What `zkjepsen check --model` accepts: the linearizability models (each described by its
    own docstring's first line) and the other checkers."""
    from zkjepsen.checker.linear import MODELS, make_model
    from zkjepsen.cli.check import OTHER_CHECKERS_ABOUT

    rows = []
    for name in MODELS:
        doc = " ".join((type(make_model(name)).__doc__ or "").split())
        doc = doc.split(". ")[0].rstrip(".")  # its first sentence
        if name == "etcd-cas-register":
            doc = "cas-register as porcupine's etcd model: nil is a value, a failed cas asserts"
        rows.append((name, f"linearizable  {doc}"))
    rows += [(n, f"checker       {about}") for n, about in OTHER_CHECKERS_ABOUT.items()]
    return rows


def check_out(out: Path) -> None:
    """--out can be written, and so can the JSON beside it, before any cell runs."""
    from zkjepsen.store.writable import check_output_file

    check_output_file(out, "--out")
    if not out.name or out.with_suffix(".json") == out:
        raise BadInput(f"--out {out}: the table's JSON goes beside it as {out}; give a .md path")
    check_output_file(out.with_suffix(".json"), "--out (its JSON beside it)")


def _split(text: str, what: str) -> list[str]:
    """A comma-separated list; an empty entry (a stray comma) is refused, as `test --nemesis`
    and `--zk-versions` refuse it, not dropped."""
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        raise BadInput(
            f"--{what} {text!r} has an empty entry; give one or more names separated by commas"
        )
    return items


def table_out_option(help: str) -> Any:
    """--out: where the findings table goes (matrix and merge)."""
    return click.option(
        "--out",
        type=click.Path(path_type=Path),
        default=Path("store/matrix.md"),
        show_default=True,
        help=help,
    )


def checked_cells(specs: list[tuple[str, Any]]) -> dict[str, str]:
    """The cells not to run, with why: a cell whose fault means nothing on its recipe's backend
    (no leader, no PostgreSQL...) is not run; the table says n/a and why, and the rest of the
    matrix runs. Every other cell's spec is checked here, before the first cluster starts (all
    shards' cells, so every shard fails alike)."""
    from zkjepsen.run.readers import check_read_by_any
    from zkjepsen.run.resolve import validate_spec

    na = {cell: why for cell, spec in specs if (why := cell_refusal(spec))}
    for cell, spec in specs:
        if cell not in na:
            validate_spec(spec, alone=False)
    check_read_by_any(spec for cell, spec in specs if cell not in na)  # read by some cell
    return na


def cell_refusal(spec: Any) -> str | None:
    """Why a matrix cell is not run (None: it is): each of its faults that cannot run in the run
    it resolves to (`run.resolve.refusals`, the one answer: a member-add cell on ZooKeeper 3.4
    is n/a, its 3.9 twin runs), its service's settings that cannot go to its backend, or a
    version without a driver for the recipe's language."""
    from zkjepsen.recipes import resolve_backend
    from zkjepsen.report.services import without_driver
    from zkjepsen.run.resolve import refusals

    backend = resolve_backend(spec.recipe, spec.backend)  # an unknown recipe: the whole matrix
    try:
        refused = refusals(spec, spec.nemesis)
    except BadInput as e:  # its settings cannot go to its backend (etcd 3.4 --fsync relaxed)
        return str(e)
    whys = [refused[n] for n in spec.nemesis if n in refused]
    whys += [w for w in [without_driver(spec, backend)] if w]
    return "; ".join(whys) or None


def this_host(parallel: int, share: tuple[int, int] | None, cluster: str | None) -> str:
    """Where the matrix ran, for the table's header: host, cores, slots or cluster, shard."""
    return (
        f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores)"
        + (f", {parallel} slots" if parallel > 1 and not cluster else "")
        + (f", Dask cluster {cluster}" if cluster else "")
        + (f", shard {share[0]}/{share[1]}" if share else "")
    )


def resumed(
    jobs: list, manifest_root: Path, settings: dict, share: tuple[int, int] | None, started: str
) -> tuple[list, list[dict], str]:
    """--resume: the runs already on record are kept and their (cell, seed) not run again; a
    larger --runs extends the matrix (run k of a cell always has seed + k - 1). Returns the jobs
    left to run, the runs on record and when the matrix first started."""
    from zkjepsen.report import findings

    finished, started = findings.resumable(manifest_root, settings, share, started)
    kept = {(r["cell"], r["seed"]) for r in finished}
    jobs = [j for j in jobs if (j.tag, j.spec.seed) not in kept]
    console.print(f"resuming: {len(finished)} runs on record, {len(jobs)} to run")
    return jobs, finished, started


def announce(
    share: tuple[int, int] | None, mine: int, cells: int, runs: int, na: dict[str, str]
) -> None:
    """Say which share of the matrix this is, and which cells are not run and why."""
    if share:
        console.print(f"shard {share[0]}/{share[1]}: {mine} of {cells} cells, {runs} runs")
    for cell, why in na.items():
        console.print(f"n/a {cell.replace('|', ' x ')}: {why}", markup=False, highlight=False)


def placement(cluster, engine, parallel: int, specs: list) -> tuple:
    """Where the runs go: a connected Dask client (`--cluster`), or this machine's engine with
    the images the cells need."""
    dask = connect_cluster(cluster, engine, parallel)
    return dask, (matrix_engine(engine, specs) if dask is None else None)


def run_cells(
    jobs: list, where_runs, parallel: int, store_root, progress: Progress, dask=None
) -> list:
    """Run the jobs here (`where_runs`: the engine, `parallel` slots) or on the Dask cluster
    `dask` is connected to, `progress` reporting (and recording) every finished run."""
    from zkjepsen.run.many import run_jobs

    try:
        return run_jobs(
            jobs,
            where_runs,
            parallel,
            store_root,
            on_start=progress.begin,
            on_done=progress.done,
            keep_going=True,
            cluster=dask,
        )
    except BaseException as e:
        # The matrix's record, even with no run finished (so --resume has it to go on), and
        # the interrupt's last line says where it is and how to go on.
        from zkjepsen.report import findings

        try:
            root, settings, shard, origin = progress.manifest
            findings.write_manifest(root, settings, shard, progress.finished, origin)
        except OSError:
            pass  # the store went away: the message still says what finished
        note = resume_note(len(progress.finished), progress.manifest[0])
        twin = stopped(e, matrix_note=note)
        if twin is not None:
            raise twin from e
        raise
    finally:
        if dask is not None:
            dask.close()


@click.command("matrix")
@click.option(
    "--recipes",
    required=True,
    help="Comma-separated recipe names; each runs on its own backend, or RECIPE@BACKEND "
    "(e.g. redis-set-px@redis-sentinel).",
)
@click.option("--nemeses", required=True, help="Comma-separated nemesis names (one per column).")
@click.option("--runs", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--workload", default="lock", show_default=True)
@click.option("--time-limit", type=float, default=30.0, show_default=True)
@click.option("--nodes", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--clients", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--session-timeout", type=float, default=4.0, show_default=True)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option(
    "--interval",
    type=click.FloatRange(0, 3600),
    default=10.0,
    show_default=True,
    help="Mean quiet time before each fault (the first starts uniformly within twice it).",
)
@click.option(
    "--fault-trigger",
    type=click.Choice(["time", "acquired", "acquired-each"]),
    default=None,
    help="As on `test`: acquired fires each fault on whoever just acquired (default: time).",
)
@table_out_option("Where to write the Markdown table (JSON beside it).")
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Run only this share of the cells (CI job I of N); `zkjepsen merge` joins "
    "the shards' stores.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the matrix on record in --store (same options; --runs may grow): runs "
    "already finished are kept, the rest run.",
)
@service_options("matrix")
@engine_option
@parallel_option
@cluster_option
@junit_option
def matrix_command(
    recipes,
    nemeses,
    runs,
    workload,
    time_limit,
    nodes,
    clients,
    session_timeout,
    params,
    seed,
    interval,
    fault_trigger,
    out,
    store_root,
    shard,
    resume,
    engine,
    parallel,
    cluster,
    junit_xml,
    **service_opts,
) -> None:
    """Run every recipe x nemesis cell K times; print and write the verdict table. With
    --zk-versions, every recipe has a row per ZooKeeper version ("kazoo zk3.4")."""
    from zkjepsen.report import findings
    from zkjepsen.report.services import services_settings
    from zkjepsen.run.fanout import Job
    from zkjepsen.store import DEFAULT_ROOT, check_root

    recipe_list, nemesis_list = _split(recipes, "recipes"), _split(nemeses, "nemeses")
    check_out(out)
    root = check_root(store_root)
    tables, axes = service_tables("matrix", service_opts), service_axes("matrix", service_opts)
    rows = axis_rows(recipe_list, axes)
    share = findings.parse_shard(shard)
    extra = parse_params(params)
    all_cells = [f"{rc}|{nm}" for rc in rows for nm in nemesis_list]
    mine = findings.cells_of_shard(all_cells, share)
    common = {
        "workload": workload,
        "nodes": nodes,
        "clients": clients,
        "time_limit_s": time_limit,
        "session_timeout_s": session_timeout,
        "params": extra,
        "recovery_s": 5.0,
        "interval_s": interval,
    }
    if fault_trigger is not None:  # recorded only when given: older manifests resume alike
        common["fault_trigger"] = fault_trigger
    specs = cell_specs(all_cells, runs, seed, tables, common)
    na = checked_cells(specs[: len(all_cells)])
    settings = {  # what a --resume must match, and the table's header
        **{k: common[k] for k in MANIFEST_COMMON},
        **{"runs": runs, "seed": seed, "interval_s": interval},
        **({"fault_trigger": fault_trigger} if fault_trigger else {}),
        **{"recipes": rows, "nemeses": nemesis_list, "not_applicable": na},
        "servers": findings.servers_per_backend(recipe_list, nodes),
        "services": services_settings(recipe_list, tables, axes),
    }
    manifest_root = root if store_root else DEFAULT_ROOT
    jobs = [Job(s, None, cell) for cell, s in specs if cell in mine and cell not in na]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    finished: list[dict] = []
    if resume:
        jobs, finished, started = resumed(jobs, manifest_root, settings, share, started)
    previous = list(finished)
    runnable = [(c, s) for c, s in specs if c not in na]  # an n/a cell needs no image
    dask, where_runs = placement(cluster, engine, parallel, runnable) if jobs else (None, None)
    announce(share, len(mine), len(all_cells), len(jobs), na)
    width = 2 if dask else parallel  # > 1: the progress lines say which run ended
    origin = {"started": started, "where": this_host(parallel, share, cluster if dask else None)}
    progress = Progress(len(jobs), width, (manifest_root, settings, share, origin), finished)
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    outcomes = run_cells(jobs, where_runs, parallel, store_root, progress, dask)
    records = previous + [Progress.record(o) for o in outcomes]
    na_mine = {k: why for k, why in na.items() if k in mine}
    write_matrix(out, records, na_mine, progress.manifest, rows, nemesis_list, load0)
    from zkjepsen.report.junit import matrix_cases, publish

    publish(junit_xml, matrix_cases(outcomes, na_mine), "zkjepsen matrix")
    click.echo(f"{len(jobs)} runs in {time.monotonic() - t0:.0f} s; written {out}")


def write_matrix(
    out: Path,
    records: list[dict],
    na: dict[str, str],
    manifest: tuple,
    rows: list[str],
    nemeses: list[str],
    load0: float,
) -> None:
    """The finished matrix: its manifest, and its table with the load it ran under."""
    from zkjepsen.report import findings

    manifest_root, settings, share, origin = manifest
    cells = cell_table(records, na)
    findings.write_manifest(manifest_root, settings, share, records, origin)
    load = f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    where = origin["where"].replace(" cores)", f" cores, {load})", 1)
    header = findings.settings_header(settings, origin["started"], where, cells)
    write_table(out, cells, rows, nemeses, header)


def write_table(
    out: Path, cells: dict, recipes: list[str], nemeses: list[str], header: str
) -> None:
    """The Markdown table at `out`, the cells as JSON beside it, and the table on the terminal."""
    from zkjepsen.report import findings

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(findings.markdown_table(cells, recipes, nemeses, header))
    out.with_suffix(".json").write_text(json.dumps(cells, indent=1))
    table = Table(title="recipe x fault")
    table.add_column("recipe")
    for nm in nemeses:
        table.add_column(nm)
    for rc in recipes:
        table.add_row(rc, *[findings.cell_text(cells.get(f"{rc}|{nm}")) for nm in nemeses])
    Console().print(table)


@click.command("merge")
@click.argument("stores", nargs=-1, required=True, type=click.Path(path_type=Path))
@table_out_option("Where to write the merged Markdown table (JSON beside it).")
def merge_command(stores: tuple[Path, ...], out: Path) -> None:
    """Join the stores of `matrix --shard i/N` runs into one findings table (or render the
    folders of one `sweep`: its curve, table and page, in the first folder)."""
    from zkjepsen.report import findings
    from zkjepsen.report.sweep import RECORD

    if all((Path(s) / RECORD).is_file() for s in stores):
        from zkjepsen.cli.sweep import merge_sweeps

        return merge_sweeps(stores)
    check_out(out)
    manifests = [findings.read_manifest(s) for s in stores]
    settings, cells, notes = findings.merge(manifests)
    for note in notes:
        console.print(f"note: {note}", markup=False)
    when, where = findings.merged_origin(
        manifests, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    )
    header = findings.settings_header(settings, when, where, cells)
    write_table(out, cells, settings["recipes"], settings["nemeses"], header)
    click.echo(
        f"{sum(len(m['runs']) for m in manifests)} runs from {len(stores)} stores; written {out}"
    )
