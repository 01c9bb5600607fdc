"""`zkjepsen gate`: a CI gate for a lock (run/gate.py): a few triggered scenarios at once, each
stopping at the first violation or at the power target; one line each and a summary.
Exit 0 valid, 1 invalid, 2 unknown, 254 bad input (docs/ci.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from zkjepsen.cli.display import console, verdict_word
from zkjepsen.cli.engines import cluster_option, connect_cluster
from zkjepsen.cli.options import (
    STORE_PATH,
    junit_option,
    parse_duration,
    parse_params,
    positive_duration,
    rate,
)
from zkjepsen.cli.versions import service_options, service_tables


def _row_text(row) -> Text:
    word, style = verdict_word(row.valid)
    return Text.assemble(f"  {row.scenario:<13}", (f"{word:<8}", style), f" {row.line}")


def hunt_setup(settings: dict, service_opts: dict) -> tuple[Any, Any]:
    """`--hunt`: the hunt's base spec (the gate's target over the hunt's short defaults, runs of
    15 s) and its menu, checked before anything is created (an empty menu is bad input)."""
    from zkjepsen.cli.hunt import hunt_base
    from zkjepsen.run.hunt import menu

    keys = ("recipe", "client_cmd", "client_dir", "backend", "workload", "image")
    given = {k: settings.get(k) for k in keys}
    base = hunt_base(given, 15.0, None, settings["params"], service_tables("gate", service_opts))
    return base, menu(base)


def gate_hunt(
    hunting: tuple[Any, Any],
    budget_s: float,
    elapsed_s: float,
    rows: list,
    seed: int | None,
    store_root: Any,
    parallel: int | None,
    dask: Any,
) -> tuple[Any, list]:
    """The hunt after the scenarios, for what is left of the budget: (its verdict or None when
    it did not run, its one JUnit case). What it finds is confirmed and its entry written, not
    shrunk (`zkjepsen shrink` on the run's folder does that)."""
    from zkjepsen.cli.hunt import run_hunt, say, suite_name
    from zkjepsen.report.junit import Case
    from zkjepsen.reproduce.hunt_finding import hunt_case, hunt_properties, hunt_verdict
    from zkjepsen.run.gate import hunt_left
    from zkjepsen.store import new_run_dir

    base, the_menu = hunting
    left, why = hunt_left(budget_s, elapsed_s, rows)
    if why:
        say(f"  hunt         {why}")
        props = {"budget_s": f"{budget_s:g}", "runs": "0"}
        return None, [Case(suite_name(base), "hunt", "skipped", why, why, properties=props)]
    folder = new_run_dir(f"hunt-{base.recipe}-{base.backend}", store_root).path
    say(f"  hunt         {left:.0f}s left: {len(the_menu.arms)} (moment, fault) pairs on the menu")
    unshrunk = "not shrunk in a gate (`zkjepsen shrink` on the run's folder shrinks it)"
    result, written = run_hunt(
        base, the_menu, left, "guided", seed or 0, folder, parallel or 1, dask, None, unshrunk
    )
    say("  hunt         " + result.coverage_line() + f"; {folder}")
    if result.found:
        say(f"  hunt         shrink it: zkjepsen shrink {result.found['folder']}")
    props = hunt_properties(result, "guided", seed or 0, left)
    return hunt_verdict(result), [hunt_case(result, suite_name(base), props, written)]


@click.command("gate")
@click.option("--recipe", default=None, help="Lock recipe or package.module:Name (or exec:PATH).")
@click.option("--client-cmd", default=None, metavar="CMD", help="Your program under test.")
@click.option("--client-dir", default=None, metavar="DIR", help="Its directory (read-only).")
@click.option(
    "--backend",
    default=None,
    help="The servers: zookeeper, etcd, redis... (`zkjepsen list backends`); default: the "
    "recipe's own (a --client-cmd program: zookeeper).",
)
@click.option("--workload", default=None, help="lock (default) or election.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Workload parameter.")
@click.option(
    "--scenarios",
    default=None,
    metavar="A,B",
    help="Which of client-pause, client-cut, leader-kill (default: all).",
)
@click.option("--time-limit", default="60s", show_default=True, help="Cap per scenario.")
@click.option(
    "--until-power",
    default="0.10",
    show_default=True,
    metavar="RATE",
    help="Stop a scenario once the bound on its per-fault violation rate is below RATE.",
)
@click.option(
    "--parallel",
    type=click.IntRange(1, 16),
    default=None,
    help="Scenarios at once on this machine [default: 3].",
)
@cluster_option
@click.option(
    "--run-all",
    is_flag=True,
    help="Run every scenario to its own end, even after one has failed (default: the first "
    "failure ends the others' main phases).",
)
@click.option(
    "--hunt",
    "hunt_budget",
    default=None,
    metavar="BUDGET",
    help="After the scenarios, hunt (`zkjepsen hunt`) for what is left of BUDGET, e.g. 10m: "
    "one more JUnit case, its coverage as properties.",
)
@click.option("--seed", type=int, default=None)
@click.option("--image", default=None, metavar="NAME")
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@junit_option
@service_options("gate")
def gate_command(
    recipe,
    client_cmd,
    client_dir,
    backend,
    workload,
    params,
    scenarios,
    time_limit,
    until_power,
    parallel,
    cluster,
    run_all,
    hunt_budget,
    seed,
    image,
    store_root,
    junit_xml,
    **service_opts,
) -> None:
    """Gate a lock in CI: client pause, client cut and leader kill, triggered on acquires."""
    from zkjepsen.report.junit import publish
    from zkjepsen.run.gate import gate_cases, gate_specs, run_gate, scenario_names, verdict
    from zkjepsen.store import check_root

    started = time.monotonic()
    hunt_s = positive_duration(hunt_budget, "--hunt") if hunt_budget is not None else None
    check_root(store_root)
    names = scenario_names(scenarios)
    settings = {
        k: v
        for k, v in {
            "recipe": recipe,
            "client_cmd": client_cmd,
            "client_dir": client_dir,
            "backend": backend,  # checked by validate_spec below, before any container
            "workload": workload,
            "seed": seed,
            "image": image,
        }.items()
        if v is not None
    }
    settings["time_limit_s"] = parse_duration(time_limit, "--time-limit")
    settings["params"] = parse_params(params)
    settings.update(service_tables("gate", service_opts))  # {"zookeeper": {"fsync": "relaxed"}}
    specs = gate_specs(settings, names, rate(until_power, "--until-power"))
    from zkjepsen.run.resolve import validate_spec

    for spec in specs:
        validate_spec(spec)  # every name checked before the first container
    hunting = hunt_setup(settings, service_opts) if hunt_s is not None else None
    dask = connect_cluster(cluster, None, parallel or 1)  # before anything is created
    if dask is None:  # no engine is 255 here as for `test`, not three unknown rows
        from zkjepsen.cli.engines import prepare

        prepare(None, specs[0].image, specs=(specs[0],))
    target = f"{100 * specs[0].until_power:g} %"
    console.print(
        f"gate: {specs[0].recipe} on {specs[0].backend} under {', '.join(names)}; each stops "
        f"at the first violation or once its per-fault violation rate is bounded below {target} "
        f"(at most {specs[0].time_limit_s:g}s)"
        + (f"; then a hunt for what is left of {hunt_s:g}s" if hunt_s is not None else "")
    )
    try:
        where = Path(store_root) if store_root else None
        rows = run_gate(specs, names, parallel or 3, where, cluster=dask, run_all=run_all)
        for row in rows:
            console.print(_row_text(row))
        hunted: Any = None
        hunt_cases: list = []
        if hunting is not None and hunt_s is not None:
            hunted, hunt_cases = gate_hunt(
                hunting, hunt_s, time.monotonic() - started, rows, seed, store_root, parallel, dask
            )
    finally:
        if dask is not None:
            dask.close()
    publish(junit_xml, gate_cases(rows) + hunt_cases, "zkjepsen gate")
    overall = verdict(rows, hunted)
    word, style = verdict_word(overall)
    bad = [r for r in rows if r.valid is not True]
    evidence = "; ".join(f"{r.scenario}: {r.store_dir}" for r in bad if r.store_dir)
    hunt_said = "" if hunted is None else f", the hunt {verdict_word(hunted)[0].lower()}"
    console.print(
        Text(word, style=style),
        f"{len(rows) - len(bad)}/{len(rows)} scenarios valid{hunt_said}, "
        f"{time.monotonic() - started:.0f}s" + (f"; evidence: {evidence}" if evidence else ""),
    )
    from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID

    raise SystemExit({True: EXIT_VALID, False: EXIT_INVALID}.get(overall, EXIT_UNKNOWN))
