"""A store as a browsable site: what `zkjepsen report STORE --out DIR` writes and `zkjepsen serve`
serves. This module reads the store (every file through the one opener, store/regular.py); the
pages are drawn by report/site_pages.py.

What it finds, walking the store without following links (a test's `latest` is a link):
- a run: a folder with a `test.json` (its spec) and, once checked, a `results.json` (its verdict);
- a test: the folder above its runs (`store/<test-name>/`): a gate's, a scenario's or a replay's
  runs are the runs of their test names;
- a matrix: a folder with a `matrix-runs.json` (read by report/manifest.py's reader, checked
  whole), whose runs are linked where they are in this store;
- a shrink: a run's `minimal/` folder (its schedule, its spec, the pytest file reproducing it);
- a sweep: a folder with a `sweep-runs.json` (report/sweep.py's reader, checked whole), its
  points' runs below it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.checker import Verdict
from zkjepsen.errors import BadInput
from zkjepsen.report import findings
from zkjepsen.report.manifest import MANIFEST
from zkjepsen.report.summary import power_line, summarise
from zkjepsen.report.sweep import RECORD as SWEEP_RECORD
from zkjepsen.report.sweep import read_record, result
from zkjepsen.store import FINISHED_FILES, REPORTS, RunDir, regular
from zkjepsen.store.regular import read_bytes as read_regular_bytes

FIX = "give a store folder written by zkjepsen (its --store)"
_NAMES = RunDir(Path("."))  # the store knows its files' names
TEST_JSON, RESULTS = _NAMES.test_json.name, _NAMES.results.name
# A run's files a reader opens from its page, copied beside it (small: the reports and JSON
# tables; the history and the servers' logs stay in the store, named on the page).
SHOWN = (*REPORTS, _NAMES.schedule.name, RESULTS, TEST_JSON)
COPY_LIMIT = 64 * regular.MIB


@dataclass
class Run:
    rel: str  # its folder relative to the store: `<test-name>/<stamp>`
    spec: dict[str, Any]
    results: dict[str, Any] | None
    files: list[str]  # what of SHOWN (and counterexample*.html) it has
    shrink: list[str] = field(default_factory=list)  # its minimal/'s files

    @property
    def test(self) -> str:
        return self.rel.rsplit("/", 1)[0] if "/" in self.rel else self.rel

    @property
    def date(self) -> str:
        stamp = self.rel.rsplit("/", 1)[-1]
        if len(stamp) >= 15 and stamp[8] == "T":  # 20261128T144056[-n]
            return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}"
        return stamp

    @property
    def verdict(self) -> str:
        if self.results is None:
            return "NOT CHECKED"
        return Verdict.of(self.results.get("valid")).word

    @property
    def power(self) -> str:
        return power_line(self.results) if self.results else ""

    def faults(self) -> str:
        nemesis = self.spec.get("nemesis") or []
        if isinstance(nemesis, str):
            return nemesis
        return "+".join(str(n) for n in nemesis) or "none"

    def parts(self) -> list[tuple[str, str, str]]:
        """(checker, its verdict word, its one line) for each part of the verdict."""
        out = []
        for name, res in (self.results or {}).items():
            if isinstance(res, dict) and "valid" in res:
                out.append((name, Verdict.of(res["valid"]).word, summarise(res)))
        return out


@dataclass
class Matrix:
    rel: str  # the folder holding matrix-runs.json, relative to the store ("" for the store)
    doc: dict[str, Any]
    runs: list[tuple[dict[str, Any], str | None]]  # each record, and its run's rel if here


@dataclass
class Sweep:
    rel: str  # the folder holding sweep-runs.json, relative to the store
    result: dict[str, Any]  # report/sweep.py's result of its record (runs' folders absolute)


@dataclass
class Store:
    root: Path
    runs: list[Run]
    matrices: list[Matrix]
    sweeps: list[Sweep] = field(default_factory=list)

    def tests(self) -> dict[str, list[Run]]:
        out: dict[str, list[Run]] = {}
        for r in self.runs:
            out.setdefault(r.test, []).append(r)
        return out


def check_store(root: Path) -> Path:
    if not str(root):
        raise BadInput(f"an empty store path names no folder; {FIX}")
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a folder"
        raise BadInput(f"{root} {what}; {FIX}")
    return root


def read_store(root: Path, check_run: Callable[[Path], None]) -> Store:
    """Every run and matrix under `root`; each run folder is first checked whole by
    `check_run` (the commands' own check of a stored run: run/stored.py, which this layer
    sits below). A bad file in it: one sentence, exit 254."""
    root = check_store(Path(root))
    runs, matrices, sweeps = [], [], []
    for here, dirs, files in os.walk(root):  # links are never followed: `latest` is one
        d = Path(here)
        dirs.sort()
        if TEST_JSON in files and d.name != _NAMES.minimal.name:
            check_run(d)
            runs.append(_run(root, d, files))
            dirs[:] = []  # a run's own folders (clients/, nodes/, minimal/) hold no runs
        if MANIFEST in files:
            matrices.append(Matrix(_rel(root, d), findings.read_manifest(d), []))
        if SWEEP_RECORD in files:
            sweeps.append(Sweep(_rel(root, d), result(read_record(d))))
    by_path = {(root / r.rel).resolve(): r.rel for r in runs}
    for m in matrices:
        m.runs = [
            (rec, by_path.get(Path(rec["store"]).resolve()) if rec["store"] else None)
            for rec in m.doc["runs"]
        ]
    if not runs:
        raise BadInput(f"{root} holds no run (no folder with a {TEST_JSON} below it); {FIX}")
    runs.sort(key=lambda r: (r.rel.rsplit("/", 1)[-1], r.rel), reverse=True)  # newest first
    return Store(root, runs, matrices, sweeps)


def _rel(root: Path, d: Path) -> str:
    return d.relative_to(root).as_posix() if d != root else ""


def _json(path: Path, what: str) -> Any:
    return regular.read_json(path, what, FIX, within=path.parent)


def _run(root: Path, d: Path, files: list[str]) -> Run:
    run = RunDir(d)
    spec = _json(run.test_json, TEST_JSON)
    results = _json(run.results, RESULTS) if RESULTS in files else None
    shown = [f for f in SHOWN if f in files]
    shown += sorted(f for f in files if f.startswith("counterexample") and f.endswith(".html"))
    minimal = run.minimal
    shrink = sorted(p.name for p in minimal.iterdir() if p.is_file()) if minimal.is_dir() else []
    if not isinstance(spec, dict) or (results is not None and not isinstance(results, dict)):
        raise BadInput(f"{d} holds a {TEST_JSON} or {RESULTS} that is not a table; {FIX}")
    return Run(_rel(root, d), spec, results, shown, shrink)


def copy_file(src: Path, dest: Path) -> None:
    """A run's file beside its page, read through the opener (bounded, regular files only, and
    never through a link that leads out of its run folder)."""
    data = read_regular_bytes(src, src.name, COPY_LIMIT, within=src.parent)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


def unfinished(run: Run) -> list[str]:
    """What a finished run would have and this one lacks (an interrupted run)."""
    return [f for f in FINISHED_FILES if f not in run.files and f != _NAMES.history.name]
