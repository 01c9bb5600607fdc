"""`zkjepsen list` and `zkjepsen matrix`: what can be tested, and recipe x fault verdict tables."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from zkjepsen.errors import BadInput
from zkjepsen.runner import run_test
from zkjepsen.spec import TestSpec

console = Console(stderr=True)


@click.command("list")
@click.argument("what", type=click.Choice(["recipes", "workloads", "nemeses"]))
def list_command(what: str) -> None:
    """List recipes, workloads or nemeses with one-line descriptions."""
    if what == "recipes":
        from zkjepsen.recipes import RECIPES

        rows = [(n, f"{r.language:<6} {r.source:<7}  {r.description}  [expect: {r.flaw}]")
                for n, r in sorted(RECIPES.items())]
        rows.append(("exec:PATH", "any    user     your own program, speaking the client wire "
                     "protocol (docs/client-protocol.md); or --client-cmd CMD"))
    elif what == "workloads":
        from zkjepsen.workloads import WORKLOADS, get_workload

        rows = [(n, get_workload(n).description) for n in sorted(WORKLOADS)]
    else:
        from zkjepsen.nemesis.faults import NEMESES

        rows = sorted(NEMESES.items())
    width = max(len(n) for n, _ in rows)
    for name, desc in rows:
        click.echo(f"{name.ljust(width)}  {desc}")


def _split(text: str, what: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise BadInput(f"--{what} needs at least one name")
    return items


def cell_summary(runs: list[dict]) -> dict:
    """Counts for one recipe x fault cell: invalid runs, unknown runs, and runs with at least
    one belief / effect overlap violation."""
    from zkjepsen.checker import as_result

    kinds = [{v.kind for _, v in as_result(r["results"]).named_violations()} for r in runs]
    from zkjepsen.report.stats import rate_text

    invalid = sum(r["valid"] is False for r in runs)
    return {
        "runs": len(runs),
        "invalid": invalid,
        "rate": rate_text(invalid, len(runs)),  # with its 95 % Wilson interval
        "unknown": sum(r["valid"] not in (True, False) for r in runs),
        "belief": sum("belief" in k for k in kinds),
        "effect": sum("effect" in k for k in kinds),
        "stores": [r["store"] for r in runs],
    }


def markdown_table(cells: dict, recipes: list[str], nemeses: list[str], header: str) -> str:
    lines = [header, "", "| recipe | " + " | ".join(nemeses) + " |",
             "|---|" + "---|" * len(nemeses)]
    for rc in recipes:
        row = []
        for nm in nemeses:
            c = cells.get(f"{rc}|{nm}")
            if not c:
                row.append("-")
                continue
            text = f"{_rate(c)} invalid"
            if c["unknown"]:
                text += f", {c['unknown']} unknown"
            text += f" (belief {c['belief']}, effect {c['effect']})"
            row.append(text)
        lines.append(f"| {rc} | " + " | ".join(row) + " |")
    lines += ["", "Each cell: runs judged invalid / runs, the rate and its 95 % Wilson "
              "interval (how little a handful of runs says about the true rate); in "
              "parentheses, runs with at least one "
              "belief overlap (two clients believed they held the lock) and with at least one "
              "effect overlap (the protected resource accepted writes out of lock order: "
              "atomicity broken). belief > 0 with effect = 0 means fencing held."]
    return "\n".join(lines) + "\n"


def _rate(cell: dict) -> str:
    from zkjepsen.report.stats import rate_text

    return rate_text(cell["invalid"], cell["runs"])


@click.command("matrix")
@click.option("--recipes", required=True, help="Comma-separated recipe names.")
@click.option("--nemeses", required=True, help="Comma-separated nemesis names (one per column).")
@click.option("--runs", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--workload", default="lock", show_default=True)
@click.option("--time-limit", type=float, default=30.0, show_default=True)
@click.option("--nodes", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--clients", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--session-timeout", type=float, default=4.0, show_default=True)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=Path("store/matrix.md"),
              show_default=True, help="Where to write the Markdown table (JSON beside it).")
@click.option("--store", "store_root", type=click.Path(path_type=Path), default=None)
def matrix_command(recipes, nemeses, runs, workload, time_limit, nodes, clients,
                   session_timeout, params, seed, out, store_root) -> None:
    """Run every recipe x nemesis cell K times; print and write the verdict table."""
    from zkjepsen.cli.options import scalar as _scalar

    recipe_list, nemesis_list = _split(recipes, "recipes"), _split(nemeses, "nemeses")
    extra = {}
    for p in params:
        k, sep, v = p.partition("=")
        if not sep:
            raise BadInput(f"--param {p!r} is not KEY=VALUE")
        extra[k] = _scalar(v)
    specs = [TestSpec(recipe=rc, workload=workload, nemesis=nm.split("+"), nodes=nodes,
                      clients=clients, time_limit_s=time_limit, session_timeout_s=session_timeout,
                      seed=seed + i, params=extra, recovery_s=5.0)
             for rc in recipe_list for nm in nemesis_list for i in range(runs)]
    from zkjepsen.spec import validate_spec

    for s in specs[:: runs]:
        validate_spec(s)  # every name checked before the first cluster starts
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results: dict[str, list[dict]] = {}
    for i, spec in enumerate(specs, 1):
        key = f"{spec.recipe}|{'+'.join(spec.nemesis)}"
        console.print(f"[{i}/{len(specs)}] {spec.recipe} x {'+'.join(spec.nemesis)} "
                      f"seed {spec.seed}")
        run = run_test(spec, store_root)
        results.setdefault(key, []).append({"valid": run.valid, "results": run.results,
                                            "store": str(run.store_dir)})
        console.print(f"    -> {run.valid}  ({run.store_dir})")
    cells = {k: cell_summary(v) for k, v in results.items()}
    header = (f"Findings matrix: workload `{workload}`, {nodes} servers, {clients} clients, "
              f"{time_limit:g} s per run, session timeout {session_timeout:g} s, params {extra}, "
              f"{runs} runs per cell; run {started} on {platform.node()} "
              f"({platform.machine()}, {__import__('os').cpu_count()} cores).")
    md = markdown_table(cells, recipe_list, nemesis_list, header)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(md)
    out.with_suffix(".json").write_text(json.dumps(cells, indent=1))
    table = Table(title="recipe x fault")
    table.add_column("recipe")
    for nm in nemesis_list:
        table.add_column(nm)
    for rc in recipe_list:
        table.add_row(rc, *[(f"{_rate(c)} invalid (belief {c['belief']}, effect "
                            f"{c['effect']})" if (c := cells.get(f"{rc}|{nm}")) else "-")
                           for nm in nemesis_list])
    Console().print(table)
    click.echo(f"written {out}")
