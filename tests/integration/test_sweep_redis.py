"""`zkjepsen sweep` against real Redis: two points of redis-setnx's clock lead (no lead, and a
lead of three lock timeouts), one run each; the folder, the record, the curve and the page;
`--resume` of a finished sweep runs nothing again, `merge` renders it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zkjepsen.report.boundary import Point, estimate

pytestmark = pytest.mark.integration

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
SWEEP = [
    "sweep", "--recipe", "redis-setnx", "--nemesis", "clock-skew-client",
    "--over", "offset_s=0:12:12", "--runs", "1", "--clients", "2", "--time-limit", "10",
    "--interval", "2",
]  # fmt: skip


def zkj(*argv: str, timeout: float = 900) -> tuple[int, str]:
    p = subprocess.run([*ZKJEPSEN, *argv], env=os.environ, capture_output=True, text=True,
                       timeout=timeout)  # fmt: skip
    return p.returncode, p.stdout + p.stderr


def test_a_two_point_sweep_keeps_its_runs_and_finds_the_break(redis_image, tmp_path: Path):
    folder = tmp_path / "sw"
    code, out = zkj(*SWEEP, "--store", str(folder), "--json", str(tmp_path / "r.json"))
    assert code == 0, out
    record = json.loads((folder / "sweep-runs.json").read_text())
    assert sorted((r["point"], r["seed"]) for r in record["runs"]) == [(0, 1), (12, 1)]
    for r in record["runs"]:  # every run kept in the sweep's folder, with its schedule
        run = folder / r["store"]
        assert (run / "history.jsonl").is_file() and (run / "schedule.json").is_file()
        spec = json.loads((run / "test.json").read_text())
        offsets = {f["params"]["offset_s"] for f in spec["generator"] if "fault" in f}
        assert offsets == {r["point"]}, spec["generator"]
    res = json.loads((tmp_path / "r.json").read_text())
    assert res == json.loads((folder / "sweep.json").read_text())
    by = {p["magnitude"]: p for p in res["points"]}
    assert set(by) == {0, 12} and all(p["runs"] == 1 for p in by.values())
    # A run the load left unknown (a client that never initialized, a lead never seen) says
    # nothing; a judged one must read as the lock's flaw says: a 12 s lead on a 4 s lock
    # steals it, no lead never does.
    if by[12]["judged"]:
        assert by[12]["rates"]["belief"]["k"] == 1, by[12]
    if by[0]["judged"]:
        assert by[0]["rates"]["invalid"]["k"] == 0, by[0]
    for m, b in res["boundaries"].items():  # the boundary is the estimator's, of these points
        pts = [Point(p["magnitude"], p["rates"][m]["k"], p["judged"]) for p in res["points"]]
        assert b == estimate(pts, 0.5, " s").to_json(), (m, b)
    page = (folder / "sweep.html").read_text()
    for r in record["runs"]:
        assert f"{r['store']}/timeline.html" in page
    assert (folder / "sweep.png").stat().st_size > 0 or not any(p["judged"] for p in by.values())

    before = sorted(p.name for p in folder.iterdir())
    code, out = zkj(*SWEEP, "--store", str(folder), "--resume")
    assert code == 0, out
    assert "resuming: 2 runs on record" in out and "0 runs in" in out, out
    assert sorted(p.name for p in folder.iterdir()) == before
    code, out = zkj("merge", str(folder))
    assert code == 0 and "2 runs from 1 sweep folders" in out, out
