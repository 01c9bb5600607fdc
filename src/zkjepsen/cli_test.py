"""`zkjepsen test` and `zkjepsen analyze`: one run end to end, or re-check a stored one."""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path
from typing import Any

import click
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from zkjepsen.errors import BadInput
from zkjepsen.runner import RunResult, TestSpec, check_history, run_test

console = Console(stderr=True)


def parse_duration(text: str, what: str) -> float:
    """'4s', '500ms', '2m' or a bare number of seconds."""
    t = text.strip().lower()
    try:
        for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
            if t.endswith(suffix):
                return float(t[: -len(suffix)]) * scale
        return float(t)
    except ValueError:
        raise BadInput(f"{what} {text!r} is not a duration; write e.g. 4s, 500ms or 2m") from None


class LiveDisplay:
    """Elapsed/remaining time, op counts and rates per type, active faults; tails the files the
    clients and the nemesis write (the display never talks to the cluster)."""

    def __init__(self) -> None:
        self.live: Live | None = None
        self.messages: list[str] = []
        self.counts: dict[str, int] = {}
        self.offsets: dict[Path, int] = {}
        self.active: dict[Any, str] = {}
        self.violations = 0

    def log(self, msg: str) -> None:
        self.messages = (self.messages + [msg])[-4:]
        if self.live is None:
            console.print(msg)

    def attach(self, out_dir: Path, nemesis_file: Path, t0_ns: int, spec: TestSpec) -> None:
        self.out_dir, self.nemesis_file, self.spec = out_dir, nemesis_file, spec
        self.t0 = time.monotonic()
        self.live = Live(self._render(), console=console, refresh_per_second=2,
                         get_renderable=self._render, transient=True)
        self.live.start()

    def detach(self) -> None:
        if self.live:
            self.live.stop()
            self.live = None

    def _tail(self) -> None:
        files = [*self.out_dir.glob("client-*.jsonl"), self.nemesis_file]
        for path in files:
            try:
                with path.open("rb") as f:
                    f.seek(self.offsets.get(path, 0))
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self.offsets[path] = self.offsets.get(path, 0) + end
            for line in data[:end].splitlines():
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("process") == "nemesis":
                    v = r.get("value") or {}
                    fid = v.get("fault_id") if isinstance(v, dict) else None
                    if isinstance(v, dict) and v.get("phase") == "end":
                        self.active.pop(fid, None)
                    else:
                        self.active[fid] = f"{r['f']} {v.get('targets', '') if v else ''}"
                elif r.get("type") in ("ok", "fail", "info"):
                    k = f"{r.get('f')} {r['type']}"
                    self.counts[k] = self.counts.get(k, 0) + 1

    def _render(self):
        if not hasattr(self, "t0"):
            return Text("")
        self._tail()
        elapsed = time.monotonic() - self.t0
        total = self.spec.time_limit_s + self.spec.recovery_s
        head = Text(f"{self.spec.test_name}  elapsed {elapsed:5.0f}s  remaining "
                    f"{max(0, total - elapsed):4.0f}s  faults: "
                    + (", ".join(self.active.values()) or "none active"))
        table = Table(show_header=True, box=None)
        table.add_column("op")
        table.add_column("count", justify="right")
        table.add_column("rate/s", justify="right")
        for k in sorted(self.counts):
            table.add_row(k, str(self.counts[k]), f"{self.counts[k] / max(elapsed, 1e-9):.1f}")
        return Group(head, table, Text("\n".join(self.messages), style="dim"))


def print_verdict(run: RunResult) -> None:
    v = run.valid
    word = {True: "VALID", False: "INVALID"}.get(v, "UNKNOWN")
    style = {True: "bold green", False: "bold red"}.get(v, "bold yellow")
    console.print(Text(f"{word}", style=style), f"  store: {run.store_dir}")
    for name, res in run.results.items():
        if name == "valid" or not isinstance(res, dict):
            continue
        console.print(f"  {name}: {res.get('valid')}  {summarise(res)}")


def summarise(res: dict) -> str:
    """One line per checker: how many violations, and the first one in a few words."""
    if res.get("valid") is False and isinstance(res.get("cannot_place"), dict):
        op = res["cannot_place"]  # a linearizability refutation
        return (f"{res.get('reason', 'not linearizable')}; after a linearizable prefix of "
                f"{res.get('longest_prefix_length')} ops, no order fits {op.get('op')} by "
                f"process {op.get('process')} ({op.get('status')})")
    if res.get("valid") is False and res.get("lost"):
        final = res.get("final_read") or {}
        return (f"{res['lost']} acknowledged increments lost: final read {final.get('value')}, "
                f"but {res.get('acknowledged')} adds were acknowledged")
    preferred = ["belief_overlaps", "effect_overlaps"]
    others = [k for k, v in res.items() if isinstance(v, list) and v and k not in preferred
              and res.get("valid") is not True]
    for key in preferred + others:
        items = res.get(key)
        if not items:
            continue
        count = res.get(f"{key[:-1]}_count", res.get(f"{key}_count", len(items)))
        first = items[0] if isinstance(items, list) else items
        if isinstance(first, dict) and "clients" in first:
            start, end = first.get("start"), first.get("end")
            when = f" at {start / 1e9:.2f}s-" + (f"{end / 1e9:.2f}s" if end else "end") \
                if isinstance(start, int) else ""
            faults = ", ".join(f.get("f", "?") for f in first.get("faults", [])) or "no fault"
            return (f"{count} {key.replace('_', ' ')}; first: clients {first['clients']}"
                    f"{when} during {faults}")
        return f"{count} {key.replace('_', ' ')}; first: {json.dumps(first, default=str)[:160]}"
    if res.get("valid") == "unknown":
        return str(res.get("error") or res.get("reason") or "")[:200]
    return ""


@click.command("test")
@click.option("--recipe", default=None, help="Lock recipe (`zkjepsen list recipes`) or "
              "package.module:Name.")
@click.option("--workload", default=None, help="lock, counter, register, election, queue, rwlock")
@click.option("--nemesis", default=None, help="Comma-separated faults (`zkjepsen list nemeses`).")
@click.option("--nodes", type=click.IntRange(1, 9), default=None)
@click.option("--clients", type=click.IntRange(1, 100), default=None)
@click.option("--time-limit", default=None, help="Main phase length, e.g. 60 or 60s.")
@click.option("--session-timeout", default=None, help="Client session timeout, e.g. 4s.")
@click.option("--seed", type=int, default=None)
@click.option("--image", default=None, metavar="NAME")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Workload parameter (repeatable), e.g. resource=fenced.")
@click.option("--config", "config", type=click.Path(path_type=Path), default=None,
              help="A TOML file of test settings; command-line options win.")
@click.option("--store", "store_root", type=click.Path(path_type=Path), default=None)
def test_command(recipe, workload, nemesis, nodes, clients, time_limit, session_timeout, seed,
                 image, params, config, store_root) -> None:
    """Run one test: ensemble up, faults, heal, final reads, teardown, check, report."""
    settings: dict[str, Any] = {}
    if config:
        try:
            settings = tomllib.loads(config.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise BadInput(f"cannot read config {config}: {e}") from None
    cli_values = {"recipe": recipe, "workload": workload, "nodes": nodes, "clients": clients,
                  "seed": seed, "image": image}
    settings.update({k: v for k, v in cli_values.items() if v is not None})
    if nemesis is not None:
        settings["nemesis"] = [n.strip() for n in nemesis.split(",") if n.strip()] or ["none"]
    if time_limit is not None:
        settings["time_limit_s"] = parse_duration(time_limit, "--time-limit")
    if session_timeout is not None:
        settings["session_timeout_s"] = parse_duration(session_timeout, "--session-timeout")
    if params:
        merged = dict(settings.get("params", {}))
        for p in params:
            k, sep, v = p.partition("=")
            if not sep or not k:
                raise BadInput(f"--param {p!r} is not KEY=VALUE")
            merged[k] = _scalar(v)
        settings["params"] = merged
    spec = TestSpec.from_json(settings)
    run = run_test(spec, store_root, display=LiveDisplay())
    print_verdict(run)
    raise SystemExit(run.exit_code)


def _scalar(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


@click.command("analyze")
@click.argument("store_dir", type=click.Path(path_type=Path))
def analyze_command(store_dir: Path) -> None:
    """Re-run the checkers on a stored history (no cluster needed)."""
    from zkjepsen.history import read_jsonl

    store_dir = store_dir.resolve()
    for name in ("test.json", "history.jsonl"):
        if not (store_dir / name).exists():
            raise BadInput(f"{store_dir} has no {name}; give a run directory from the store "
                           "(e.g. store/<test>/latest)")
    spec = TestSpec.from_json(json.loads((store_dir / "test.json").read_text()))
    history = read_jsonl(store_dir / "history.jsonl")
    result = check_history(history, spec, store_dir)
    stored = json.loads((store_dir / "results.json").read_text()) \
        if (store_dir / "results.json").exists() else None
    run = RunResult(spec, store_dir, result["valid"], result, {})
    print_verdict(run)
    if stored is not None:
        same = stored.get("valid") == result.get("valid")
        console.print(f"stored verdict {stored.get('valid')}: "
                      f"{'reproduced' if same else 'DIFFERS from this analysis'}")
    raise SystemExit(run.exit_code)
