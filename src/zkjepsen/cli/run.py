"""`zkjepsen test` and `zkjepsen analyze`: one run end to end, or re-check a stored one."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from zkjepsen.cli.config import config_engine, read_config, with_config
from zkjepsen.cli.display import LiveDisplay, console, verdict_word
from zkjepsen.cli.options import (
    STORE_PATH,
    junit_option,
    not_empty,
    parse_duration,
    parse_params,
    rate,
)
from zkjepsen.cli.versions import service_options, service_tables
from zkjepsen.report.summary import power_line, summarise
from zkjepsen.run.outcome import RunResult
from zkjepsen.run.resolve import spec_from_json
from zkjepsen.workloads import WORKLOADS


def print_verdict(run: RunResult) -> None:
    v = run.valid
    word, style = verdict_word(v)
    # A VALID reads with its power: how many faults landed where the lock could break.
    power = f"  {power_line(run.results)}" if v is True and power_line(run.results) else ""
    console.print(
        Text(f"{word}", style=style), f"{power}{versions_text(run.spec)}  store: {run.store_dir}"
    )
    from zkjepsen.checker import as_result

    whole = as_result(run.results)
    for name, res in whole.parts.items():
        # The power part is a measure, not a check: its figures say it all ("power: True" read
        # as if power were a property that held).
        said = "" if name == "power" else f"{verdict_word(res.valid)[0]}  "
        console.print(f"  {name}: {said}{summarise(res)}".rstrip())
    said_by_part = any(p.reason == whole.reason for p in whole.parts.values())
    if whole.valid is not True and whole.reason and not said_by_part:  # no checker said it
        console.print(f"  {whole.reason}", markup=False, highlight=False)
    early = run.results.get("early_stop") if isinstance(run.results, dict) else None
    if early and early.get("stopped_early"):
        console.print(f"  stopped early, {early['after_main_start_s']:g}s into the main phase: "
                      f"{early['why']}")  # fmt: skip
    for line in next_steps(run):
        console.print(line, markup=False, highlight=False)


def next_steps(run: RunResult) -> list[str]:
    """What to run next on an INVALID run, as Hypothesis prints the failing example: does it
    recur (replay its fault schedule), and what is the least of it that still breaks (shrink)."""
    if run.valid is not False or (isinstance(run.results, dict) and run.results.get("error")):
        return []
    import shlex

    where = shlex.quote(str(run.store_dir))
    return [
        "  next: does it recur?   zkjepsen replay " + where,
        "        the least of it: zkjepsen shrink " + where,
    ]


def versions_text(spec) -> str:
    """What the servers run, in their service's words (`  ZooKeeper 3.4 (clients: bookworm)`);
    '' when the service says nothing."""
    said = spec.service.describe() if getattr(spec, "service", None) is not None else ""
    return f"  {said}" if said else ""


@click.command("test")
@click.option(
    "--recipe", default=None, help="Lock recipe (`zkjepsen list recipes`) or package.module:Name."
)
@click.option(
    "--workload",
    default=None,
    help=f"{', '.join(WORKLOADS)} (`zkjepsen list workloads`).",
)
@click.option("--nemesis", default=None, help="Comma-separated faults (`zkjepsen list nemeses`).")
@click.option(
    "--backend",
    default=None,
    help="zookeeper, etcd, redis, redis-sentinel, redlock, postgres, mariadb, memcached "
    "(`zkjepsen list backends`); "
    "default: the recipe's own.",
)
@click.option("--nodes", type=click.IntRange(1, 9), default=None)
@click.option(
    "--clients",
    type=click.IntRange(1, 100),
    default=None,
    help="Client processes (default 10; 5 for pg-for-update, whose polling starves waiters).",
)
@click.option("--time-limit", default=None, help="Main phase length, e.g. 60 or 60s.")
@click.option(
    "--interval",
    default=None,
    help="Mean quiet time between faults, e.g. 5s (each gap is drawn from 0 to twice it; "
    "default 10s).",
)
@click.option(
    "--fault-trigger",
    default=None,
    metavar="WHEN",
    help="acquired: each fault fires on whoever just acquired, re-armed until it lands in a "
    "hold; acquired-each: the same with a trigger per client, the clients' faults side by "
    "side; time: at its scheduled time (default: acquired for faults aimed at the holder, "
    "time for the others; docs/faults.md, Faults fired by events).",
)
@click.option("--session-timeout", default=None, help="Client session timeout, e.g. 4s.")
@click.option("--seed", type=int, default=None)
@click.option("--image", default=None, metavar="NAME")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Workload parameter (repeatable), e.g. resource=fenced.",
)
@click.option(
    "--config",
    "config",
    type=click.Path(path_type=Path),
    default=None,
    help="A TOML file of test settings; command-line options win.",
)
@click.option("--store", "store_root", type=STORE_PATH, default=None)
@click.option(
    "--client-cmd",
    default=None,
    metavar="CMD",
    help="Your own program under test, speaking the client wire protocol "
    "(docs/client-protocol.md); run by /bin/sh -c in every client container.",
)
@click.option(
    "--client-dir",
    default=None,
    metavar="DIR",
    help="Directory mounted read-only at /opt/zkjepsen/program, the program's cwd "
    "(default: the current directory; for --recipe exec:PATH, PATH's directory).",
)
@click.option(
    "--client-mode",
    type=click.Choice(["protocol", "in-process"]),
    default=None,
    help="Python recipes: through the Python driver (default) or in-process.",
)
@click.option(
    "--engine",
    default=None,
    callback=not_empty,
    metavar="ENGINE",
    help="Docker engine for the run: a docker context name or a DOCKER_HOST URL.",
)
@click.option(
    "--stop-on-violation",
    is_flag=True,
    default=None,
    help="End the main phase at the first violation the online checker confirms, then heal, "
    "tear down and check as usual.",
)
@click.option(
    "--until-power",
    default=None,
    metavar="RATE",
    help="Keep faulting until the upper bound on the per-fault violation rate is below RATE "
    "(0 < RATE < 1, e.g. 0.05), or the time limit.",
)
@service_options("test")
@junit_option
def test_command(
    recipe,
    workload,
    nemesis,
    backend,
    nodes,
    clients,
    time_limit,
    interval,
    fault_trigger,
    session_timeout,
    seed,
    image,
    params,
    config,
    store_root,
    client_cmd,
    client_dir,
    client_mode,
    engine,
    stop_on_violation,
    until_power,
    junit_xml,
    **service_opts,
) -> None:
    """Run one test: servers up (the recipe's service, or --backend), clients, faults, heal,
    final reads, teardown, check, report."""
    from zkjepsen.store import check_root

    toml = read_config(config) if config else {}
    check_root(store_root)  # before an image is built on --engine, too
    cli_values = {
        "recipe": recipe,
        "workload": workload,
        "backend": backend,
        "nodes": nodes,
        "clients": clients,
        "seed": seed,
        "image": image,
        "client_cmd": client_cmd,
        "client_dir": client_dir,
        "client_mode": client_mode,
        **service_tables("test", service_opts),  # {"zookeeper": {"version": "3.9"}}
        "stop_on_violation": stop_on_violation,
        "until_power": rate(until_power, "--until-power") if until_power is not None else None,
    }
    settings = {k: v for k, v in cli_values.items() if v is not None}
    if nemesis is not None:
        settings["nemesis"] = nemesis  # split and checked by TestSpec: "" is refused there
    if time_limit is not None:
        settings["time_limit_s"] = parse_duration(time_limit, "--time-limit")
    if interval is not None:
        settings["interval_s"] = parse_duration(interval, "--interval")
    if fault_trigger is not None:
        settings["fault_trigger"] = fault_trigger  # checked by TestSpec
    if session_timeout is not None:
        settings["session_timeout_s"] = parse_duration(session_timeout, "--session-timeout")
    if params:
        settings["params"] = parse_params(params)
    spec = spec_from_json(with_config(toml, settings, config))
    if spec.fault_trigger is None:  # recorded in test.json, so a rerun fires the same way
        from zkjepsen.run.resolve import default_fault_trigger

        spec.fault_trigger = default_fault_trigger(spec)
    where = None
    if engine is None and toml.get("engine") is not None:
        engine = config_engine(toml["engine"], config)  # used, not only recorded
    if engine:
        from zkjepsen.cli.engines import prepare
        from zkjepsen.run.resolve import validate_spec

        validate_spec(spec)  # bad names before an image is built anywhere
        where = prepare(engine, spec.image)
    from zkjepsen.run.runner import run_test  # the runner loads docker: only `test` runs it

    run = run_test(spec, store_root, display=LiveDisplay(), engine=where)
    print_verdict(run)
    from zkjepsen.report.junit import case_of, publish

    publish(junit_xml, [case_of(run, spec.test_name)], "zkjepsen test")
    raise SystemExit(run.exit_code)


@click.command("analyze")
@click.argument("store_dir", type=click.Path(path_type=Path))
def analyze_command(store_dir: Path) -> None:
    """Re-run the checkers on a stored history (no cluster needed). An interrupted run, which
    has no history.jsonl yet, is analyzed from its clients' own files."""
    from zkjepsen.run.stored import StoredRun
    from zkjepsen.run.stored_checks import check_run_folder

    check_run_folder(store_dir)  # a symlink loop is one sentence, before resolve() meets it
    from zkjepsen.run.hunt_folder import is_hunt_folder

    if is_hunt_folder(store_dir):  # a hunt's folder: what the hunt did (cli/hunt.py)
        from zkjepsen.cli.hunt import analyze_hunt

        analyze_hunt(store_dir)
    stored = StoredRun.load(store_dir.resolve())
    history = stored.history()
    from zkjepsen.run.analysis import check_run  # (the reports: only `analyze` uses them)

    result = check_run(history, stored.spec, stored.store_dir)
    run = RunResult(stored.spec, stored.store_dir, result.valid, result.to_json(), {})
    print_verdict(run)
    from zkjepsen.run.analysis import finish_report

    written = finish_report(run, history)  # what an interrupted run did not get to write
    if written:
        console.print(f"written {', '.join(written)} into {stored.store_dir}")
    if stored.results is not None:
        before = stored.results.get("valid")
        same = before == result.valid
        console.print(
            f"stored verdict {before}: {'reproduced' if same else 'DIFFERS from this analysis'}"
        )
    raise SystemExit(run.exit_code)
