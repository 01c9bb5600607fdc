"""One self-contained HTML file for a linearizability failure, in Porcupine's style.

One lane per process; each op is a bar from its invocation to its completion (a crashed op runs
to the right edge, hatched). Time is drawn by rank (every distinct call/return time is one step)
so dense and sparse stretches are equally readable. Ops in the longest linearizable prefix are
green and numbered in linearization order; the op that cannot be placed after it is red; the rest
grey. Below the lanes: the partial linearization with the model state after each op. No scripts,
fonts or images are loaded from anywhere: the file works offline and as a CI artifact.
"""

from __future__ import annotations

import bisect
import html
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from zkjepsen.checker import Result
from zkjepsen.checker.linear import Linearizable, Model, Outcome
from zkjepsen.history import FaultWindow, fault_windows

LANE_H, BAR_H, LEFT, WIDTH = 30, 20, 110, 1100
_CSS = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px}.lanes{position:relative;border:1px solid #ccc;background:#fafafa;
overflow-x:auto}.lane{position:absolute;left:0;font:12px monospace;color:#555}
.op{position:absolute;height:BAR_Hpx;border-radius:3px;font:11px monospace;overflow:hidden;
white-space:nowrap;padding:0 3px;box-sizing:border-box;border:1px solid #999;background:#ddd}
.op.lin{background:#b8e6b8;border-color:#3a3}.op.bad{background:#f5a3a3;border:2px solid #c00}
.op.fault{background:#fde7b0;border-color:#c90;opacity:.8}
.op.crashed{background-image:repeating-linear-gradient(45deg,transparent 0 4px,#0001 4px 8px)}
table{border-collapse:collapse;margin-top:12px}td,th{border:1px solid #ddd;padding:2px 6px;
font:12px monospace;text-align:left}tr.bad td{background:#fdd}
.legend span{display:inline-block;padding:0 6px;margin-right:8px;border:1px solid #999}
""".replace("BAR_H", str(BAR_H))


def render(
    outcome: Outcome,
    model: Model,
    title: str = "Linearizability counterexample",
    partition: Any = None,
    faults: Iterable[FaultWindow] = (),
) -> str:
    """The HTML text for one failing partition's outcome; `faults` (history.fault_windows)
    are drawn in a "nemesis" lane on the same time axis."""
    ops = outcome.ops
    times = sorted({op.start for op in ops} | {op.end for op in ops if op.end is not None})
    span = max(len(times), 1)
    x = lambda r: LEFT + (WIDTH - LEFT - 10) * r / span  # noqa: E731 - a tiny local scale

    procs = sorted({op.call.invoke.process for op in ops}, key=lambda p: (str(type(p)), p))
    parts = _op_bars(outcome, procs, times, x)
    nem_top = len(procs) * LANE_H
    fault_bars = _fault_bars(faults, times, x, nem_top)
    shown = len(fault_bars)
    parts += fault_bars
    if shown:
        parts.append(
            f'<div class="lane" style="top:{nem_top + 6}px;width:{LEFT}px">&nbsp;nemesis</div>'
        )
    height = len(procs) * LANE_H + (LANE_H + 12 if shown else 0) + 8
    rows = _order_rows(outcome, model)
    stuck_text = ops[outcome.stuck].action.text if outcome.stuck is not None else "?"
    part = "" if partition is None else f" · partition {html.escape(repr(partition))}"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Model <b>{html.escape(model.name)}</b>{part} · {len(ops)} ops · {outcome.configs} configurations
explored. The longest linearizable prefix has <b>{len(outcome.best)}</b> ops; then
<b>{html.escape(stuck_text)}</b> cannot be placed.</p>
<p class="legend"><span style="background:#b8e6b8">linearized (numbered in order)</span>
<span style="background:#f5a3a3">cannot be placed</span><span>not reached</span>
<span style="background-image:repeating-linear-gradient(45deg,transparent 0 4px,#0002 4px 8px)">
crashed (unknown outcome)</span></p>
<div class="lanes" style="height:{height}px;width:{WIDTH}px">{"".join(parts)}</div>
<h2 style="font-size:15px">Partial linearization</h2>
<table><tr><th>#</th><th>op</th><th>process</th><th>state after</th></tr>{"".join(rows)}</table>
</body></html>
"""


def _op_bars(
    outcome: Outcome, procs: list[Any], times: list[Any], x: Callable[[float], float]
) -> list[str]:
    """One lane per process, one bar per op: numbered when linearized, red where stuck."""
    ops = outcome.ops
    order = {i: n for n, i in enumerate(outcome.best, 1)}
    rank = {t: r for r, t in enumerate(times)}
    lane = {p: k for k, p in enumerate(procs)}
    parts = []
    for p in procs:
        parts.append(
            f'<div class="lane" style="top:{lane[p] * LANE_H + 6}px;width:{LEFT}px">'
            f"&nbsp;process {html.escape(str(p))}</div>"
        )
    for i, op in enumerate(ops):
        x0 = x(rank[op.start])
        x1 = x(rank[op.end] + 0.9) if op.end is not None else WIDTH - 6
        cls = ["op"]
        if i in order:
            cls.append("lin")
        if i == outcome.stuck:
            cls.append("bad")
        if op.end is None:
            cls.append("crashed")
        label = (f"{order[i]}. " if i in order else "") + op.action.text
        inv = op.call.invoke
        tip = (
            f"{op.action.text} | process {inv.process} | {op.call.status} | "
            f"invoke index {inv.index} time {op.start} | end {op.end}"
        )
        parts.append(
            f'<div class="{" ".join(cls)}" title="{html.escape(tip)}" '
            f'style="top:{lane[inv.process] * LANE_H + 4}px;left:{x0:.1f}px;'
            f'width:{max(x1 - x0, 4):.1f}px">{html.escape(label)}</div>'
        )
    return parts


def _fault_bars(
    faults: Iterable[FaultWindow], times: list[Any], x: Callable[[float], float], top: int
) -> list[str]:
    """The bars of the fault windows within the ops' span, for the nemesis lane at `top`."""
    parts: list[str] = []
    for w in faults:
        if not times or w.start > times[-1] or (w.end is not None and w.end < times[0]):
            continue  # outside the ops' span
        lo = bisect.bisect_left(times, w.start)
        hi = len(times) if w.end is None else bisect.bisect_right(times, w.end)
        x0, x1 = x(lo), x(max(hi, lo + 0.3))
        tip = f"{w.f} {w.targets!r} from {w.start} to {w.end}"
        parts.append(
            f'<div class="op fault" title="{html.escape(tip)}" style="top:'
            f'{top + 4 + (len(parts) % 2) * 10}px;left:{x0:.1f}px;width:{x1 - x0:.1f}px">'
            f"{html.escape(w.f)}</div>"
        )
    return parts


def _order_rows(outcome: Outcome, model: Model) -> list[str]:
    """The partial linearization's table rows: each op placed and the state after it, then
    the op that cannot be placed."""
    ops = outcome.ops
    rows = [
        f"<tr><td>0</td><td>(initial)</td><td></td>"
        f"<td>{html.escape(model.describe_state(model.init()))}</td></tr>"
    ]
    for n, (i, s) in enumerate(zip(outcome.best, outcome.states, strict=True), 1):
        op = ops[i]
        rows.append(
            f"<tr><td>{n}</td><td>{html.escape(op.action.text)}</td>"
            f"<td>{html.escape(str(op.call.invoke.process))}</td>"
            f"<td>{html.escape(model.describe_state(s))}</td></tr>"
        )
    if outcome.stuck is not None:
        op = ops[outcome.stuck]
        rows.append(
            f'<tr class="bad"><td>✗</td><td>{html.escape(op.action.text)}</td>'
            f"<td>{html.escape(str(op.call.invoke.process))}</td>"
            "<td>cannot be placed here (illegal in every reachable order)</td></tr>"
        )
    return rows


def write(path: str | os.PathLike[str], outcome: Outcome, model: Model, **kw: Any) -> Path:
    """Write the HTML atomically (temp file, then rename): never a half-written report."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(outcome, model, **kw), encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_failures(
    result: Result,
    checkers: Mapping[str, Any],
    store_dir: str | os.PathLike[str],
    history: Any = None,
) -> list[Path]:
    """After a run's checks: one counterexample HTML per refuted linearizability checker, in
    `store_dir`: `counterexample.html`, or `counterexample-<name>.html` when several could
    fail. `result` is the composed result (its parts carry each refutation's search outcome);
    `checkers` (name -> checker, as the workload returned them) give the models."""

    lin = {n: c for n, c in checkers.items() if isinstance(c, Linearizable)}
    faults = fault_windows(history) if history is not None else []
    out = []
    for name, c in lin.items():
        part = result.parts.get(name)
        if part is None or part.outcome is None or part.outcome.valid:
            continue
        outcome = part.outcome
        fname = "counterexample.html" if len(lin) == 1 else f"counterexample-{name}.html"
        out.append(
            write(
                Path(store_dir) / fname,
                outcome,
                c.model,
                title=f"{name}: not linearizable",
                partition=part.details.get("partition"),
                faults=faults,
            )
        )
    return out
