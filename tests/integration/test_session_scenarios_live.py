"""The CURATOR-604 and kazoo-291 scenarios do what they say, shown by their histories: real
ensembles, real client containers, the real Curator 5.4.0 for the Java row.

The four runs are `zkjepsen scenario run`s, two at a time (a module-scoped fixture, `runs`);
each test reads its own run's folder."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkjepsen.reproduce.scenarios import get_scenario

# (scenario, recipe): the runs the tests below read, the longest first.
RUNS = [
    ("stale-ephemeral-quick-reconnect", "curator-java"),
    ("stale-ephemeral-quick-reconnect", "kazoo"),
    ("reentrant-release", "kazoo-291"),
    ("reentrant-release", "curator"),
]


@dataclass
class Run:
    """One scenario run as its folder has it (what `run_test` returns of it)."""

    store_dir: Path
    valid: bool | str
    results: dict


@pytest.fixture(scope="module")
def runs(zk_image, tmp_path_factory) -> dict[tuple[str, str], Run]:
    """Each (scenario, recipe) of RUNS with seed 1 (its spec and schedule as the catalogue has
    them), two at a time, each in a store of its own."""
    root = tmp_path_factory.mktemp("scenarios")

    def one(pair: tuple[str, str]) -> Run:
        name, recipe = pair
        store = root / f"{name}-{recipe}"
        p = subprocess.run(
            [sys.executable, "-m", "zkjepsen.cli", "scenario", "run", name, "--recipe", recipe,
             "--seed", "1", "--store", str(store)],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        folders = list(store.glob("*/latest"))
        assert len(folders) == 1, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
        folder = folders[0].resolve()
        results = json.loads((folder / "results.json").read_text())
        return Run(folder, results["valid"], results)

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(RUNS, pool.map(one, RUNS), strict=True))


def _records(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]


def _held_client(run):
    sched = json.loads((run.store_dir / "schedule.json").read_text())
    (hold,) = sched["faults"]
    c = hold["fired"]["client"]
    hist = _records(run.store_dir / "clients" / f"c{c}" / f"client-{c}.jsonl")
    sessions = [(r["time"], r["value"]["session_id"]) for r in hist if r["f"] == "session"]
    before = [s for t, s in sessions if t < hold["start_ns"]][-1]
    after = [s for t, s in sessions if t > hold["start_ns"]]
    events = _records(run.store_dir / "clients" / f"c{c}" / "proxy-events.jsonl")
    return hold, hist, before, after, events


def test_curator_acquires_from_a_new_session_on_its_old_sessions_node(runs):
    s = get_scenario("stale-ephemeral-quick-reconnect")
    run = runs[s.name, "curator-java"]
    hold, hist, before, after, events = _held_client(run)
    # The proxy held the session the client had, and the client gave it up for a new one.
    held = [e for e in events if e["event"] == "session-held"]
    assert held and held[0]["session_id"] == before, (held, before)
    assert after and after[0] != before
    # The acquire that was waiting when the client was cut off (its node made by the old
    # session) completed ok after the new session came: on the old session's node.
    pending = [r for r in hist if r["f"] == "acquire" and r["type"] == "invoke"]
    start = max(r["time"] for r in pending if r["time"] < hold["start_ns"])
    done = next(
        r for r in hist if r["f"] == "acquire" and r["type"] != "invoke" and r["time"] > start
    )
    new_at = min(r["time"] for r in hist if r["f"] == "session" and r["time"] > hold["start_ns"])
    assert done["type"] == "ok" and done["time"] > new_at, done
    assert run.results["lock"]["belief_overlap_count"] >= 1, run.results["lock"]
    assert s.expect["curator-java"].judge(run.valid, run.results)[0]


def test_kazoo_keeps_its_session_through_the_same_cut_and_stays_safe(runs):
    s = get_scenario("stale-ephemeral-quick-reconnect")
    run = runs[s.name, "kazoo"]
    hold, hist, before, after, events = _held_client(run)
    assert any(e["event"] == "session-held" for e in events)  # the fault landed
    states = [
        r["value"] for r in hist if r["f"] == "session-state" and r["time"] > hold["start_ns"]
    ]
    # Cut off, then back on the same session (the LOST at the very end is the client's stop).
    assert states[: states.index("CONNECTED") + 1] == ["SUSPENDED", "CONNECTED"], states
    assert all(sid == before for sid in after)  # kazoo reconnected to the same session
    assert run.results["lock"]["valid"] is True, run.results["lock"]
    assert s.expect["kazoo"].judge(run.valid, run.results)[0]


def test_a_nested_release_splits_kazoo_20_and_not_a_counting_lock(runs):
    s = get_scenario("reentrant-release")
    for recipe, split in (("kazoo-291", True), ("curator", False)):
        run = runs[s.name, recipe]
        hist = _records(run.store_dir / "history.jsonl")
        ok = {f: sum(r["f"] == f and r["type"] == "ok" for r in hist) for f in ("acquire-nested",)}
        assert ok["acquire-nested"] >= 3, ok  # it did nest: the verdict is not vacuous
        assert (run.results["lock"]["belief_overlap_count"] >= 1) is split, run.results["lock"]
        assert s.expect[recipe].judge(run.valid, run.results)[0]
