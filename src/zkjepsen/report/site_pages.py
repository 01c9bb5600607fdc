"""The site's pages (report/site.py reads the store): an index of every run, filterable; a page
per test (a gate's, a scenario's, a replay's runs are a test's), per matrix and per run, the
run's own files beside its page. Plain HTML and a few lines of inline script: nothing is loaded
from a network, and the colours follow the reader's light or dark scheme.

    DIR/index.html                  every run, newest first; the matrices and the tests
    DIR/matrix/<n>.html             a matrix: its cells' counts and each run
    DIR/sweep/<n>.html              a sweep: its curve, its boundary, each point's runs
    DIR/test/<test-name>.html       a test's runs
    DIR/runs/<test-name>/<stamp>/   a run's page (index.html) and its timeline, plots, tables
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from zkjepsen.checker import Verdict
from zkjepsen.report import sweep_page
from zkjepsen.report.site import Matrix, Run, Store, Sweep, copy_file, unfinished

STYLE = """
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fdfdfc; --muted: #5b6470;
  --line: #d8dce1; --valid: #1a7f37; --invalid: #c62828; --unknown: #9a6700; --link: #0b5cad; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8eb; --bg: #15181c; --muted: #9aa4b0;
  --line: #333a42; --valid: #4cc36a; --invalid: #ff6b6b; --unknown: #e3b341; --link: #6cb6ff; } }
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 78rem; margin: 1.5rem auto; padding: 0 1rem; }
a { color: var(--link); } h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; } .muted { color: var(--muted); }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { font-weight: 600; } td.num { text-align: right; }
.VALID { color: var(--valid); font-weight: 600; } .INVALID { color: var(--invalid);
  font-weight: 600; } .UNKNOWN, .NOT-CHECKED { color: var(--unknown); font-weight: 600; }
input, select { font: inherit; padding: .2rem .4rem; margin: 0 .5rem .8rem 0; }
img { max-width: 100%; border: 1px solid var(--line); }
"""

FILTER = """
<script>
// Show the rows whose text holds every word typed, and whose verdict is the one chosen.
function filterRuns() {
  const words = document.getElementById('q').value.toLowerCase().split(/\\s+/).filter(Boolean);
  const verdict = document.getElementById('verdict').value;
  for (const row of document.querySelectorAll('#runs tbody tr')) {
    const text = row.textContent.toLowerCase();
    const ok = words.every(w => text.includes(w)) && (!verdict || row.dataset.verdict === verdict);
    row.hidden = !ok;
  }
}
// A filter in the address (index.html?q=kazoo&verdict=INVALID) is applied when the page opens.
window.addEventListener('DOMContentLoaded', () => {
  const p = new URLSearchParams(location.search);
  document.getElementById('q').value = p.get('q') || '';
  document.getElementById('verdict').value = p.get('verdict') || '';
  filterRuns();
});
</script>
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, up: str = "") -> str:
    home = f'<p class="muted"><a href="{up}index.html">all runs</a></p>' if up else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>{home}<h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )


def verdict_cell(word: str, power: str = "") -> str:
    line = f'<br><span class="muted">{esc(power)}</span>' if power else ""
    return f'<td><span class="{word.replace(" ", "-")}">{esc(word)}</span>{line}</td>'


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def run_href(rel: str) -> str:
    return f"runs/{rel}/index.html"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name) or "store"


def runs_table(runs: list[Run], up: str, filterable: bool = False) -> str:
    head = (
        "<tr><th>date</th><th>test</th><th>recipe</th><th>service</th><th>workload</th>"
        "<th>faults</th><th>verdict</th><th>seed</th></tr>"
    )
    rows = []
    for r in runs:
        s = r.spec
        rows.append(
            f'<tr data-verdict="{esc(r.verdict)}"><td><a href="{up}{esc(run_href(r.rel))}">'
            f"{esc(r.date)}</a></td><td>{esc(r.test)}</td><td>{esc(s.get('recipe', ''))}</td>"
            f"<td>{esc(s.get('backend') or '')}</td><td>{esc(s.get('workload', ''))}</td>"
            f"<td>{esc(r.faults())}</td>{verdict_cell(r.verdict, r.power)}"
            f'<td class="num">{esc(s.get("seed", ""))}</td></tr>'
        )
    table = f'<table id="runs"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
    if not filterable:
        return table
    options = "".join(
        f'<option value="{w}">{w}</option>' for w in (*(v.word for v in Verdict), "NOT CHECKED")
    )
    return (
        f'{FILTER}<input id="q" type="search" placeholder="filter: recipe, fault, service…" '
        f'oninput="filterRuns()" size="40"><select id="verdict" onchange="filterRuns()">'
        f'<option value="">every verdict</option>{options}</select>\n{table}'
    )


def index_page(store: Store) -> str:
    parts = [f'<p class="muted">{esc(store.root)}: {len(store.runs)} runs</p>']
    if store.matrices:
        items = "".join(
            f'<li><a href="matrix/{i}.html">{esc(m.rel or "the store")}</a>: '
            f"{len(m.doc['settings']['recipes'])} recipes × "
            f"{len(m.doc['settings']['nemeses'])} faults, {plural(len(m.doc['runs']), 'run')}</li>"
            for i, m in enumerate(store.matrices)
        )
        parts.append(f"<h2>Matrices</h2><ul>{items}</ul>")
    if store.sweeps:
        items = "".join(
            f'<li><a href="sweep/{i}.html">{esc(sweep_page.title(w.result))}</a> '
            f"({esc(w.rel or 'the store')}, {plural(w.result['runs'], 'run')})</li>"
            for i, w in enumerate(store.sweeps)
        )
        parts.append(f"<h2>Sweeps</h2><ul>{items}</ul>")
    tests = store.tests()
    items = "".join(
        f'<li><a href="test/{esc(slug(t))}.html">{esc(t)}</a> ({plural(len(rs), "run")})</li>'
        for t, rs in sorted(tests.items())
    )
    parts.append(f"<h2>Tests</h2><ul>{items}</ul>" if tests else "")
    parts.append("<h2>Runs</h2>" + runs_table(store.runs, "", filterable=True))
    return page("zkjepsen store", "\n".join(parts))


def matrix_page(m: Matrix, runs: dict[str, Run]) -> str:
    s = m.doc["settings"]
    counts: dict[tuple[str, str], list[int]] = {}
    for rec, _ in m.runs:
        row, _, col = rec["cell"].partition("|")
        c = counts.setdefault((row, col), [0, 0, 0])
        c[0 if rec["valid"] is True else 1 if rec["valid"] is False else 2] += 1
    cols = sorted({c for _, c in counts} | set(s["nemeses"]))
    rows = sorted({r for r, _ in counts} | set(s["recipes"]))
    grid = "<tr><th>recipe</th>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"
    na = s.get("not_applicable") or {}
    invalid, unknown = Verdict.INVALID.word, Verdict.UNKNOWN.word  # the page's style classes
    for row in rows:
        cells = []
        for col in cols:
            v, i, u = counts.get((row, col), (0, 0, 0))
            cells.append(
                "<td>n/a</td>"
                if f"{row}|{col}" in na
                else f'<td><span class="{invalid}">{i}</span> invalid / {v + i + u}'
                + (f', <span class="{unknown}">{u}</span> unknown' if u else "")
                + "</td>"
            )
        grid += f"<tr><td>{esc(row)}</td>{''.join(cells)}</tr>"
    lines = []
    for rec, rel in m.runs:
        word = Verdict.of(rec["valid"]).word
        where = (
            f'<a href="../{esc(run_href(rel))}">{esc(rel)}</a>'
            if rel
            else esc(rec["store"] or "no folder")
        )
        power = runs[rel].power if rel in runs else ""
        lines.append(
            f"<tr><td>{esc(rec['cell'])}</td><td class='num'>{esc(rec['seed'])}</td>"
            f"{verdict_cell(word, power)}<td>{where}</td></tr>"
        )
    body = (
        f'<p class="muted">workload {esc(s["workload"])}, {esc(s["runs"])} runs per cell, '
        f"{esc(s['time_limit_s'])} s each, seed {esc(s['seed'])}</p>"
        f"<table>{grid}</table><h2>Runs</h2><table><tr><th>cell</th><th>seed</th>"
        f"<th>verdict</th><th>run</th></tr>{''.join(lines)}</table>"
    )
    return page(f"matrix {m.rel or 'at the store'}", body, "../")


def sweep_site_page(w: Sweep, store: Store, plot: str | None) -> str:
    """A sweep's page in the site: each point's runs linked to their pages."""
    here = {(store.root / r.rel).resolve(): r.rel for r in store.runs}

    def href(folder: str) -> str | None:
        rel = here.get(Path(folder).resolve())
        return f"../{run_href(rel)}" if rel else None

    return page(sweep_page.title(w.result), sweep_page.body(w.result, href, plot), "../")


def test_page(test: str, runs: list[Run]) -> str:
    return page(f"test {test}", runs_table(runs, "../"), "../")


def run_page(r: Run, store_root: Path) -> str:
    up = "../" * (r.rel.count("/") + 2)
    spec = r.spec
    parts = [
        f"<p>{verdict_cell(r.verdict, r.power)[4:-5]}</p>",
        f'<p class="muted">{esc(spec.get("recipe", ""))} · {esc(spec.get("workload", ""))} · '
        f"{esc(spec.get('backend') or '')} · faults {esc(r.faults())} · seed "
        f"{esc(spec.get('seed', ''))} · {esc(r.date)}</p>",
    ]
    if r.parts():
        # The power part is a measure, not a check (as the console prints it): its figures say
        # it all, and "power VALID" read as if power were a property that held.
        rows = "".join(
            f"<tr><td>{esc(n)}</td>{'<td></td>' if n == 'power' else verdict_cell(w)}"
            f"<td>{esc(line)}</td></tr>"
            for n, w, line in r.parts()
        )
        parts.append(f"<h2>Verdict, part by part</h2><table>{rows}</table>")
    links = [f'<li><a href="{esc(f)}">{esc(f)}</a></li>' for f in r.files if f.endswith(".html")]
    links += [f'<li><a href="{esc(f)}">{esc(f)}</a></li>' for f in r.files if f.endswith(".json")]
    links += [f'<li><a href="minimal/{esc(f)}">shrunk: {esc(f)}</a></li>' for f in r.shrink]
    parts.append(f"<h2>Files</h2><ul>{''.join(links)}</ul>")
    lacks = unfinished(r)
    if lacks:
        parts.append(f'<p class="muted">interrupted: no {esc(", ".join(lacks))}</p>')
    parts += [f'<h2>{f[:-4]}</h2><img src="{f}" alt="{f}">' for f in r.files if f.endswith(".png")]
    parts.append(
        f'<p class="muted">the history and the servers\' logs: '
        f"{esc(store_root.resolve() / r.rel)}</p>"
    )
    return page(f"{r.test} {r.date}", "\n".join(parts), up)


def write_site(store: Store, out: Path) -> Path:
    """Every page of `store` under `out`, the runs' files copied beside their pages; returns
    the index."""
    out.mkdir(parents=True, exist_ok=True)
    by_rel = {r.rel: r for r in store.runs}
    for r in store.runs:
        d = out / "runs" / r.rel
        for f in r.files:
            copy_file(store.root / r.rel / f, d / f)
        for f in r.shrink:
            copy_file(store.root / r.rel / "minimal" / f, d / "minimal" / f)
        (d / "index.html").write_text(run_page(r, store.root))
    (out / "test").mkdir(exist_ok=True)
    for test, runs in store.tests().items():
        (out / "test" / f"{slug(test)}.html").write_text(test_page(test, runs))
    (out / "matrix").mkdir(exist_ok=True)
    for i, m in enumerate(store.matrices):
        (out / "matrix" / f"{i}.html").write_text(matrix_page(m, by_rel))
    (out / "sweep").mkdir(exist_ok=True)
    for i, w in enumerate(store.sweeps):
        png = store.root / w.rel / "sweep.png"
        plot = f"{i}.png" if png.is_file() else None
        if plot:
            copy_file(png, out / "sweep" / plot)
        (out / "sweep" / f"{i}.html").write_text(sweep_site_page(w, store, plot))
    index = out / "index.html"
    index.write_text(index_page(store))
    return index
