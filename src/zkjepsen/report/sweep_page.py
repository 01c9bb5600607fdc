"""A sweep's curve (sweep.png) and its page (sweep.html): the violation rate at each point with
its 95 % interval, one line per measure, the boundary shaded; the page's rows link each point's
runs. `report`'s site draws the same page for every sweep in a store (report/site_pages.py)."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from zkjepsen.checker import Verdict
from zkjepsen.report.sweep import (
    MEASURES,
    boundary_text,
    header,
    rate_cell,
    unit,
    unjudged_notes,
)

COLOURS = {"invalid": "#c62828", "belief": "#ef6c00", "effect": "#6a1b9a", "half_done": "#1565c0"}


def write_plot(res: dict, path: Path) -> Path:
    """The curve as a PNG (through a temporary file: never half a picture)."""
    # here, not at the top: matplotlib takes a second to load; only the plot needs it
    import matplotlib

    matplotlib.use("Agg")
    # here, not at the top: as above
    import matplotlib.pyplot as plt

    axis = res["settings"]["axis"]
    pts = [p for p in res["points"] if p["judged"]]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    b = res["boundaries"]["invalid"]
    if b["at_most"] is not None:
        # no safe point: the span reaches the end of the axis with the least fault
        least = max if b.get("falling") else min
        lo = b["above"] if b["above"] is not None else least(p["magnitude"] for p in res["points"])
        ax.axvspan(lo, b["at_most"], color="#9e9e9e", alpha=0.2, lw=0, label="boundary (invalid)")
    for i, m in enumerate(MEASURES):
        xs = [p["magnitude"] + (i - 1.5) * _nudge(res) for p in pts]
        ys = [p["rates"][m]["k"] / p["judged"] for p in pts]
        below = [y - p["rates"][m]["lo"] for y, p in zip(ys, pts, strict=True)]
        above = [p["rates"][m]["hi"] - y for y, p in zip(ys, pts, strict=True)]
        ax.errorbar(xs, ys, yerr=[below, above], color=COLOURS[m], marker="o", ms=4, lw=1.2,
                    capsize=3, label=m.replace("_", "-"))  # fmt: skip
    for p in res["points"]:  # a point no run was judged at is named, not left a gap
        if p["runs"] and not p["judged"]:
            word = "no fault:\nunknown by design" if p.get("no_fault") else "every run\nunknown"
            ax.axvline(p["magnitude"], color="#9e9e9e", ls="--", lw=1)
            ax.text(p["magnitude"], 0.5, word, rotation=90, ha="right", va="center",
                    fontsize=7, color="#616161")  # fmt: skip
    ax.axhline(res["settings"]["target_rate"], color="#757575", ls=":", lw=1, label="target rate")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(f"{axis['param']} ({unit(axis).strip() or 'value'})")
    ax.set_ylabel("runs violated (95 % Wilson interval)")
    s = res["settings"]
    ax.set_title(f"{s['recipe']} under {axis['fault']}", fontsize=11)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=110, format="png")
    tmp.replace(path)
    plt.close(fig)
    return path


def _nudge(res: dict) -> float:
    """A small sideways shift per measure, so four error bars at one point stay apart."""
    mags = sorted(p["magnitude"] for p in res["points"])
    gaps = [b - a for a, b in zip(mags, mags[1:], strict=False) if b > a]
    return (min(gaps) if gaps else 1.0) * 0.04


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def body(res: dict, href: Callable[[str], str | None], plot: str | None) -> str:
    """The page's body: the settings, the curve, the boundary per measure, a row per point
    with each run linked (`href`: a run's folder -> its link, None when not here)."""
    axis = res["settings"]["axis"]
    parts = [f'<p class="muted">{esc(header(res))}</p>']
    if plot:
        parts.append(f'<img src="{esc(plot)}" alt="the sweep\'s curve">')
    items = "".join(
        f"<li>{esc(m)}: {esc(boundary_text(res['boundaries'][m], axis))}. "
        f'<span class="muted">{esc("; ".join(res["boundaries"][m]["said"]))}</span></li>'
        for m in MEASURES
    )
    parts.append(f"<h2>Boundary</h2><ul>{items}</ul>")
    head = (
        f"<tr><th>{esc(axis['param'])}</th><th>runs</th>"
        + "".join(f"<th>{esc(m.replace('_', '-'))}</th>" for m in MEASURES)
        + "</tr>"
    )
    rows = []
    for p in res["points"]:
        links = []
        for seed, valid, store in zip(p["seeds"], p["verdicts"], p["stores"], strict=True):
            word = Verdict.of(valid).word
            target = href(store) if store else None
            text = f'<span class="{word}">{esc(seed)}</span>'
            links.append(f'<a href="{esc(target)}">{text}</a>' if target else text)
        mark = " (bisected)" if p["bisected"] else ""
        unknown = f" ({p['unknown']} unknown)" if p["unknown"] else ""
        rows.append(
            f"<tr><td>{esc(p['label'])}{mark}</td><td>{' '.join(links)}{unknown}</td>"
            + "".join(f"<td>{esc(rate_cell(p['rates'][m]))}</td>" for m in MEASURES)
            + "</tr>"
        )
    notes = "".join(f"<li>{esc(n)}</li>" for n in unjudged_notes(res))
    parts.append(
        (f"<p>Points where no run was judged:</p><ul>{notes}</ul>" if notes else "")
        + f"<h2>Points</h2><table><thead>{head}</thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="muted">runs: each seed, coloured by its verdict, linked to the run; each '
        "measure: runs showing it / runs judged (95 % Wilson interval)</p>"
    )
    return "\n".join(parts)


def title(res: dict) -> str:
    s = res["settings"]
    return f"sweep {s['recipe']} × {s['axis']['fault']} over {s['axis']['param']}"
