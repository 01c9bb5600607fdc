"""timeline.html: one self-contained file that shows a split holder at a glance.

One lane per client. In a lane: waiting for the lock (thin grey), holding it (solid blue, from
`acquire ok` to `release invoke` — what the client believed), other ops as short bars coloured by
outcome, and the session state underneath (amber while SUSPENDED, red after LOST until the next
CONNECTED). Nemesis faults are shaded across every lane; violations are red frames over the two
clients' lanes for their window. Hover anything for its details (SVG <title>, no scripts needed);
the zoom buttons only widen the drawing.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkjepsen.backends.registry import read_service, settings_from_table
from zkjepsen.checker import Result, Violation, as_result
from zkjepsen.errors import BadInput
from zkjepsen.report.summary import power_of_results
from zkjepsen.store.regular import read_json

if TYPE_CHECKING:
    from zkjepsen.report.files import ReportFiles

LANE_H = 34
LEFT = 70
TOP = 40
OUTCOME_COLOUR = {"ok": "#2e7d32", "fail": "#9e9e9e", "info": "#ef6c00", None: "#ef6c00"}


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.1f} ms"


def _esc(x: Any) -> str:
    return html.escape(x if isinstance(x, str) else json.dumps(x, default=str))


def _collect_violations(results: Result | dict | None) -> list[tuple[str, Violation]]:
    """(checker, violation) for every violation with a time window anywhere in the (composed)
    results: what can be framed on the lanes."""
    return [
        (name, v)
        for name, v in as_result(results).named_violations()
        if v.start is not None and v.clients
    ]


class _Lanes:
    """Turns the flat history into per-client drawable spans."""

    def __init__(self, records: list[dict]) -> None:
        self.spans: dict[Any, list[tuple]] = {}  # client -> (start, end, kind, colour, title)
        self.faults: list[tuple[int, int | None, str]] = []
        self.end = max((r["time"] for r in records), default=1) or 1
        self.pending: dict[Any, dict] = {}  # process -> its invoke in flight
        self.holding: dict[Any, dict] = {}  # client -> the acquire ok (or info) it holds by
        self.session: dict[Any, tuple[int, str | None]] = {}  # client -> (since, session state)
        self.fault_open: dict[Any, dict] = {}  # fault id -> its start record
        for r in records:
            p, typ = r.get("process"), r.get("type")
            if p == "nemesis":
                self._fault(r)
                continue
            if p == "observer":  # the service's view of who holds (run/observer.py): no lane
                continue
            c = r.get("client", p)
            lane = self.spans.setdefault(c, [])
            if typ == "event":
                if r.get("f") == "session-state":
                    self._session_state(c, lane, r)
            elif typ == "invoke":
                self._invoke(c, lane, r)
            else:
                self._complete(c, lane, r)
        self._close_at_end()

    def _fault(self, r: dict) -> None:
        v = _fields(r)
        fid = v.get("fault_id", r.get("f"))
        if v.get("phase") == "end":
            start = self.fault_open.pop(fid, None)
            if start:
                self.faults.append((start["time"], r["time"], self._fault_label(start)))
        else:
            self.fault_open[fid] = r

    def _session_state(self, c: Any, lane: list[tuple], r: dict) -> None:
        t, prev = r["time"], self.session.get(c)
        if prev and prev[1] in ("SUSPENDED", "LOST"):
            colour = "#ffb300" if prev[1] == "SUSPENDED" else "#c62828"
            title = f"session {prev[1]} {_ms(prev[0])} - {_ms(t)}"
            lane.append((prev[0], t, "session", colour, title))
        self.session[c] = (t, r.get("value"))

    def _invoke(self, c: Any, lane: list[tuple], r: dict) -> None:
        t = r["time"]
        if r.get("f") in ("release", "acquire", "resign", "elected"):
            h = self.holding.pop(c, None)
            if h:
                title = f"holds {h.get('key')} token {_token(h)} {_ms(h['time'])} - {_ms(t)}"
                lane.append((h["time"], t, "hold", "#1565c0", title))
        self.pending[r.get("process")] = r

    def _complete(self, c: Any, lane: list[tuple], r: dict) -> None:
        t, typ = r["time"], r.get("type")
        inv = self.pending.pop(r.get("process"), None)
        if inv is None:
            return
        f = inv.get("f")
        title = (
            f"{f} {inv.get('key') or ''} {typ} {_esc(r.get('value'))} "
            f"{_ms(inv['time'])} - {_ms(t)}" + (f" error {r['error']}" if r.get("error") else "")
        )
        if f in ("acquire", "elected"):
            lane.append((inv["time"], t, "wait", "#bdbdbd", "waiting: " + title))
            if typ in ("ok", "info"):
                self.holding[c] = {**r, "key": inv.get("key"), "maybe": typ == "info"}
        else:
            lane.append((inv["time"], t, "op", OUTCOME_COLOUR.get(typ, "#ef6c00"), title))

    def _close_at_end(self) -> None:
        """What is still held, faulted or suspended at the end of the history lasts to it."""
        for c, h in self.holding.items():
            self.spans[c].append(
                (
                    h["time"],
                    self.end,
                    "hold",
                    "#1565c0",
                    f"holds {h.get('key')} token {_token(h)} from {_ms(h['time'])}"
                    " to the end of the history (never released)",
                )
            )
        for r in self.fault_open.values():
            self.faults.append((r["time"], None, self._fault_label(r)))
        for c, (t, state) in self.session.items():
            if state in ("SUSPENDED", "LOST"):
                colour = "#ffb300" if state == "SUSPENDED" else "#c62828"
                self.spans[c].append(
                    (t, self.end, "session", colour, f"session {state} from {_ms(t)} to the end")
                )

    @staticmethod
    def _fault_label(r: dict) -> str:
        v = _fields(r)
        return f"{r.get('f')} {_esc(v.get('targets', ''))}"


def _token(r: dict) -> Any:
    v = r.get("value")
    return v.get("token") if isinstance(v, dict) else None


def render_timeline(records: list[dict], results: Result | dict | None, title: str) -> str:
    lanes = _Lanes(records)
    clients = sorted(lanes.spans, key=lambda c: (isinstance(c, str), c))
    row = {c: i for i, c in enumerate(clients)}
    width = 1400
    scale = (width - LEFT - 20) / lanes.end
    height = TOP + LANE_H * len(clients) + 30

    def x(t: float) -> float:
        return LEFT + t * scale

    parts: list[str] = []
    power = power_of_results(results)
    landed = {o.start: o for o in power.landed} if power is not None else {}
    for start, end, label in lanes.faults:  # shaded across all lanes, under everything
        e = lanes.end if end is None else end
        o = landed.get(start)  # landed where the lock could break: darker, and says why
        why = (
            f"; landed on {', '.join(f'client {c}' for c in o.clients)} (timeout "
            f"{o.timeout_s:g} s){', a violation followed' if o.violated else ''}"
            if o
            else ""
        )
        parts.append(
            f'<rect x="{x(start):.1f}" y="{TOP - 14}" '
            f'width="{max(1, (e - start) * scale):.1f}"'
            f' height="{height - TOP - 16}" fill="#7e57c2" opacity="{0.3 if o else 0.13}">'
            f"<title>fault {label} {_ms(start)} - {_ms(e)}{html.escape(why)}</title></rect>"
        )
        label += " (landed)" if o else ""
        parts.append(f'<text x="{x(start) + 2:.1f}" y="{TOP - 4}" class="f">{label}</text>')
    for c in clients:
        y = TOP + row[c] * LANE_H
        name = "final" if c == 0 else f"client {c}"
        parts.append(
            f'<text x="4" y="{y + 15}" class="l">{_esc(name)}</text>'
            f'<line x1="{LEFT}" x2="{width - 20}" y1="{y + LANE_H - 2}" '
            f'y2="{y + LANE_H - 2}" stroke="#eee"/>'
        )
        for start, end, kind, colour, tip in lanes.spans[c]:
            w = max(1.0, (end - start) * scale)
            yy, hh = {
                "wait": (y + 9, 4),
                "hold": (y + 4, 14),
                "op": (y + 6, 10),
                "session": (y + 22, 6),
            }[kind]
            parts.append(
                f'<rect x="{x(start):.1f}" y="{yy}" width="{w:.1f}" height="{hh}" '
                f'fill="{colour}"><title>{html.escape(tip)}</title></rect>'
            )
    violations = _collect_violations(results)
    for name, v in violations:
        start = v.start or 0
        end = v.end or lanes.end
        ys = [TOP + row[c] * LANE_H for c in v.clients if c in row]
        if not ys:
            continue
        tip = (
            f"{name} {v.kind}: clients {list(v.clients)} "
            f"{_ms(start)} - {_ms(end)}; faults active: "
            + (", ".join(f.get("f", "?") for f in v.faults) or "none")
        )
        parts.append(
            f'<rect x="{x(start) - 2:.1f}" y="{min(ys) + 1}" '
            f'width="{max(4, (end - start) * scale + 4):.1f}" '
            f'height="{max(ys) - min(ys) + LANE_H - 4}" fill="none" stroke="#d50000" '
            f'stroke-width="2.5"><title>{html.escape(tip)}</title></rect>'
        )
    for i in range(11):  # time axis
        t = lanes.end * i / 10
        parts.append(f'<text x="{x(t):.1f}" y="{height - 8}" class="a">{t / 1e9:.1f}s</text>')
    summary = (
        f"{len(clients)} lanes, {len(records)} records, {len(lanes.faults)} faults, "
        f"{len(violations)} violations marked"
        + (f". Power: {html.escape(power.line())}" if power is not None else "")
    )
    return PAGE.format(
        title=html.escape(title), summary=summary, width=width, height=height, body="\n".join(parts)
    )


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px sans-serif; margin: 16px; }}
svg text.l {{ font-size: 12px; }} svg text.f {{ font-size: 10px; fill: #5e35b1; }}
svg text.a {{ font-size: 10px; fill: #666; }}
.legend span {{ display: inline-block; width: 14px; height: 10px; margin: 0 4px 0 12px; }}
#wrap {{ overflow-x: auto; border: 1px solid #ddd; }}
</style></head><body>
<h2>{title}</h2>
<div>{summary}. Hover for details.
<button onclick="z(2)">zoom in</button><button onclick="z(0.5)">zoom out</button></div>
<div class="legend"><span style="background:#bdbdbd"></span>waiting
<span style="background:#1565c0"></span>holding (believed)
<span style="background:#2e7d32"></span>op ok <span style="background:#9e9e9e"></span>op failed
<span style="background:#ef6c00"></span>op unknown
<span style="background:#ffb300"></span>SUSPENDED <span style="background:#c62828"></span>LOST
<span style="background:#7e57c2;opacity:.3"></span>fault
<span style="background:#7e57c2;opacity:.6"></span>fault that landed where the lock could break
<span style="border:2px solid #d50000;height:8px"></span>violation</div>
<div id="wrap"><svg id="tl" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"
 viewBox="0 0 {width} {height}" preserveAspectRatio="none">
{body}
</svg></div>
<script>
function z(k) {{ const s = document.getElementById('tl');
  s.setAttribute('width', Math.max(600, s.getAttribute('width') * k)); }}
</script>
</body></html>
"""


def write_timeline(files: ReportFiles, records: list[dict], results: dict | None) -> Path:
    path = files.timeline
    title = f"zkjepsen timeline: {files.path}{_versions(files.test_json)}"
    tmp = path.with_name(f".{path.name}.tmp")  # never half a file (an interrupt)
    tmp.write_text(render_timeline(records, results, title))
    tmp.replace(path)
    return path


def _versions(test_json: Path) -> str:
    """` (ZooKeeper 3.4 (clients: bullseye))` from the run's test.json, in its service's words;
    '' when it says nothing (or cannot be read: the timeline is drawn anyway)."""

    try:
        table = read_service(read_json(test_json, test_json.name)).get("service")
        said = settings_from_table(table, "service").describe() if table else ""
    except (OSError, ValueError, BadInput, TypeError):
        return ""
    return f" ({said})" if said else ""


def _fields(r: dict) -> dict:
    """A nemesis record's value, when it is a dict of fields (else none)."""
    v = r.get("value")
    return v if isinstance(v, dict) else {}
