"""`zkjepsen hunt`: short runs, each with one fault the hunt chooses, until one finds a violation
a lease does not explain or the budget is spent (run/hunt.py, docs/hunt.md); what it found is
confirmed, shrunk and written as a pytest reproducer and a catalogue entry
(reproduce/hunt_finding.py).
Exit as `test`: 1 one was found, 0 none was and some run was valid, 2 no run could tell, 254
bad input, 255 no engine, 130 interrupted (every finished run's folder and hunt.jsonl kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from zkjepsen.cli.display import console
from zkjepsen.cli.engines import cluster_option, connect_cluster, parallel_option
from zkjepsen.cli.options import (
    STORE_PATH,
    junit_option,
    parse_duration,
    parse_params,
    positive_duration,
)
from zkjepsen.cli.versions import service_options, service_tables

# A hunt's runs are short: small ensembles, short sessions, holds long enough for a fault
# aimed at a holder or a waiter to land in them (as the gate's, run/gate.py).
DEFAULTS = {
    "workload": "lock",
    "nodes": 3,
    "clients": 4,
    "session_timeout_s": 2.0,
    "recovery_s": 2.0,
}
DEFAULT_PARAMS = {"hold_s": 3.0, "hold_fixed": True, "acquire_timeout_s": 30.0}


def say(text: str) -> None:
    """Plain text: schedules print as `[pause-client@4.0s]` and `steps(...)`, not rich markup."""
    console.print(text, markup=False, highlight=False)


def hunt_base(
    given: dict[str, Any],
    time_limit_s: float,
    session_timeout_s: float | None,
    params: dict[str, Any],
    services: dict[str, Any],
) -> Any:
    """The hunt's base spec, checked: the user's settings over the hunt's short defaults."""
    from zkjepsen.run.resolve import spec_from_json, validate_spec

    settings = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    if settings.get("client_dir"):  # the reproducer it writes runs from anywhere
        settings["client_dir"] = str(Path(settings["client_dir"]).resolve())
    settings["time_limit_s"] = time_limit_s
    if session_timeout_s is not None:
        settings["session_timeout_s"] = session_timeout_s
    settings["params"] = {**DEFAULT_PARAMS, **params}
    settings.update(services)
    base = spec_from_json(settings)
    validate_spec(base)
    return base


# A test config's schedule: the hunt chooses its own, so these keys of a `--config` are not used
# (said once, never silently); every other key is a target setting, as `test` reads it.
SCHEDULE_KEYS = (
    "nemesis",
    "generator",
    "fault_trigger",
    "fault_target",
    "fault_duration_s",
    "interval_s",
    "max_faults",
    "stop_on_violation",
    "until_power",
    "seed",
    "name",
    "engine",
)


def with_hunt_config(config: Path | None, cli: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The target settings of a hunt: `--config`'s (as `test --config` reads it, the command
    line winning, both checked) without its schedule; and the schedule keys it left out."""
    if config is None:
        return cli, []
    from zkjepsen.cli.config import read_config, with_config

    toml = read_config(config)
    unused = sorted(k for k in toml if k in SCHEDULE_KEYS)
    target = {k: v for k, v in toml.items() if k not in SCHEDULE_KEYS}
    return with_config(target, cli, config), unused


def suite_name(base: Any) -> str:
    """The JUnit suite: `kazoo on zookeeper`, or a program's own command on its service."""
    from zkjepsen.report.junit import suite_of

    return f"{base.client_cmd} on {base.backend}" if base.client_cmd else suite_of(base)


def shrink_budget_of(text: str, no_shrink: bool) -> float | None:
    """`--shrink-budget` as seconds (above 0, checked like --budget), None with --no-shrink."""
    seconds = positive_duration(text, "--shrink-budget")
    return None if no_shrink else seconds


def run_hunt(
    base: Any,
    the_menu: Any,
    budget_s: float,
    strategy: str,
    seed: int,
    folder: Path,
    parallel: int,
    dask: Any,
    shrink_budget_s: float | None,
    unshrunk: str = "not shrunk (--no-shrink)",
) -> tuple[Any, Any]:
    """The hunt, then, if it found something, the finding confirmed, shrunk and written into
    `folder`: (HuntResult, Written or None). An interrupt anywhere in it carries the hunt's
    folder and hunt.jsonl to the last line (every finished run's folder is in both)."""
    from zkjepsen.run.hunt import Choice, hunt
    from zkjepsen.run.outcome import reraise, stopped
    from zkjepsen.store import RunDir

    log = RunDir(folder).hunt_log

    def said(line: dict) -> None:
        c = Choice.from_json(line["choice"]).describe()
        say(
            f"  run {line['run']}: {c}: {line['reached']}, {line['words'][:120]} ({line['folder']})"
        )

    try:
        result = hunt(
            base, the_menu, budget_s, strategy, seed, folder, said, parallel=parallel, cluster=dask
        )
        written = None
        if result.found:
            say(result.coverage_line())
            written = settle_finding(
                folder, result.found, shrink_budget_s, parallel, dask, unshrunk
            )
    except BaseException as e:
        note = f"the hunt's folder {folder} keeps every run so far and {log}"
        twin = stopped(e, matrix_note=note)
        reraise(e, twin if twin is not None else e)
    return result, written


def settle_finding(
    folder: Path,
    found: dict,
    shrink_budget_s: float | None,
    parallel: int,
    dask: Any,
    unshrunk: str = "not shrunk (--no-shrink)",
) -> Any:
    """Confirm, shrink, write the reproducer (cli/minimal.py's writer) and the entry; print
    the entry."""
    from zkjepsen.cli.minimal import write_minimal
    from zkjepsen.reproduce.hunt_finding import settle, write_finding

    s = settle(
        folder,
        found,
        shrink_budget_s=shrink_budget_s,
        parallel=parallel,
        cluster=dask,
        progress=say,
        unshrunk=unshrunk,
    )
    test_file = None
    if s.shrunk is not None:
        _, test_file = write_minimal(s.run.store_dir, s.shrunk, s.run)
    say(f"shrunk: {s.why}")
    written = write_finding(folder, found, s, test_file)
    say("catalogue entry:\n" + written.entry_text)
    return written


@click.command("hunt")
@click.option("--recipe", default=None, help="Lock recipe or package.module:Name (or exec:PATH).")
@click.option("--client-cmd", default=None, metavar="CMD", help="Your program under test.")
@click.option("--client-dir", default=None, metavar="DIR", help="Its directory (read-only).")
@click.option(
    "--backend",
    default=None,
    help="The servers (`zkjepsen list backends`); default: the recipe's own.",
)
@click.option("--workload", default=None, help="lock (default), election...")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Workload parameter.")
@click.option("--nodes", type=click.IntRange(1, 9), default=None)
@click.option("--clients", type=click.IntRange(1, 100), default=None)
@click.option("--session-timeout", default=None, help="Session (lease) timeout [default: 2s].")
@click.option(
    "--time-limit",
    default=None,
    help="Main phase of each run [default: the config's, or 15s; a run that silences a "
    "client lasts two of its stretched holds and two leases, if longer].",
)
@click.option(
    "--config",
    "config",
    type=click.Path(path_type=Path),
    default=None,
    help="A `test` TOML file: its target settings (its schedule is the hunt's to choose).",
)
@click.option("--budget", default="10m", show_default=True, help="How long to hunt, e.g. 10m.")
@click.option(
    "--strategy",
    type=click.Choice(["guided", "random"]),
    default="guided",
    show_default=True,
    help="guided: each fault kind once, the lock client's own (its wire, process, clock) "
    "before the servers', each on a moment not yet tried, then UCB1 on how close runs came; "
    "random: uniform over the same menu.",
)
@click.option(
    "--faults",
    default=None,
    metavar="A,B",
    help="Hunt with these fault kinds only (default: every one that applies).",
)
@click.option(
    "--shrink-budget",
    default="10m",
    show_default=True,
    help="How long the shrink of what it found may take, after the hunt's own budget.",
)
@click.option("--no-shrink", is_flag=True, help="Confirm what it found, but do not shrink it.")
@parallel_option
@cluster_option
@junit_option
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--image", default=None, metavar="NAME")
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@service_options("hunt")
def hunt_command(
    recipe,
    client_cmd,
    client_dir,
    backend,
    workload,
    params,
    nodes,
    clients,
    session_timeout,
    time_limit,
    config,
    budget,
    strategy,
    faults,
    shrink_budget,
    no_shrink,
    parallel,
    cluster,
    junit_xml,
    seed,
    image,
    store_root,
    **service_opts,
) -> None:
    """Hunt for a bug: short runs, each with one fault on one lock-state moment, chosen by the
    hunt, until one finds a violation a lease does not explain; then confirm, shrink and write
    a reproducer."""
    from zkjepsen.run.hunt import check_budget, menu
    from zkjepsen.store import check_root, new_run_dir

    budget_s = check_budget(parse_duration(budget, "--budget"))
    positive_duration(budget, "--budget")  # nan and inf too
    shrink_s = shrink_budget_of(shrink_budget, no_shrink)
    check_root(store_root)
    given = {
        "recipe": recipe,
        "client_cmd": client_cmd,
        "client_dir": client_dir,
        "backend": backend,
        "workload": workload,
        "nodes": nodes,
        "clients": clients,
        "image": image,
    }
    cli = {k: v for k, v in given.items() if v is not None}
    if session_timeout is not None:
        cli["session_timeout_s"] = parse_duration(session_timeout, "--session-timeout")
    if time_limit is not None:
        cli["time_limit_s"] = parse_duration(time_limit, "--time-limit")
    if params:
        cli["params"] = parse_params(params)
    settings, unused = with_hunt_config(config, cli)
    settings = dict(settings)
    base = hunt_base(
        settings,
        float(settings.pop("time_limit_s", 15.0)),
        None,
        dict(settings.pop("params", None) or {}),
        service_tables("hunt", service_opts),
    )
    only = [f.strip() for f in faults.split(",")] if faults is not None else None
    the_menu = menu(base, only)  # an empty one is bad input: before anything is created
    dask = connect_cluster(cluster, None, parallel)  # before anything is created
    if dask is None:
        from zkjepsen.cli.engines import prepare

        prepare(None, base.image, specs=(base,))  # no engine: 255, before the hunt's folder
    run_dir = new_run_dir(f"hunt-{base.recipe}-{base.backend}", store_root)
    say(
        f"hunt: {base.recipe} on {base.backend}, {strategy}, budget {budget_s:g}s, "
        f"{len(the_menu.arms)} (moment, fault) pairs on the menu"
        + (f"; dropped: {', '.join(sorted(the_menu.dropped))}" if the_menu.dropped else "")
    )
    if unused:
        say(f"  not used from {config} (the hunt chooses the schedule): {', '.join(unused)}")
    try:
        result, written = run_hunt(
            base, the_menu, budget_s, strategy, seed, run_dir.path, parallel, dask, shrink_s
        )
    finally:
        if dask is not None:
            dask.close()
    finish(result, written, junit_xml, base, strategy, seed, budget_s)


def finish(
    result: Any,
    written: Any,
    junit_xml: str | None,
    base: Any,
    strategy: str,
    seed: int,
    budget_s: float,
) -> None:
    """The JUnit case, the coverage line and the last line naming what the hunt left; exit as
    `test`."""
    from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
    from zkjepsen.report.junit import publish
    from zkjepsen.reproduce.hunt_finding import hunt_case, hunt_properties, hunt_verdict
    from zkjepsen.store import RunDir

    props = hunt_properties(result, strategy, seed, budget_s)
    case = hunt_case(result, suite_name(base), props, written)
    publish(junit_xml, [case], "zkjepsen hunt")
    if result.lease_splits and not result.found:
        said = result.lease_splits
        say(f"  a lease's or a fault's nature, not a defect: run {said['run']} ({said['words']})")
    left = [RunDir(result.folder).hunt_log] + (written.paths() if written else [])
    if result.picture is not None:
        left.append(result.picture)
    say(
        result.coverage_line()
        + (f"; {written.confirmed}" if written is not None else "")
        + f"; the hunt's folder {result.folder} keeps every run; "
        + ", ".join(str(p) for p in left)
    )
    verdict = hunt_verdict(result)
    raise SystemExit({True: EXIT_VALID, False: EXIT_INVALID}.get(verdict, EXIT_UNKNOWN))


def analyze_hunt(folder: Path) -> None:
    """`zkjepsen analyze <hunt folder>`: what the hunt did, from its hunt.jsonl and finding.json;
    exit with the hunt's verdict (`zkjepsen analyze <run folder>` re-checks one of its runs)."""
    from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
    from zkjepsen.run.hunt_folder import HuntFolder

    h = HuntFolder.load(folder)
    say(f"hunt folder {folder}: {len(h.lines)} runs")
    for line in h.summary():
        say(line)
    say("each run's folder is an ordinary run: `zkjepsen analyze RUN_FOLDER` re-checks it")
    verdict = h.verdict()
    raise SystemExit({True: EXIT_VALID, False: EXIT_INVALID}.get(verdict, EXIT_UNKNOWN))
