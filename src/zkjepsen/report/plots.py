"""latency.png and rate.png, as in Jepsen's perf graphs: one point per op (latency over time,
coloured by outcome) and ops/s per op type, with the nemesis' faults shaded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zkjepsen.report.files import ReportFiles

OUTCOME_COLOUR = {"ok": "#2e7d32", "fail": "#757575", "info": "#ef6c00"}


def _pairs(records: list[dict]) -> list[tuple[str, str, float, float]]:
    """(f, outcome, invoke time s, latency ms) for every completed client op."""
    pending: dict = {}
    out = []
    for r in records:
        p = r.get("process")
        if p == "nemesis" or r.get("type") == "event":
            continue
        if r["type"] == "invoke":
            pending[p] = r
        elif p in pending:
            inv = pending.pop(p)
            out.append(
                (
                    inv.get("f"),
                    r["type"],
                    inv["time"] / 1e9,
                    max(1e-3, (r["time"] - inv["time"]) / 1e6),
                )
            )
    return out


def _faults(records: list[dict]) -> list[tuple[float, float, str]]:
    open_: dict = {}
    out = []
    end = max((r["time"] for r in records), default=0) / 1e9
    for r in records:
        if r.get("process") != "nemesis" or not isinstance(r.get("value"), dict):
            continue
        fid = r["value"].get("fault_id")
        if r["value"].get("phase") == "end":
            if fid in open_:
                out.append((open_.pop(fid), r["time"] / 1e9, r.get("f", "")))
        else:
            open_[fid] = r["time"] / 1e9
    out += [(s, end, "") for s in open_.values()]
    return out


def _shade(ax, faults) -> None:
    for i, (s, e, _label) in enumerate(faults):
        ax.axvspan(s, e, color="#7e57c2", alpha=0.15, lw=0, label="fault" if i == 0 else None)


def _save(fig, path: Path) -> None:
    """Through a temporary file: an interrupted run's folder never holds half a picture, so
    what is there is complete (and `analyze` writes what is not)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=110, format="png")
    tmp.replace(path)


def write_plots(files: ReportFiles, records: list[dict]) -> list[Path]:
    # here, not at the top: matplotlib takes a second to load; only the plots need it
    import matplotlib

    matplotlib.use("Agg")
    # here, not at the top: matplotlib takes a second to load; only the plots need it
    import matplotlib.pyplot as plt

    pairs = _pairs(records)
    faults = _faults(records)
    fs = sorted({f for f, *_ in pairs if f})
    markers = dict(zip(fs, "o^sDvP*X", strict=False))
    paths = []

    fig, ax = plt.subplots(figsize=(11, 4.5))
    _shade(ax, faults)
    for f in fs:
        for outcome, colour in OUTCOME_COLOUR.items():
            pts = [(t, lat) for ff, o, t, lat in pairs if ff == f and o == outcome]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.scatter(
                    xs,
                    ys,
                    s=6,
                    c=colour,
                    marker=markers.get(f, "o"),
                    alpha=0.6,
                    label=f"{f} {outcome}",
                    linewidths=0,
                )
    ax.set_yscale("log")
    ax.set_xlabel("time since test start (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("op latency")
    _legend(ax, markerscale=2)
    fig.tight_layout()
    paths.append(files.latency_png)
    _save(fig, paths[-1])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(11, 4.5))
    _shade(ax, faults)
    end = max((t for _, _, t, _ in pairs), default=1.0)
    buckets = int(end) + 1
    for f in fs:
        for outcome, colour in OUTCOME_COLOUR.items():
            counts = [0] * buckets
            for ff, o, t, _ in pairs:
                if ff == f and o == outcome:
                    counts[min(int(t), buckets - 1)] += 1
            if any(counts):
                ax.plot(
                    range(buckets),
                    counts,
                    color=colour,
                    lw=1.2,
                    ls=["-", "--", ":", "-."][fs.index(f) % 4],
                    label=f"{f} {outcome}",
                )
    ax.set_xlabel("time since test start (s)")
    ax.set_ylabel("ops/s (by invocation)")
    ax.set_title("throughput")
    _legend(ax)
    fig.tight_layout()
    paths.append(files.rate_png)
    _save(fig, paths[-1])
    plt.close(fig)
    return paths


def _legend(ax, **kw) -> None:
    """A legend when something was drawn: matplotlib warns on stderr ("No artists with
    labels found to put in legend") for an empty one, e.g. a run with no completed op."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=7, ncol=4, **kw)
