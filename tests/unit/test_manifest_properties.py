"""Property (issue 48): a matrix's `matrix-runs.json` with any one thing wrong is refused by
`merge` and `matrix --resume` before they act (exit 254, one sentence, nothing created), or
gives the same table as the uncorrupted file where the change does not matter (an origin's text,
a run's engine, a record of a setting only the header says); never 255, never a hang, never a
table the uncorrupted record would not give.

The base is made by `matrix` itself (its runs faked, as test_fanout.py fakes them: a verdict per
(cell, seed)), unsharded and as two shards. Every field of the record is corrupted (Hypothesis
picks the path): a value of another type or out of range, the field missing, a run or a list item
twice, a run's cell or seed that the matrix never ran (another shard's, an n/a one, none), a
`valid` that is not its verdict's, a shard that is not i/N; and the file itself as a named pipe,
a directory, a link loop, a link to /dev/zero, a dangling link, bytes that are not UTF-8, a
300 MB sparse file, a document nested 2,560 levels, cut short. A `--resume` that still has runs to
do runs them with the same fake (so a run dropped from the record comes back as it was).

The counts are printed; ZKJEPSEN_MANIFEST_EXAMPLES (default 300) and ZKJEPSEN_MANIFEST_SEED
explore further.
"""

from __future__ import annotations

import copy
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hostile import DEAD_ENGINE, KINDS, Tally, examples, make_kind, run_bounded, seeded, snapshot
from hostile import refusal_wrong as refused_wrong
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkjepsen.checker import Result, Violation
from zkjepsen.docker.engine import Engine

EXAMPLES = examples("ZKJEPSEN_MANIFEST_EXAMPLES", 300)
SEEDED = os.environ.get("ZKJEPSEN_MANIFEST_SEED")
MATRIX = ["matrix", "--recipes", "kazoo,redlock", "--nemeses", "none,kill-leader", "--runs", "2"]
MANIFEST = "matrix-runs.json"
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    3,
    10**30,
    1.5,
    "",
    "x",
    "maybe",
    "unknown",
    [],
    [1],
    [3, 2],
    {},
    {"a": 1},
]


# ---- the base: what `matrix` writes --------------------------------------------------------
def verdict(cell: str, seed: int) -> tuple[Any, dict]:
    """A run's verdict, a function of (cell, seed) only: the same whenever it is run again."""
    v = [True, False, "unknown"][(len(cell) + seed) % 3]
    lock = Result(True, {})
    if v is False:
        lock = Result(False, {}, [Violation("belief", (1, 2), 10, 20, (), {"count": 1})])
    elif v == "unknown":
        lock = Result("unknown", {"reason": "no acquire succeeded"})
    parts = {"lock": lock, "liveness": Result(True, {})}
    power = {
        "valid": True,
        "line": "1 landed",
        "property": "belief",
        "per_kind": [{"kind": "kill-leader", "opportunities": 1, "violated": 0, "upper": 0.95}],
        "landed": [],
    }
    results = {**Result(v, {}, parts=parts).to_json(), "power": power}
    return v, results


def fake_run_jobs(ran: list):
    def run_jobs(jobs, engine, parallel, store_root, on_start, on_done, keep_going, *_):
        outs = []
        for i, job in enumerate(jobs):
            ran.append((job.tag, job.spec.seed))
            v, results = verdict(job.tag, job.spec.seed)
            store = Path(store_root or "store") / f"r-{job.tag.replace('|', '-')}-{job.spec.seed}"
            run = SimpleNamespace(valid=v, results=results, store_dir=store, spec=job.spec)
            outs.append(SimpleNamespace(job=job, run=run, engine="default"))
            on_done(i, outs[-1])
        return outs

    return run_jobs


def matrix(store: str, *more: str) -> tuple[int | str, str, str]:
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        return run_bounded([*MATRIX, "--store", store, "--out", f"{store}/m.md", *more])
    finally:  # an ended CLI may have set its own
        for s, h in handlers.items():
            signal.signal(s, h)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    from zkjepsen import store
    from zkjepsen.run import fanout

    ran: list = []
    monkeypatch.setattr(fanout, "run_jobs", fake_run_jobs(ran))
    monkeypatch.setattr("zkjepsen.cli.cells.prepare", lambda engine, backends=(), **kw: Engine())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    for name in ("DOCKER_CONTEXT", "ZKJEPSEN_STORE", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(store, "DEFAULT_ROOT", Path("store"))
    base = tmp_path / "base"
    base.mkdir()
    monkeypatch.chdir(base)
    for name, shard in (("st", ()), ("s1", ("--shard", "1/2")), ("s2", ("--shard", "2/2"))):
        code, _, err = matrix(name, *shard)
        assert code == 0, err
    monkeypatch.chdir(tmp_path)
    return SimpleNamespace(root=tmp_path, base=base, ran=ran)


def test_the_base_record_is_read_and_merged_whole(workspace):
    """Without this, a refusal of a corrupted record could be a refusal of the base."""
    doc = json.loads((workspace.base / "st" / MANIFEST).read_text())
    assert "redlock|kill-leader" in doc["settings"]["not_applicable"]  # an n/a cell
    assert {r["valid"] for r in doc["runs"]} == {True, False, "unknown"}
    whole = table(workspace.base / "st" / "m.json")
    code, _, err = run_bounded(["merge", "base/s1", "base/s2", "--out", "o/m.md"])
    assert code == 0, err
    assert table(Path("o/m.json")) == whole
    workspace.ran.clear()
    code, _, err = run_bounded([*MATRIX, "--store", "base/st", "--out", "o2/m.md", "--resume"])
    assert code == 0 and workspace.ran == [], err  # everything on record: nothing run
    assert table(Path("o2/m.json")) == whole


# ---- corruptions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corruption:
    store: str  # which base store: st, s1 or s2
    what: str
    doc_change: Any = None  # doc -> None (changes it in place)
    kind: str | None = None  # a hostile kind of file instead
    dropped: tuple | None = None  # the path dropped, if one was

    def __repr__(self) -> str:
        return f"{self.store}: {self.what}"


def paths(doc: Any, at: tuple = ()) -> list[tuple]:
    """Every field's path in the record; inside a verdict table, its verdicts only (the rest
    of a verdict is evidence, results.json's own schema)."""
    out = [at] if at else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if _evidence(at, k, v):
                continue
            out += paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*at, i))
    return out


def _a_part(at: tuple) -> bool:
    """A part of a run's verdict as a whole (`runs.3.results.lock`): its dropping or doubling
    is an edit of the evidence (results.json's own schema), not of the matrix's record."""
    return "results" in at and len(at) - at.index("results") == 2 and at[-1] != "valid"


def _evidence(at: tuple, key: Any, value: Any) -> bool:
    """Below a run's `results`: all but its `valid` and its parts' (a part: a table with one)."""
    if "results" not in at:
        return False
    depth = len(at) - at.index("results")  # 1: the verdict table, 2: one of its parts
    if key == "valid":
        return False
    return not (depth == 1 and isinstance(value, dict) and "valid" in value)


def _get(doc: Any, at: tuple) -> Any:
    for k in at:
        doc = doc[k]
    return doc


def _set(at: tuple, value: Any):
    def change(doc: Any) -> None:
        _get(doc, at[:-1])[at[-1]] = copy.deepcopy(value)

    return change


def _drop(at: tuple):
    def change(doc: Any) -> None:
        parent = _get(doc, at[:-1])
        del parent[at[-1]]

    return change


def _twice(at: tuple):
    def change(doc: Any) -> None:
        parent = _get(doc, at[:-1])
        if isinstance(parent, list):
            parent.append(copy.deepcopy(parent[at[-1]]))
        else:
            parent[f"{at[-1]}_again"] = copy.deepcopy(parent[at[-1]])

    return change


def _base_doc(store: str) -> dict:
    return json.loads((BASE_DIR[0] / store / MANIFEST).read_text())


BASE_DIR: list[Path] = [Path()]  # set by the test: the base stores' folder


def field_corruptions(store: str) -> st.SearchStrategy[Corruption]:
    doc = _base_doc(store)
    where = st.sampled_from(paths(doc))

    def named(at: tuple) -> str:
        return ".".join(str(k) for k in at)

    wrong = st.tuples(where, st.sampled_from(HOSTILE_VALUES)).map(
        lambda av: Corruption(
            store,
            f"{named(av[0])} = {av[1]!r}",
            _set(*av),
            dropped=av[0] if av == (("runs",), []) else None,  # no run finished: cut short
        )
    )
    whole = st.sampled_from([at for at in paths(doc) if not _a_part(at)])
    gone = whole.map(lambda at: Corruption(store, f"no {named(at)}", _drop(at), dropped=at))
    twice = whole.filter(lambda at: len(at) >= 2).map(
        lambda at: Corruption(store, f"{named(at)} twice", _twice(at))
    )
    n = len(doc["runs"])
    cells = [
        "kazoo|none",
        "kazoo|kill-leader",
        "redlock|none",
        "redlock|kill-leader",
        "nosuch|none",
        "kazoo|none|x",
    ]
    cell = st.tuples(st.integers(0, n - 1), st.sampled_from(cells)).map(
        lambda kc: Corruption(
            store, f"runs.{kc[0]}.cell = {kc[1]}", _set(("runs", kc[0], "cell"), kc[1])
        )
    )
    seed = st.tuples(st.integers(0, n - 1), st.sampled_from([0, 1, 2, 3, -5])).map(
        lambda ks: Corruption(
            store, f"runs.{ks[0]}.seed = {ks[1]}", _set(("runs", ks[0], "seed"), ks[1])
        )
    )
    shard = st.sampled_from([[3, 2], [0, 1], [1], [1, 2, 3], [2, 2], [1, 1], ["1", "2"]]).map(
        lambda s: Corruption(store, f"shard = {s}", _set(("shard",), s))
    )
    return st.one_of(wrong, gone, twice, cell, seed, shard)


def corruptions() -> st.SearchStrategy[Corruption]:
    stores = st.sampled_from(["st", "s1", "s2"])
    kinds = st.tuples(stores, st.sampled_from([*KINDS, "cut"])).map(
        lambda sk: Corruption(sk[0], f"the file is {sk[1]}", kind=sk[1])
    )
    return st.one_of(stores.flatmap(field_corruptions), kinds)


def apply(c: Corruption, folder: Path) -> None:
    path = folder / MANIFEST
    if c.kind == "cut":
        text = path.read_text()
        path.write_text(text[: len(text) // 3])
    elif c.kind is not None:
        make_kind(path, c.kind, outside=BASE_DIR[0] / "st" / MANIFEST)
    else:
        doc = json.loads(path.read_text())
        c.doc_change(doc)
        path.write_text(json.dumps(doc))


def _runs_of(cells: dict) -> dict:
    return {k: c.get("runs", "n/a") for k, c in cells.items()}


# ---- running one ------------------------------------------------------------------------------
def judge(code: int | str, err: str, created: set[str], out: Path, want: Any) -> str | None:
    """Refused right, or the table `want` (the uncorrupted record's, or a cut-short one's)."""
    if code == 254:
        return refused_wrong(code, err, created)
    if code != 0:
        return refused_wrong(code, err, set())
    got = table(out) if out.exists() else None
    return None if got == want else f"exit 0 with another table: {json.dumps(got)[:300]}"


def table(out: Path) -> dict:
    """A written table's cells, but the runs' folders and the n/a cells' words: a folder is
    where the table points, and merge does not read them (a record naming another unique folder
    reads the same); why a cell is n/a is free text, as the origin's is."""
    cells = json.loads(out.read_text())
    for c in cells.values():
        c.pop("stores", None)
        if "na" in c:  # why a cell is n/a is the matrix's text, as its origin is
            c["na"] = "n/a"
    return cells


def cut_short(want: dict, c: Corruption, command: str) -> dict:
    """A run dropped from the record is a matrix cut short, not a corruption: `--resume` runs it
    again (the same table), `merge` renders one run fewer in its cell (the others unchanged)."""
    at = c.dropped
    if command == "resume" or at is None or at[0] != "runs" or len(at) > 2:
        return want
    runs = _base_doc(c.store)["runs"]
    gone = runs if len(at) == 1 else [runs[at[1]]]
    out = copy.deepcopy(want)
    for r in gone:
        out[r["cell"]]["runs"] -= 1
    return {k: v for k, v in out.items() if v.get("runs", 1) or "na" in v}


def test_corrupted_matrix_records_are_refused_or_change_nothing(workspace, request):
    import shutil

    BASE_DIR[0] = workspace.base
    tally = Tally()
    whole = table(workspace.base / "st" / "m.json")
    count = iter(range(10**9))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEEDED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(corruptions(), st.sampled_from(["merge", "resume"]))
    def one(c: Corruption, command: str) -> None:
        if command == "resume" and c.store != "st":
            command = "merge"  # a shard resumes as the unsharded one does; merge joins them
        ws = workspace.root / f"w{next(count)}"
        for name in ("st", "s1", "s2"):
            shutil.copytree(workspace.base / name, ws / name, symlinks=True)
        apply(c, ws / c.store)
        out = ws / "out" / "m.md"
        if command == "merge":
            stores = ["st"] if c.store == "st" else ["s1", "s2"]
            argv = ["merge", *(str(ws / s) for s in stores), "--out", str(out)]
        else:
            argv = [*MATRIX, "--store", str(ws / "st"), "--out", str(out), "--resume"]
        before = snapshot(ws)
        code, _, err = run_bounded(argv)
        created = snapshot(ws) - before
        if code == 0 and c.dropped is not None and c.dropped[0] == "runs" and len(c.dropped) <= 2:
            got, want = table(out.with_suffix(".json")), cut_short(whole, c, command)
            why = None if _runs_of(got) == _runs_of(want) else f"another table: {got}"
        else:
            why = judge(code, err, created, out.with_suffix(".json"), whole)
        tally.add(c.kind or c.what.split(" ")[0].split("=")[0], f"{command} with {c!r}", why)
        shutil.rmtree(ws, ignore_errors=True)

    seeded(one, "ZKJEPSEN_MANIFEST_SEED")()
    summary = tally.report(request, "matrix-runs.json corruptions")
    tally.assert_none_wrong(summary)
    assert sum(tally.tried.values()) >= EXAMPLES // 2
