"""`zkjepsen sweep`: one fault, one of its magnitudes swept; the violation rate per point with
its interval, the boundary where the lock breaks, the curve, the page, JSON and JUnit. The axis
and the points' specs: run/sweep.py; the record, the result and the table: report/sweep.py;
the curve and the page: report/sweep_page.py; the boundary: report/boundary.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from zkjepsen.cli.cells import console, matrix_engine
from zkjepsen.cli.engines import cluster_option, connect_cluster, engine_option, parallel_option
from zkjepsen.cli.options import STORE_PATH, junit_option, parse_params
from zkjepsen.cli.versions import service_options, service_tables, settings_of
from zkjepsen.errors import BadInput
from zkjepsen.recipes import resolve_backend
from zkjepsen.report import sweep, sweep_page
from zkjepsen.report.boundary import Point, estimate, next_probe
from zkjepsen.report.junit import case_of, folder_of, publish
from zkjepsen.report.site_pages import page
from zkjepsen.report.sweep import (
    RECORD,
    differing,
    host_load,
    merge_records,
    read_record,
    result,
    write_record,
)
from zkjepsen.run.outcome import stopped
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec
from zkjepsen.run.sweep import MAX_POINTS, parse_over, point_name, point_spec
from zkjepsen.store import DEFAULT_ROOT, RunDir, check_root
from zkjepsen.store.writable import check_output_file

# Everything the sweep reads after its runs is imported here, before them: a sweep runs for an
# hour, and a module first imported at its end could meet a different version of the code.

SITE = ("sweep.md", "sweep.json", "sweep.png", "sweep.html")  # what a sweep folder shows


def finite(ctx, param, value):
    """click's FloatRange lets NaN through (every comparison with it is false)."""
    if value is not None and value != value:
        raise click.BadParameter("is not a number")
    return value


def base_spec(options: dict, tables: dict) -> TestSpec:
    """The settled spec every point's runs share (validated as `test` validates one)."""

    fault = options["nemesis"].strip()
    if "," in fault or "+" in fault:
        raise BadInput(f"--nemesis {fault!r}: a sweep varies one fault; give one name")
    if fault == "none":
        raise BadInput("--nemesis none injects nothing; a sweep needs a fault to size")
    backend = resolve_backend(options["recipe"], options["backend"])
    spec = TestSpec(
        recipe=options["recipe"],
        backend=backend,
        service=settings_of(backend, tables) if tables else None,
        nemesis=[fault],
        workload=options["workload"],
        nodes=options["nodes"],
        clients=options["clients"],
        time_limit_s=options["time_limit"],
        session_timeout_s=options["session_timeout"],
        params=parse_params(options["params"]),
        interval_s=options["interval"],
        recovery_s=5.0,
        fault_trigger=options["fault_trigger"],
        seed=options["seed"],
    )
    validate_spec(spec)
    return spec


def sweep_settings(spec: TestSpec, axis, options: dict) -> dict:
    """What the record says of the sweep (a --resume and a merge must find it the same)."""
    return {
        "recipe": spec.recipe,
        "backend": spec.backend,
        "workload": spec.workload,
        "nodes": spec.nodes,
        "clients": spec.clients,
        "time_limit_s": spec.time_limit_s,
        "session_timeout_s": spec.session_timeout_s,
        "interval_s": spec.interval_s,
        "params": spec.params,
        "fault_trigger": options["fault_trigger"],
        "seed": options["seed"],
        "runs": options["runs"],
        "target_rate": options["target_rate"],
        "until_boundary": options["width"],
        "services": {spec.service.name: spec.service.to_json()} if spec.service else None,
        "axis": axis.to_json(),
    }


def point_jobs(base: TestSpec, axis, magnitudes, runs: int, seed: int, done: set) -> list:
    """A job per (point, seed) not on record; every spec checked before anything runs."""
    from zkjepsen.run.fanout import Job

    jobs = []
    for k in range(runs):  # seed-major: a sweep cut short has every point partly filled
        for m in magnitudes:
            if (m, seed + k) in done:
                continue
            spec = point_spec(base, axis, m, seed + k)
            validate_spec(spec)
            jobs.append(Job(spec, None, m))
    return jobs


class Record:
    """The sweep's record, rewritten after every run (a sweep cut short keeps what finished)."""

    def __init__(self, folder: Path, settings: dict, runs: list[dict], origin: dict) -> None:
        self.folder, self.settings, self.runs, self.origin = folder, settings, runs, origin
        self.total = 0

    def write(self) -> None:

        write_record(self.folder, self.settings, self.runs, self.origin)

    def begin(self, i, job, engine) -> None:
        console.print(
            f"[{i + 1}/{self.total}] {self.settings['axis']['param']}={job.tag:g}"
            f"{'x' if self.settings['axis']['relative'] else ''} seed {job.spec.seed}",
            markup=False,
            highlight=False,
        )

    def done(self, i, o) -> None:

        self.runs.append(
            {
                "point": o.job.tag,
                "seed": o.job.spec.seed,
                "valid": o.run.valid,
                "results": o.run.results,
                "store": folder_of(o.run),
                "engine": o.engine,
                "load": host_load(),
            }
        )
        self.write()
        error = o.run.results.get("error")
        console.print(
            f"    -> {o.run.valid}  " + (f"(error: {error})" if error else f"({o.run.store_dir})"),
            markup=False,
            highlight=False,
        )


def run_batch(jobs: list, record: Record, where, parallel: int, dask) -> list:
    """The jobs through the fan-out or Dask (run/many.py), the record written after each; an
    interrupt says what is on record and how to go on."""
    from zkjepsen.run.many import run_jobs

    record.total = len(jobs)
    try:
        return run_jobs(
            jobs,
            where,
            parallel,
            record.folder,
            on_start=record.begin,
            on_done=record.done,
            keep_going=True,
            cluster=dask,
        )
    except BaseException as e:
        try:
            record.write()
        except OSError:
            pass  # the store went away: the message still says what finished
        note = (
            f"the sweep's {len(record.runs)} finished runs are on record in {record.folder}: "
            f"`zkjepsen merge {record.folder}` renders them, the same sweep command with "
            "--resume continues it"
        )
        twin = stopped(e, matrix_note=note)
        if twin is not None:
            raise twin from e
        raise


def refine(record: Record, base, axis, width: float, runs: int, seed: int, run) -> list:
    """--until-boundary: bisect between the last safe and the first broken point until the
    interval is narrower than `width` (or the axis's grain, or the points' cap, stops it)."""

    outcomes: list = []
    while True:
        res = result({"settings": record.settings, "runs": record.runs})
        pts = [
            Point(p["magnitude"], p["rates"]["invalid"]["k"], p["judged"])
            for p in res["points"]
            if p["runs"]
        ]
        boundary = estimate(pts, record.settings["target_rate"], falling=axis.falling)
        probe, why = next_probe(boundary, width, axis.grain)
        if probe is not None and len(res["points"]) >= MAX_POINTS:
            probe, why = None, f"the sweep has {MAX_POINTS} points, the most it takes"
        done = {(r["point"], r["seed"]) for r in record.runs}
        jobs = [] if probe is None else point_jobs(base, axis, [probe], runs, seed, done)
        if probe is not None and not jobs:  # an undecided point on record, runs all done
            why = f"{axis.label(probe)} is on record, undecided: more --runs would decide it"
        console.print(f"until-boundary: {why}", markup=False, highlight=False)
        if not jobs:
            return outcomes
        outcomes += run(jobs)


def render(doc: dict, folder: Path, json_out: Path | None) -> dict:
    """sweep.md, sweep.json, sweep.png and sweep.html in `folder`; the JSON at --json too; the
    table on the terminal."""

    res = sweep.result(doc)
    folder.mkdir(parents=True, exist_ok=True)
    md, js, png, page_path = (folder / n for n in SITE)
    md.write_text(sweep.markdown(res))
    text = json.dumps(res, indent=1, default=str)
    js.write_text(text)
    if json_out is not None:
        Path(json_out).write_text(text)
    plot = None
    if any(p["judged"] for p in res["points"]):
        sweep_page.write_plot(res, png)
        plot = png.name

    def href(store: str) -> str | None:
        try:
            rel = Path(store).resolve().relative_to(folder.resolve())
        except ValueError:
            return None
        return RunDir(rel).timeline.as_posix()

    page_path.write_text(page(sweep_page.title(res), sweep_page.body(res, href, plot)))
    click.echo(sweep.markdown(res))
    return res


def sweep_folder(store_root: Path | None, spec: TestSpec, axis) -> Path:

    if store_root is not None:
        return check_root(store_root)
    name = point_name(spec, axis, 0).rsplit("-", 1)[0]  # sweep-RECIPE-FAULT-PARAM
    return check_root(DEFAULT_ROOT / name)


def on_record(folder: Path, settings: dict, resume: bool) -> tuple[list[dict], dict]:
    """(runs on record, origin): none for a new sweep; a --resume's, of the same sweep."""

    started = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    there = (folder / RECORD).exists()
    if not resume:
        if there:
            raise BadInput(
                f"{folder} holds a sweep already; --resume continues it, or give another --store"
            )
        return [], started
    if not there:
        raise BadInput(f"--resume: {folder} holds no {RECORD}; drop --resume or give its --store")
    doc = read_record(folder)
    diff = differing(doc["settings"], settings)
    if diff:
        raise BadInput(
            f"--resume: {folder} holds a different sweep ({', '.join(diff)} differ); give the "
            "options it was started with, or another --store"
        )
    console.print(f"resuming: {len(doc['runs'])} runs on record")
    return doc["runs"], doc.get("origin") or started


@click.command("sweep")
@click.option("--recipe", required=True, help="Lock recipe (`zkjepsen list recipes`).")
@click.option("--backend", default=None, help="Default: the recipe's own.")
@click.option("--nemesis", required=True, help="The one fault whose magnitude is swept.")
@click.option(
    "--over",
    required=True,
    metavar="NAME=START:STOP:STEP",
    help="The magnitude and its points: a parameter the fault reads (offset_s, rate) or its "
    "duration; x after each number (duration=0.5x:3x:0.25x) for multiples of the lock's own "
    "timing (session timeout, lock TTL). At most 40 points.",
)
@click.option("--runs", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--workload", default="lock", show_default=True)
@click.option("--time-limit", type=click.FloatRange(0, 3600, min_open=True), default=30.0,
              show_default=True)  # fmt: skip
@click.option("--nodes", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--clients", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--session-timeout", type=click.FloatRange(0, 3600, min_open=True), default=4.0,
              show_default=True)  # fmt: skip
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--interval", type=click.FloatRange(0, 3600), default=10.0, show_default=True,
              help="Mean quiet time before each fault.")  # fmt: skip
@click.option("--fault-trigger", type=click.Choice(["time", "acquired", "acquired-each"]),
              default=None, help="As on `test` (default: as `test` chooses).")  # fmt: skip
@click.option(
    "--target-rate",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.5,
    show_default=True,
    callback=finite,
    help="A point is safe when its interval's upper end is below this rate.",
)
@click.option(
    "--until-boundary",
    "width",
    type=click.FloatRange(0, min_open=True),
    default=None,
    callback=finite,
    metavar="WIDTH",
    help="Then bisect between the last safe and the first broken point until the interval "
    "is narrower than WIDTH (in the axis's unit).",
)
@click.option("--store", "store_root", type=STORE_PATH, default=None,
              help="The sweep's folder (default: store/sweep-RECIPE-FAULT-PARAM).")  # fmt: skip
@click.option("--resume", is_flag=True, help="Continue the sweep on record in its folder.")
@click.option("--json", "json_out", type=click.Path(path_type=Path), default=None,
              help="Write the result's JSON here too.")  # fmt: skip
@service_options("test")
@engine_option
@parallel_option
@cluster_option
@junit_option
def sweep_command(**options) -> None:
    """Run one fault at each point of one of its magnitudes, K runs a point: the violation
    rate per point with its 95 % interval, where the lock breaks, the curve and its page."""

    tables = service_tables("test", options)
    spec = base_spec(options, tables)
    axis = parse_over(options["over"], spec.nemesis[0], spec)
    if options["json_out"] is not None:
        check_output_file(options["json_out"], "--json")
    folder = sweep_folder(options["store_root"], spec, axis)
    settings = sweep_settings(spec, axis, options)
    runs_before, origin = on_record(folder, settings, options["resume"])
    done = {(r["point"], r["seed"]) for r in runs_before}
    magnitudes = sorted(set(axis.grid) | {r["point"] for r in runs_before})
    jobs = point_jobs(spec, axis, magnitudes, options["runs"], options["seed"], done)
    dask = connect_cluster(options["cluster"], options["engine"], options["parallel"])
    where = None
    if dask is None and (jobs or options["width"] is not None):
        where = matrix_engine(options["engine"], [("", spec)])
    record = Record(folder, settings, list(runs_before), origin)
    record.write()
    t0 = time.monotonic()

    def run(batch: list) -> list:
        return run_batch(batch, record, where, options["parallel"], dask) if batch else []

    try:
        outcomes = run(jobs)
        if options["width"] is not None:
            outcomes += refine(record, spec, axis, options["width"], options["runs"],
                               options["seed"], run)  # fmt: skip
    finally:
        if dask is not None:
            dask.close()
    res = render({"settings": settings, "runs": record.runs, "origin": origin}, folder,
                 options["json_out"])  # fmt: skip
    publish_junit(options["junit_xml"], outcomes, axis)
    click.echo(
        f"{len(outcomes)} runs in {time.monotonic() - t0:.0f} s ({res['runs']} on record); "
        f"written {folder / SITE[0]}, {folder / SITE[3]}"
    )


def publish_junit(path, outcomes: list, axis) -> None:

    cases = []
    seen: dict[float, int] = {}
    for o in outcomes:
        k = seen[o.job.tag] = seen.get(o.job.tag, 0) + 1
        suite = f"sweep {o.job.spec.recipe} x {axis.fault}"
        name = f"{axis.param}={axis.label(o.job.tag)} run {k}"
        cases.append(case_of(o.run, name, suite=suite, spec=o.job.spec))
    publish(path, cases, "zkjepsen sweep")


def merge_sweeps(stores: tuple[Path, ...]) -> None:
    """`merge` of sweep folders: their records joined, rendered into the first folder (as the
    sweep itself would have: a sweep cut short is rendered where it ran)."""

    doc = merge_records([read_record(s) for s in stores])
    res = render(doc, Path(stores[0]), None)
    click.echo(
        f"{res['runs']} runs from {len(stores)} sweep folders; written {stores[0] / SITE[0]}"
    )
