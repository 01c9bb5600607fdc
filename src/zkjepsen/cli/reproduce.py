"""`zkjepsen replay`, `zkjepsen shrink` and `zkjepsen scenario`: from a failing run to a minimal,
replayable proof."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console

from zkjepsen.cli.engines import (
    cluster_option,
    connect_cluster,
    engine_option,
    parallel_option,
    prepare,
)
from zkjepsen.cli.minimal import write_minimal
from zkjepsen.cli.options import STORE_PATH, junit_option
from zkjepsen.cli.versions import service_axes, service_options, service_tables
from zkjepsen.reproduce.replay import faults_for_replay, faults_text, replay, violation_kinds
from zkjepsen.reproduce.shrink import check_kinds, shrink
from zkjepsen.run.stored import StoredRun

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)


def say(text: str) -> None:
    """Plain text: schedules print as `[pause-client@4.0s+4.5s]`, which rich would eat as markup."""
    console.print(text, markup=False, highlight=False)


NONDETERMINISM = (
    "Replays are not deterministic: the same faults at the same times meet a "
    "different interleaving of clients and servers each time, so what matters is "
    "the rate."
)


def recorded_spec_line(run: StoredRun) -> str:
    """What a reproduction runs: exactly the spec its test.json recorded, said in one line."""
    s = run.spec
    return (
        f"with the recorded spec of {run.dir.test_json}: {s.recipe} on {s.backend}, "
        f"{s.nodes} servers, {s.clients} clients, workload {s.workload}, seed {s.seed}"
    )


@click.command("replay")
@click.argument("store_dir", type=click.Path(path_type=Path))
@click.option("--runs", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option(
    "--as-recorded",
    is_flag=True,
    help="Aim role-targeted faults (holder, leader) at the recorded node/client "
    "instead of whoever has the role at replay time.",
)
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@engine_option
@parallel_option
@cluster_option
def replay_command(
    store_dir: Path,
    runs: int,
    as_recorded: bool,
    store_root: Path | None,
    engine: str | None,
    parallel: int,
    cluster: str | None,
) -> None:
    """Re-run a stored run's fault schedule on fresh ensembles; report how often it recurs."""
    from zkjepsen.store import check_root

    check_root(store_root)
    run = StoredRun.load(store_dir, need_results=True, need_schedule=True)
    run.history()  # the evidence is checked before anything acts on it
    dask = connect_cluster(cluster, engine, parallel)
    where = prepare(engine, run.spec.image) if dask is None else None
    target = violation_kinds(run.results)
    say(
        f"replaying {len(run.schedule.get('faults', []))} faults of {store_dir} "
        f"{runs}x; original violations: {sorted(target) or 'none (valid run)'}"
    )
    say(recorded_spec_line(run))
    say(f"faults: {faults_text(faults_for_replay(run.faults, not as_recorded))}")
    hits = 0

    def report(i, r):
        nonlocal hits
        got = violation_kinds(r.results)
        same = bool(target) and target <= got or (not target and r.valid is True)
        hits += same
        say(
            f"  replay {i + 1}/{runs}: {r.valid} {sorted(got)} "
            f"{'(same)' if same else '(different)'}  {r.store_dir}"
        )
        # What the replay's own schedule.json says ran (a fault whose trigger never fired in
        # it is missing here): the same names and triggers as the line above, or not.
        say(f"    ran: {faults_text(StoredRun.load(r.store_dir).faults)}")

    replay(
        run,
        runs,
        retarget=not as_recorded,
        store_root=store_root,
        on_result=report,
        engine=where,
        parallel=parallel,
        cluster=dask,
    )
    console.print(NONDETERMINISM)
    from zkjepsen.report.stats import rate_text

    click.echo(f"recurred in {rate_text(hits, runs)} of the replays")
    raise SystemExit(0 if hits else 1)


@click.command("shrink")
@click.argument("store_dir", type=click.Path(path_type=Path))
@click.option(
    "--tries",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Replays per candidate.",
)
@click.option(
    "--min-hits",
    type=click.IntRange(1, 20),
    default=2,
    show_default=True,
    help="Keep a candidate if the violation recurs in at least this many tries.",
)
@click.option("--budget", default="30m", show_default=True, help="Wall-clock budget, e.g. 20m.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    help="Violation to preserve (e.g. lock:belief); default: all the run had.",
)
@click.option(
    "--kind-not-in-run",
    "not_in_run",
    is_flag=True,
    help="Allow a --kind the run did not record (search for a violation it never showed).",
)
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@engine_option
@parallel_option
@cluster_option
def shrink_command(
    store_dir: Path,
    tries: int,
    min_hits: int,
    budget: str,
    kinds: tuple,
    not_in_run: bool,
    store_root: Path | None,
    engine: str | None,
    parallel: int,
    cluster: str | None,
) -> None:
    """Shrink a failing run's schedule to the fewest, shortest faults on the fewest clients."""
    from zkjepsen.cli.options import parse_duration
    from zkjepsen.errors import BadInput

    if min_hits > tries:
        raise BadInput(f"--min-hits {min_hits} exceeds --tries {tries}")
    # Where it writes, and a budget of nan, 0 or less: refused before the run is read.
    from zkjepsen.cli.options import positive_duration
    from zkjepsen.run.stored_checks import check_run_folder
    from zkjepsen.store import check_root
    from zkjepsen.store.writable import check_directory

    positive_duration(budget, "--budget")
    check_root(store_root)
    check_run_folder(Path(store_dir))  # a folder to read, before one is made inside it
    check_directory(
        Path(store_dir) / "minimal", "shrink's output", "copy the run folder somewhere writable"
    )
    run = StoredRun.load(store_dir, need_results=True, need_schedule=True)
    run.history()  # the evidence is checked before anything acts on it
    budget_s = parse_duration(budget, "--budget")
    check_kinds(run, set(kinds) or None, not_in_run)  # before any engine is asked
    dask = connect_cluster(cluster, engine, parallel)
    where = prepare(engine, run.spec.image) if dask is None else None
    if dask is not None:
        from zkjepsen.run.dask_executor import slots

        parallel = slots(dask)  # a wave as wide as the cluster
    say(recorded_spec_line(run))
    started = time.monotonic()
    res = shrink(
        run,
        kinds=set(kinds) or None,
        tries=tries,
        min_hits=min_hits,
        budget_s=budget_s,
        store_root=store_root,
        progress=say,
        engine=where,
        parallel=parallel,
        cluster=dask,
        not_in_run=not_in_run,
    )
    if res.hits == 0:
        # Nothing recurred: a reproducer would pass and prove nothing. Unknown (2), not
        # invalid: this says nothing about whether the violation can happen again.
        console.print(NONDETERMINISM)
        click.echo(
            f"the violation recurred in none of {res.tries} replays of {res.best.summary()}; "
            "no reproducer written",
            err=True,
        )
        raise SystemExit(2)
    files, test_file = write_minimal(Path(store_dir), res, run)
    console.print(NONDETERMINISM)
    click.echo(
        f"minimal: {res.best.summary()}; reproduced {res.hits}/{res.tries} "
        f"({time.monotonic() - started:.0f}s of search)"
    )
    click.echo(f"written {files.schedule} and {test_file}")


@click.group("scenario")
def scenario_group() -> None:
    """Named scenarios for known lock failure modes (ZooKeeper, etcd, Redis, PostgreSQL)."""


@scenario_group.command("list")
def scenario_list() -> None:
    """Each scenario, the recipes it applies to and the outcome it expects."""
    from zkjepsen.reproduce.scenarios import SCENARIOS

    for s in SCENARIOS.values():
        click.echo(f"{s.name}: {s.title}\n    {s.why}")
        if s.source:
            click.echo(f"    source: {s.source}")
        if s.schedule is not None:
            click.echo("    schedule: " + s.schedule_text().replace("\n", "\n    "))
        for recipe, exp in s.expect.items():
            click.echo(f"    --recipe {recipe}: {exp.describe()}")


@scenario_group.command("run")
@click.argument("names", nargs=-1)
@click.option("--all", "run_all", is_flag=True, help="Every scenario with every recipe it names.")
@click.option(
    "--recipe",
    "recipes",
    multiple=True,
    help="Only these recipes (default: every recipe the scenario names).",
)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option(
    "--runs",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Runs per scenario and recipe (seeds SEED, SEED+1, ...); each pair's rate is printed.",
)
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@service_options("scenario")
@cluster_option
@junit_option
def scenario_run(
    names: tuple,
    run_all: bool,
    recipes: tuple,
    seed: int,
    runs: int,
    store_root: Path | None,
    cluster: str | None,
    junit_xml: str | None,
    **service_opts,
) -> None:
    """Run scenarios end to end; exit 0 only if every outcome is as expected. With
    --zk-versions, each ZooKeeper scenario runs on every version, a row per version;
    --etcd-version applies to the etcd scenarios, --zk-version to the ZooKeeper ones."""
    from zkjepsen.errors import BadInput
    from zkjepsen.reproduce.scenarios import SCENARIOS, get_scenario
    from zkjepsen.store import check_root

    check_root(store_root)
    chosen = list(SCENARIOS.values()) if run_all else [get_scenario(n) for n in names]
    if not chosen:
        raise BadInput("name a scenario (`zkjepsen scenario list`) or pass --all")
    named = {r for s in chosen for r in s.expect}
    unknown = [r for r in recipes if r not in named]
    if unknown:
        raise BadInput(
            f"--recipe {', '.join(unknown)}: not a recipe these scenarios apply to; "
            f"choose from {', '.join(sorted(named))} (`zkjepsen scenario list`)"
        )
    tables, axes = service_tables("scenario", service_opts), service_axes("scenario", service_opts)
    pairs = [(s, r) for s in chosen for r in s.expect if not recipes or r in recipes]
    plan = _scenario_plan(pairs, seed, tables, axes)
    from zkjepsen.report.stats import rate_text

    dask = connect_cluster(cluster)
    from zkjepsen.report.junit import case_of, publish

    outcomes, rates, cases, folders = [], [], [], []
    try:
        for s, r, v, results in _scenario_runs(plan, runs, seed, store_root, dask):
            on = _on(v)
            console.print(f"[bold]{s.name}[/bold] with {r}{on}: expect {s.expect[r].describe()}")
            hits = 0
            for run in results:
                ok, why = s.expect[r].judge(run.valid, run.results)
                outcomes.append(ok)
                hits += ok
                folders.append(run.store_dir)
                say(f"    {'as expected' if ok else 'NOT as expected'}: {why}  ({run.store_dir})")
                cases.append(case_of(run, f"{s.name}{on}", expected=(ok, why)))
            rates.append(f"  {s.name} with {r}{on}: as expected in {rate_text(hits, runs)}")
    except BaseException as e:  # the earlier pairs' runs too, in the interrupt's last line
        from zkjepsen.run.outcome import note_many, reraise

        reraise(e, note_many(e, folders, []))
    if runs > 1 or axes:
        click.echo("\n".join(rates))
    click.echo(f"{sum(outcomes)}/{len(outcomes)} scenario runs as expected")
    publish(junit_xml, cases, "zkjepsen scenario run")
    raise SystemExit(0 if all(outcomes) else 1)


def _on(settings) -> str:
    """The label of a run on settings its service's options pinned: ' on ZooKeeper 3.4', ' on
    etcd 3.5.16', or '' (None: as the scenario says)."""
    said = settings.describe() if settings is not None else ""
    return f" on {said}" if said else ""


def _scenario_plan(pairs, seed, tables: dict, axes: dict) -> list:
    """(scenario, recipe, the settings its service's options pin, None: none) per run to make,
    every spec checked: a pair once per value of its service's axis (--zk-versions), on the
    settings its service's options give (--etcd-version 3.5), any other pair as it is. A pair
    whose recipe or fault cannot run on the settings asked for (no driver on that etcd version,
    no reconfiguration on ZooKeeper 3.4: run/resolve.py `refusals`) is left out with a line
    saying why (as a matrix's n/a cell); if that leaves nothing, the command is
    refused with its reason."""
    from dataclasses import replace

    from zkjepsen.backends.registry import service_of
    from zkjepsen.errors import BadInput
    from zkjepsen.run.resolve import recipe_language, refusals, validate_spec

    plan, skipped = [], []
    for s, r in pairs:
        probe = s.spec(r, seed)
        validate_spec(probe)
        svc = service_of(probe.backend)
        own = s.spec(r, seed).service
        given = own.given() if own is not None else {}
        field, values = axes.get(svc.name, ("", [None]))
        for v in values:
            table = {**given, **tables.get(svc.name, {}), **({field: v} if field else {})}
            pin = svc.settings(**table) if table != given else None
            spec = replace(s.spec(r, seed), service=pin) if pin is not None else s.spec(r, seed)
            try:
                if pin is not None:
                    pin.settled().check(spec, recipe_language(r))
                    # a fault this version cannot run (member-add on ZooKeeper 3.4): n/a too
                    refused = refusals(spec, probe.nemesis)
                    if refused:
                        raise BadInput(next(iter(refused.values())))
            except BadInput as e:
                skipped.append((f"{s.name} with {r}", e))
                continue
            validate_spec(spec)
            plan.append((s, r, pin))
    if not plan:  # one sentence, as for any refusal: the first pair's reason
        raise BadInput(f"nothing to run: {skipped[0][1]}")
    for pair, why in skipped:
        say(f"n/a {pair}: {why}")
    return plan


def _scenario_runs(plan, runs: int, seed: int, store_root, dask):
    """(scenario, recipe, pinned version, its runs' results) of each planned pair: one after
    the other here, or all at once as tasks on the Dask cluster (`dask`, a client)."""
    from dataclasses import replace

    from zkjepsen.run.fanout import Job
    from zkjepsen.run.many import run_jobs

    def spec(s, r, v, i):
        return replace(s.spec(r, seed + i), service=v) if v is not None else s.spec(r, seed + i)

    if dask is None:
        for s, r, v in plan:
            jobs = [Job(spec(s, r, v, i), scenario=s.name) for i in range(runs)]
            yield s, r, v, [o.run for o in run_jobs(jobs, None, 1, store_root)]
        return
    jobs = [
        Job(spec(s, r, v, i), tag=k, scenario=s.name)
        for k, (s, r, v) in enumerate(plan)
        for i in range(runs)
    ]
    outcomes = run_jobs(jobs, None, 1, store_root, keep_going=True, cluster=dask)
    for k, (s, r, v) in enumerate(plan):
        yield s, r, v, [o.run for o in outcomes if o.job.tag == k]
