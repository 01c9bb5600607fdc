"""docs/findings.md's current tables: one per question (locks x faults, services side by side,
tooz on its seven services, ZooKeeper versions, durability presets, clocks, the checker against
Porcupine), each cell with its rate, its 95 % Wilson interval, its date and the command behind it.

Where the figures come from, per cell:
- *measured*: a matrix this script runs (`--run`), read back from its store
  (`store/findings/<table>/matrix-runs.json`, through the same reader as `zkjepsen merge`) and
  kept in benchmarks/findings_measured.json, so that a machine without the store renders the
  same tables;
- *carried*: copied from the dated lab note it links (benchmarks/findings_carried.json), for
  the questions no store on this machine answers (the other ZooKeeper versions, power loss,
  clocks, Porcupine). A measured cell of the same row and column replaces a carried one.

    .venv/bin/python benchmarks/findings_current.py               # stores -> data -> findings.md
    .venv/bin/python benchmarks/findings_current.py --run         # run the matrices with no store
    .venv/bin/python benchmarks/findings_current.py --run services  # run (resume) that one
    .venv/bin/python benchmarks/findings_current.py --check       # exit 1 if not current
    .venv/bin/python benchmarks/findings_current.py --boundary-row store/sweep-X  # a row

The boundaries table is drawn from the JSON blocks of the dated boundary notes
(docs/findings/*boundar*.md), each row a boundary a `zkjepsen sweep` measured.

tests/unit/test_docs_drift.py fails when findings.md's tables are not what the data renders.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FINDINGS = REPO / "docs" / "findings.md"
CARRIED = Path(__file__).with_name("findings_carried.json")
MEASURED = Path(__file__).with_name("findings_measured.json")
STORES = REPO / "store" / "findings"
BEGIN = "<!-- current: benchmarks/findings_current.py writes what follows; do not edit by hand -->"
END = "<!-- end of current -->"


@dataclass(frozen=True)
class Question:
    key: str
    title: str
    what: str  # what a cell counts
    matrix: tuple[str, ...] = ()  # the matrix that measures it here (none: carried only)
    # recipe -> row label, where a row names its service (carried rows use the same labels)
    rows: tuple[tuple[str, str], ...] = ()
    # True: a measured cell is pooled with the carried one of its place instead of replacing
    # it (the same settings, runs on record in two places: a store lost, its counts in a note)
    pool: bool = False


QUESTIONS = (
    Question(
        "locks-faults",
        "Which ZooKeeper locks break under which fault",
        "runs judged invalid / runs",
        (
            "--recipes", "kazoo,go-zk", "--nemeses", "pause-client,isolate-client,kill-leader",
            "--runs", "3", "--workload", "lock", "--param", "resource=fenced",
            "--time-limit", "20", "--nodes", "3", "--clients", "5", "--session-timeout", "3",
            "--interval", "3", "--parallel", "2",
        ),
    ),
    Question(
        "services",
        "The lock services side by side (a paused holder)",
        "runs judged invalid / runs",
        (
            "--recipes", "kazoo,redis-set-px", "--nemeses", "pause-client",
            "--runs", "3", "--time-limit", "20", "--session-timeout", "2", "--interval", "3",
            "--clients", "5", "--param", "resource=fenced", "--fault-trigger", "acquired",
            "--parallel", "2",
        ),
        (
            ("kazoo", "kazoo (ZooKeeper 3.8)"),
            ("redis-set-px", "redis-set-px (Redis)"),
        ),
    ),
    Question(
        "tooz",
        "tooz's one lock API on its seven services (issue 51)",
        "runs judged invalid / runs (belief and effect apart: the dated note)",
        (
            "--recipes", "tooz@zookeeper,tooz@etcd,tooz@redis,tooz@redis-sentinel,tooz@postgres,"
            "tooz@mariadb,tooz@memcached",
            "--nemeses", "pause-client,isolate-client,kill-leader,power-loss-all,clock-rate-client",
            "--runs", "1", "--workload", "lock", "--param", "resource=fenced",
            "--time-limit", "20", "--nodes", "3", "--clients", "5", "--session-timeout", "4",
            "--interval", "3", "--parallel", "1",
        ),
        pool=True,
    ),
    Question("versions", "ZooKeeper versions (3.4, 3.8, 3.9)", "runs judged invalid / runs"),
    Question(
        "durability",
        "Durability presets under power loss (`--fsync`)",
        "runs whose lock or fencing checker was invalid / runs",
    ),
    Question("clocks", "Clock faults on servers and clients", "runs judged invalid / runs"),
    Question(
        "porcupine",
        "The checker against Porcupine (Porcupine's own benchmark)",
        "a CPU-time ratio (below 1: zkjepsen is faster), or files with the same verdict / files",
    ),
)  # fmt: skip


def command_of(
    q: Question, part: str = "", recipes: str = "", runs: int = 0, nemeses: str = "", seed: int = 1
) -> str:
    """The matrix command behind q's table; for a part of a table measured in parts (a matrix
    per group of rows or columns, store/findings/<key>/<part>, each resumed as far as its
    cells need), that part's rows, columns, runs and seed (matrix's default seed is 1)."""
    store = f"store/findings/{q.key}" + (f"/{part}" if part else "")
    argv = list(q.matrix)
    if recipes:
        argv[argv.index("--recipes") + 1] = recipes
    if nemeses:
        argv[argv.index("--nemeses") + 1] = nemeses
    if runs:
        argv[argv.index("--runs") + 1] = str(runs)
    if seed != 1:
        argv += ["--seed", str(seed)]
    return shlex.join(
        ["zkjepsen", "matrix", *argv, "--store", store, "--out", store + "/matrix.md"]
    )


# ---- stores -> measured data ------------------------------------------------------------------
def measured_from_store(q: Question) -> dict | None:
    """The cells of q's matrix as its store holds them (None: no store here); a table measured
    in parts (no matrix at store/findings/<key>, one in each of its folders): every part's
    cells, each naming its own command and start."""
    store = STORES / q.key
    if (store / "matrix-runs.json").exists():
        return store_cells(q, store)
    parts = [
        store_cells(q, f.parent, f.parent.name) for f in sorted(store.glob("*/matrix-runs.json"))
    ]
    if not parts:
        return None
    first = min(parts, key=lambda m: m["started"])
    cells = [
        c | {"command": m["command"], "started": m["started"]} for m in parts for c in m["cells"]
    ]
    return {"command": first["command"], "started": first["started"], "cells": cells}


def store_cells(q: Question, store: Path, part: str = "") -> dict:
    """One matrix store's cells in q's rows and columns, with its command and start."""
    from zkjepsen.report.findings import merge, read_manifest

    manifest = read_manifest(store)
    settings, cells, _ = merge([manifest])
    started = str((manifest.get("origin") or {}).get("started") or "")
    labels = dict(q.rows)
    out = []
    for recipe in settings["recipes"]:  # the matrix's own order of rows and columns
        for nemesis in settings["nemeses"]:
            c = cells.get(f"{recipe}|{nemesis}")
            if not c or "na" in c or not c["runs"]:
                continue
            row = {"row": labels.get(recipe, recipe), "col": nemesis, "k": c["invalid"]}
            row |= {"n": c["runs"], "unknown": c["unknown"], "date": started[:10]}
            out.append(row)
    command = (
        command_of(
            q,
            part,
            ",".join(settings["recipes"]),
            int(settings["runs"]),
            ",".join(settings["nemeses"]),
            int(settings.get("seed") or 1),
        )
        if part
        else command_of(q)
    )
    return {"command": command, "started": started, "cells": out}


def refresh_measured() -> dict:
    """benchmarks/findings_measured.json, each table whose store is here read again; the others
    kept as they were last measured."""
    data = json.loads(MEASURED.read_text()) if MEASURED.exists() else {}
    for q in QUESTIONS:
        if q.matrix and (m := measured_from_store(q)) is not None:
            data[q.key] = with_lost_stores(data.get(q.key), m)
    MEASURED.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def store_of(command: str) -> str:
    """The store a matrix command wrote (its `--store`), which names the runs behind a cell."""
    argv = shlex.split(command)
    return argv[argv.index("--store") + 1] if "--store" in argv else ""


def with_lost_stores(old: dict | None, new: dict) -> dict:
    """`new` (the cells the stores on this machine hold) plus the cells `old` had from stores
    that are not on this machine: a store lives where it was run, so a table measured in parts
    on several machines (or sessions) keeps every part's counts; a store that is here is read
    again whole (its cells replace the ones it had before)."""
    if not old:
        return new
    here = {store_of(c.get("command", new["command"])) for c in new["cells"]}
    here.add(store_of(new["command"]))
    lost = []
    for c in old.get("cells", []):
        command = c.get("command", old["command"])
        if store_of(command) not in here:
            lost.append(c | {"command": command, "started": c.get("started", old["started"])})
    if not lost:
        return new
    cells = [
        c
        | {"command": c.get("command", new["command"]), "started": c.get("started", new["started"])}
        for c in new["cells"]
    ]
    first = min([*lost, *cells], key=lambda c: c["started"])
    return {"command": first["command"], "started": first["started"], "cells": [*lost, *cells]}


def run_matrices(keys: list[str]) -> None:
    """Run each named table's matrix (none named: those with no store yet); a store that exists
    is continued (`--resume`: finished runs kept)."""
    for q in QUESTIONS:
        if not q.matrix or (keys and q.key not in keys):
            continue
        store = STORES / q.key
        if not keys and (store / "matrix-runs.json").exists():
            continue
        argv = shlex.split(command_of(q))
        argv[0] = str(Path(sys.executable).with_name("zkjepsen"))
        if (store / "matrix-runs.json").exists():
            argv.append("--resume")
        print("running:", shlex.join(argv[1:]), flush=True)
        subprocess.run(argv, cwd=REPO, check=False)


# ---- data -> tables ---------------------------------------------------------------------------
def cells_of(q: Question, measured: dict, carried: dict) -> dict[tuple[str, str], dict]:
    """(row, col) -> the cell, with the texts of the commands behind it (`hows`) and whether
    it was measured or carried; a measured cell replaces the carried one in its place, or is
    pooled with it where the question says so (counts summed, both commands named)."""
    out: dict[tuple[str, str], dict] = {}
    for c in carried["cells"]:
        if c["table"] == q.key:
            note = f"[the lab note](findings/{c['note']})"
            how = f"carried from {note}: `{carried['commands'][c['command']]}`"
            out[(c["row"], c["col"])] = {**c, "hows": [how]}
    m = measured.get(q.key) or {}
    for c in m.get("cells", []):  # a cell of a table measured in parts names its own command
        how = f"measured here, {c.get('started', m['started'])}: `{c.get('command', m['command'])}`"
        place = (c["row"], c["col"])
        old = out.get(place) if q.pool else None
        if old is None:
            out[place] = {**c, "hows": [how]}
            continue
        counts = {f: old.get(f, 0) + c.get(f, 0) for f in ("k", "n", "unknown")}
        out[place] = {**c, **counts, "hows": [*old["hows"], how]}
    return out


def cell_text(c: dict, letter: str) -> str:
    """A cell's figure, its date and the letter(s) of its command(s) (`a+b`: pooled)."""
    from zkjepsen.report.stats import rate_text

    if "figure" in c:
        text = c["figure"]
    else:
        text = rate_text(c["k"], c["n"]) + (f", {c['unknown']} unknown" if c.get("unknown") else "")
    return f"{text} · {c['date']} · {letter}"


def table(q: Question, measured: dict, carried: dict) -> list[str]:
    cells = cells_of(q, measured, carried)
    if not cells:
        return [f"### {q.title}", "", "No cell yet: `benchmarks/findings_current.py --run`.", ""]
    letters: dict[str, str] = {}
    for c in cells.values():
        for how in c["hows"]:
            letters.setdefault(how, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
    labels = [label for _, label in q.rows]
    rows = sorted(dict.fromkeys(r for r, _ in cells), key=lambda r: (r not in labels, 0))
    rows = [r for r in labels if r in rows] + [r for r in rows if r not in labels]
    cols = list(dict.fromkeys(col for _, col in cells))
    lines = [f"### {q.title}", "", f"Each cell: {q.what}, the date, the command below.", ""]
    lines += ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for r in rows:
        texts = [
            cell_text(cells[r, col], "+".join(letters[h] for h in cells[r, col]["hows"]))
            if (r, col) in cells
            else "-"
            for col in cols
        ]
        lines.append(f"| {r} | " + " | ".join(texts) + " |")
    lines.append("")
    lines += [f"{letter}. {how}" + "  " for how, letter in letters.items()]
    lines[-1] = lines[-1].rstrip()
    return [*lines, ""]


# ---- boundaries: the dated notes' blocks -> the table ---------------------------------------
# Each dated note on boundaries (docs/findings/*boundar*.md) holds, after BOUNDARY_MARK, a JSON
# block: one row per boundary a `zkjepsen sweep` measured (`--boundary-row FOLDER` prints one
# from a sweep folder's sweep.json). The table below is drawn from those blocks alone, and
# tests/unit/test_sweep_findings.py checks each row against its note's own words.
NOTES = REPO / "docs" / "findings"
BOUNDARY_MARK = "<!-- boundaries: benchmarks/findings_current.py reads the next block -->"
BOUNDARY_KEYS = (
    "lock", "fault", "boundary", "claim", "runs", "load", "date", "command", "section",
)  # fmt: skip
BOUNDARIES_TITLE = "Boundaries: how much of a fault each lock takes (`zkjepsen sweep`)"


def boundary_notes() -> list[Path]:
    return sorted(NOTES.glob("*boundar*.md"))


def boundary_rows(
    text: str, where: str, mark: str = BOUNDARY_MARK, keys: tuple[str, ...] = BOUNDARY_KEYS
) -> list[dict]:
    """The rows of the block after `mark` in a note's `text`; a row lacking a field, or a note
    without the block, stops the script (ValueError naming `where`)."""
    if mark not in text:
        raise ValueError(f"{where}: no {mark!r} block")
    after = text.split(mark, 1)[1].lstrip()
    if not after.startswith("```json\n"):
        raise ValueError(f"{where}: the mark is not followed by a ```json block")
    rows = json.loads(after[len("```json\n") :].split("\n```", 1)[0])
    for k, row in enumerate(rows):
        lacking = [f for f in keys if not str(row.get(f, "")).strip()]
        if lacking:
            raise ValueError(f"{where}: row {k} ({row.get(keys[0])}) lacks {', '.join(lacking)}")
    return rows


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (as tests/unit/test_docs.py makes it)."""
    plain = re.sub(r"`[^`]*`", lambda m: m.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", plain).replace(" ", "-")


def boundaries_table(notes: list[tuple[str, str]]) -> list[str]:
    """The boundaries table from (note's file name, its text) pairs."""
    rows = [(name, r) for name, text in notes for r in boundary_rows(text, name)]
    lines = [f"### {BOUNDARIES_TITLE}", ""]
    if not rows:
        return [*lines, "No boundary measured yet: `zkjepsen sweep` (docs/sweep.md).", ""]
    lines += [
        "Where a lock breaks along one magnitude of one fault: above the last safe point (the "
        "Wilson 95 % upper end below 50 %), at or below the first broken one (a run invalid); "
        "beside it, the tolerance the lock's documentation or design claims. Clock and pause "
        "boundaries shift with the host's load (timing stretches on a loaded machine): each "
        "row gives the load average during its runs. Each row: its date and the command "
        "below.",
        "",
        "| lock | fault, magnitude | boundary (measured) | tolerance claimed | runs | load "
        "| date |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = ("lock", "fault", "boundary", "claim", "runs", "load")
    return [*lines, *lettered(rows, keys), ""]


def lettered(rows: list[tuple[str, dict[str, str]]], keys: tuple[str, ...]) -> list[str]:
    """A dated table's rows (`keys`' cells, then its date and a letter), then each letter's
    command, linked to the note it was measured in."""
    lines: list[str] = []
    letters: dict[str, str] = {}
    for name, r in rows:
        how = f"[{name}](findings/{name}#{slug(r['section'])}): `{r['command']}`"
        letter = letters.setdefault(how, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
        lines.append("| " + " | ".join(r[k] for k in keys) + f" | {r['date']} · {letter} |")
    lines.append("")
    lines += [f"{letter}. {how}" + "  " for how, letter in letters.items()]
    lines[-1] = lines[-1].rstrip()
    return lines


def read_boundary_notes() -> list[tuple[str, str]]:
    return [(p.name, p.read_text()) for p in boundary_notes()]


# ---- the hunt's cells: the dated notes' blocks -> the table ---------------------------------
# A dated hunt note (docs/findings/*hunt*.md) may hold, after HUNT_MARK, a JSON block: one row
# per cell hunted guided and random (`benchmarks/hunt.py --block ROWS.jsonl` prints them, its
# budget, date, command and section left to fill). The table is drawn from those blocks alone.
HUNT_MARK = "<!-- hunt cells: benchmarks/findings_current.py reads the next block -->"
HUNT_KEYS = (
    "program", "seeds", "guided", "random", "finds", "budget", "load", "date", "command",
    "section",
)  # fmt: skip
HUNT_TITLE = "The catalogue's rare cells hunted: guided vs random (`zkjepsen hunt`)"


def read_hunt_notes() -> list[tuple[str, str]]:
    notes = sorted(NOTES.glob("*hunt*.md"))
    return [(p.name, t) for p in notes if HUNT_MARK in (t := p.read_text())]


def hunt_table(notes: list[tuple[str, str]]) -> list[str]:
    """The hunted cells' table from (note's file name, its text) pairs (none: no table)."""
    rows = [(n, r) for n, text in notes for r in boundary_rows(text, n, HUNT_MARK, HUNT_KEYS)]
    if not rows:
        return []
    lines = [
        f"### {HUNT_TITLE}",
        "",
        "A cell is a recipe with one fault kind pinned (`zkjepsen hunt --recipe R --faults F`; "
        "the hunt chooses the moment, the target and the magnitude, docs/hunt.md). Per seed, "
        "the runs to the first violation the hunt calls a defect (a split beyond a lease's or a "
        "fault's nature, or an invalid part no fault explains), or `none in N` runs within the "
        "budget; the median wall time includes each run's setup on a shared, loaded machine, so "
        "compare runs. Each row: its date and the command below.",
        "",
        "| cell | seeds | budget | guided: found, runs to the first violation | random: the "
        "same | what the finds were | load | date |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = ("program", "seeds", "budget", "guided", "random", "finds", "load")
    return [*lines, *lettered(rows, keys), ""]


def row_from_sweep(folder: Path) -> dict:
    """A block row from a sweep folder's sweep.json (its `claim` and `section` left to fill:
    what the lock's docs claim is read there, not in the runs)."""
    from zkjepsen.report.sweep import boundary_text, unit

    res = json.loads((folder / "sweep.json").read_text())
    s, axis = res["settings"], res["settings"]["axis"]
    b = res["boundaries"]["invalid"]
    text = boundary_text(b, axis)
    if b["at_most"] is None:  # how far it was not broken, and whether any point is safe
        # a slow clock's axis (falling) breaks more as its magnitude falls
        way, most = ("down", min) if b.get("falling") else ("up", max)
        top = most(p["magnitude"] for p in res["points"] if p["judged"])
        text = f"not broken {way} to {top:g}{unit(axis)}" + (
            f"; safe {way} to {b['above']:g}{unit(axis)}"
            if b["above"] is not None
            else "; too few runs a point to call one safe"
        )
    if b["non_monotone"]:
        text += " (non-monotone: clean at " + ", ".join(f"{m:g}" for m in b["non_monotone"]) + ")"
    bisected = sum(p["runs"] for p in res["points"] if p["bisected"])
    unknown = sum(p["unknown"] for p in res["points"])
    runs = f"{res['runs'] - bisected}" + (f" + {bisected} bisected" if bisected else "")
    runs += f" ({unknown} unknown)" if unknown else ""
    load = res.get("load") or {}
    x = f" (x = {axis['timing_s']:g} s)" if axis["relative"] else ""
    return {
        "lock": f"`{s['recipe']}`",
        "fault": f"`{axis['fault']}`, `{axis['param']}`{x}",
        "boundary": text,
        "claim": "",
        "runs": runs,
        "load": f"{load['min']:g}-{load['max']:g}" if load else "not recorded",
        "date": str((res.get("origin") or {}).get("started", ""))[:10],
        "command": sweep_command(s),
        "section": "",
    }


def sweep_command(s: dict) -> str:
    """The command that runs the sweep of settings `s` (its record's)."""
    axis = s["axis"]
    grid = axis["grid"]
    x = "x" if axis["relative"] else ""
    step = round(grid[1] - grid[0], 9)
    over = f"{axis['param']}={grid[0]:g}{x}:{grid[-1]:g}{x}:{step:g}{x}"
    argv = ["zkjepsen", "sweep", "--recipe", s["recipe"], "--nemesis", axis["fault"],
            "--over", over, "--runs", str(s["runs"]), "--time-limit", f"{s['time_limit_s']:g}",
            "--interval", f"{s['interval_s']:g}", "--clients", str(s["clients"]),
            "--nodes", str(s["nodes"]), "--seed", str(s["seed"])]  # fmt: skip
    for k, v in sorted(s["params"].items()):
        argv += ["--param", f"{k}={v}"]
    if s.get("until_boundary"):
        argv += ["--until-boundary", f"{s['until_boundary']:g}"]
    return shlex.join([*argv, "--parallel", "1"])


def current(measured: dict, carried: dict, notes: list[tuple[str, str]] | None = None) -> str:
    lines = [BEGIN, ""]
    for q in QUESTIONS:
        lines += table(q, measured, carried)
    lines += boundaries_table(read_boundary_notes() if notes is None else notes)
    lines += hunt_table(read_hunt_notes())
    return "\n".join([*lines, END])


def rewritten(text: str, measured: dict | None = None) -> str:
    if measured is None:
        measured = json.loads(MEASURED.read_text()) if MEASURED.exists() else {}
    carried = json.loads(CARRIED.read_text())
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + current(measured, carried) + text[end:]


def main(argv: list[str]) -> int:
    text = FINDINGS.read_text()
    if "--boundary-row" in argv:  # a block row from a sweep folder, to paste into a note
        folder = Path(argv[argv.index("--boundary-row") + 1])
        print(json.dumps(row_from_sweep(folder), indent=1, ensure_ascii=False))
        return 0
    if "--check" in argv:
        ok = rewritten(text) == text
        print("current" if ok else "findings.md's current tables are not what the data renders")
        return 0 if ok else 1
    if "--run" in argv:
        run_matrices([a for a in argv if not a.startswith("--")])
    new = rewritten(text, refresh_measured())
    FINDINGS.write_text(new)
    print(f"wrote {len(QUESTIONS)} tables into {FINDINGS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
