"""`zkjepsen gate`: a CI gate for a lock (run/gate.py): a few triggered scenarios at once, each
stopping at the first violation or at the power target; one line each and a summary.
Exit 0 valid, 1 invalid, 2 unknown, 254 bad input (docs/ci.md)."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.text import Text

from zkjepsen.cli.display import console, verdict_word
from zkjepsen.cli.engines import cluster_option, connect_cluster
from zkjepsen.cli.options import STORE_PATH, junit_option, parse_duration, parse_params, rate
from zkjepsen.cli.versions import service_options, service_tables


def _row_text(row) -> Text:
    word, style = verdict_word(row.valid)
    return Text.assemble(f"  {row.scenario:<13}", (f"{word:<8}", style), f" {row.line}")


@click.command("gate")
@click.option("--recipe", default=None, help="Lock recipe or package.module:Name (or exec:PATH).")
@click.option("--client-cmd", default=None, metavar="CMD", help="Your program under test.")
@click.option("--client-dir", default=None, metavar="DIR", help="Its directory (read-only).")
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
@click.option("--seed", type=int, default=None)
@click.option("--image", default=None, metavar="NAME")
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@junit_option
@service_options("gate")
def gate_command(
    recipe,
    client_cmd,
    client_dir,
    workload,
    params,
    scenarios,
    time_limit,
    until_power,
    parallel,
    cluster,
    run_all,
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
    check_root(store_root)
    names = scenario_names(scenarios)
    settings = {
        k: v
        for k, v in {
            "recipe": recipe,
            "client_cmd": client_cmd,
            "client_dir": client_dir,
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
    dask = connect_cluster(cluster, None, parallel or 1)  # before anything is created
    if dask is None:  # no engine is 255 here as for `test`, not three unknown rows
        from zkjepsen.cli.engines import prepare

        prepare(None, specs[0].image, specs=(specs[0],))
    target = f"{100 * specs[0].until_power:g} %"
    console.print(
        f"gate: {specs[0].recipe} under {', '.join(names)}; each stops at the first violation "
        f"or once its per-fault violation rate is bounded below {target} "
        f"(at most {specs[0].time_limit_s:g}s)"
    )
    try:
        where = Path(store_root) if store_root else None
        rows = run_gate(specs, names, parallel or 3, where, cluster=dask, run_all=run_all)
    finally:
        if dask is not None:
            dask.close()
    for row in rows:
        console.print(_row_text(row))
    publish(junit_xml, gate_cases(rows), "zkjepsen gate")
    overall = verdict(rows)
    word, style = verdict_word(overall)
    bad = [r for r in rows if r.valid is not True]
    evidence = "; ".join(f"{r.scenario}: {r.store_dir}" for r in bad if r.store_dir)
    console.print(
        Text(word, style=style),
        f"{len(rows) - len(bad)}/{len(rows)} scenarios valid, "
        f"{time.monotonic() - started:.0f}s" + (f"; evidence: {evidence}" if evidence else ""),
    )
    from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID

    raise SystemExit({True: EXIT_VALID, False: EXIT_INVALID}.get(overall, EXIT_UNKNOWN))
