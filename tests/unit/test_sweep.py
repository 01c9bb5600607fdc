"""`zkjepsen sweep`'s axis, its points' specs, its record and its result (no Docker: the runs
are records made by hand; the real sweep is tests/integration/test_sweep.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zkjepsen.cli import main
from zkjepsen.errors import BadInput
from zkjepsen.nemesis.recorded import read_items
from zkjepsen.report import sweep as rs
from zkjepsen.report.site import read_store
from zkjepsen.report.site_pages import write_site
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec
from zkjepsen.run.sweep import MAX_POINTS, lock_timing, parse_over, point_spec


def settled(**kw) -> TestSpec:
    spec = TestSpec(**{"time_limit_s": 20.0, "interval_s": 3.0, **kw})
    validate_spec(spec)
    return spec


SETNX = {"recipe": "redis-setnx", "nemesis": ["clock-skew-client"]}


# ---- the axis -------------------------------------------------------------------------------
def test_a_plain_range_includes_its_stop_and_names_its_points():
    axis = parse_over("offset_s=0:12:2", "clock-skew-client", settled(**SETNX))
    assert axis.grid == (0, 2, 4, 6, 8, 10, 12)
    assert (axis.relative, axis.grain, axis.label(4), axis.value(4)) == (False, 1.0, "4", 4)


def test_multiples_of_the_locks_timing():
    spec = settled(**SETNX, params={"lock_ttl_s": 2.0})
    axis = parse_over("offset_s=0.5x:3x:0.5x", "clock-skew-client", spec)
    assert axis.timing_s == 2.0 and axis.value(1.5) == 3 and axis.label(1.5) == "1.5x"
    assert axis.grain == 0.5  # a whole second is half the TTL
    kazoo = settled(recipe="kazoo", nemesis=["pause-client"], session_timeout_s=4.0)
    axis = parse_over("duration=0.5x:2x:0.25x", "pause-client", kazoo)
    assert axis.timing_s == 4.0 and axis.value(0.75) == 3.0
    assert lock_timing(kazoo) == (4.0, "its session timeout")


@pytest.mark.parametrize(
    "over,fault,words",
    [
        ("rate=1:4:1", "clock-skew-client", ["does not take rate", "offset_s, duration"]),
        ("hold_s=1:2:1", "pause-client", ["does not take hold_s", "duration"]),
        ("offset_s=12:0:2", "clock-skew-client", ["backwards"]),
        ("offset_s=0:12:-2", "clock-skew-client", ["backwards"]),
        ("offset_s=0:12:0", "clock-skew-client", ["step of 0"]),
        ("offset_s=4:4:1", "clock-skew-client", ["empty range"]),
        ("offset_s=", "clock-skew-client", ["NAME=START:STOP:STEP"]),
        ("offset_s=0:12", "clock-skew-client", ["START:STOP:STEP"]),
        ("offset_s=0:x:1", "clock-skew-client", ["mixes"]),
        ("offset_s=0:nan:1", "clock-skew-client", ["not a number"]),
        ("offset_s=0:1000:1", "clock-skew-client", [f"at most {MAX_POINTS}"]),
        ("offset_s=0:3:0.5", "clock-skew-client", ["whole seconds"]),
        ("offset_s=0.1x:1x:0.1x", "clock-skew-client", ["whole seconds"]),
        ("rate=1x:3x:1x", "clock-rate-client", ["not a length of time"]),
        ("rate=0:3:1", "clock-rate-client", ["rate"]),
        ("rate=0.5:2:0.5", "clock-rate-client", ["slow clock to a fast one", "at or below 1"]),
        ("duration=-2:2:1", "clock-skew-client", ["cannot last"]),
    ],
)
def test_bad_axes_are_one_sentence(over, fault, words):
    with pytest.raises(BadInput) as e:
        parse_over(over, fault, settled(recipe="redis-setnx", nemesis=[fault]))
    for w in words:
        assert w in str(e.value), str(e.value)


def test_a_fast_clock_on_one_redlock_master_is_an_axis():
    # clock-rate-leader is refused on Redlock (nobody leads); clock-rate-one aims at one master
    redlock = settled(recipe="redlock", nemesis=["clock-rate-one"], clients=5)
    axis = parse_over("rate=1.5:4.5:1", "clock-rate-one", redlock)
    assert axis.grid == (1.5, 2.5, 3.5, 4.5) and axis.value(2.5) == 2.5


def test_a_slow_clock_is_an_axis_read_falling():
    # a rate below 1 breaks more as it falls; 1 itself is the point of no fault
    spec = settled(recipe="redis-setnx", nemesis=["clock-rate-client"])
    slow = parse_over("rate=0.25:1.0:0.25", "clock-rate-client", spec)
    assert slow.grid == (0.25, 0.5, 0.75, 1.0) and slow.falling and slow.value(0.25) == 0.25
    assert not parse_over("rate=1.0:2.0:0.5", "clock-rate-client", spec).falling
    assert not parse_over("offset_s=0:2:1", "clock-skew-client", settled(**SETNX)).falling


def test_x_where_the_lock_has_no_timing_is_refused():
    pg = settled(recipe="pg-advisory", nemesis=["pause-client"], clients=3)
    with pytest.raises(BadInput, match="no timing of its own"):
        parse_over("duration=0.5x:2x:0.5x", "pause-client", pg)
    assert parse_over("duration=1:3:1", "pause-client", pg).grid == (1, 2, 3)


# ---- the points' specs ----------------------------------------------------------------------
def test_every_fault_of_a_points_schedule_carries_its_magnitude():
    base = settled(**SETNX, time_limit_s=40.0)
    axis = parse_over("offset_s=0:12:4", "clock-skew-client", base)
    specs = {m: point_spec(base, axis, m, 3) for m in axis.grid}
    for m, spec in specs.items():
        validate_spec(spec)  # what each run will be given is a valid run
        faults = [i for i in read_items(spec.generator) if hasattr(i, "f")]
        assert faults and all(f.params == {"offset_s": int(m)} for f in faults)
        assert spec.seed == 3 and spec.name.endswith(f"offset_s-{m:g}")
    # the same seed: the same schedule but for the magnitude (the points differ in it alone)
    shapes = {
        json.dumps([{k: v for k, v in t.items() if k != "params"} for t in s.generator])
        for s in specs.values()
    }
    assert len(shapes) == 1
    assert base.generator is None and base.name is None  # the base is left as it was


def test_a_duration_axis_sets_the_faults_length():
    base = settled(recipe="kazoo", nemesis=["pause-client"], time_limit_s=40.0)
    axis = parse_over("duration=0.5x:1.5x:0.5x", "pause-client", base)
    spec = point_spec(base, axis, 1.5, 1)
    durations = {i.duration for i in read_items(spec.generator) if hasattr(i, "f")}
    assert durations == {6.0}
    assert all(i.trigger is not None for i in read_items(spec.generator) if hasattr(i, "f"))


# ---- the command: bad input before anything is created --------------------------------------
@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    return tmp_path


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--over", "rate=1:2:1"], ["does not take rate"]),
        (["--over", "offset_s=8:0:2"], ["backwards"]),
        (["--over", "offset_s=0:8:0"], ["step of 0"]),
        (["--over", "offset_s=0:400:1"], ["at most 40"]),
        (["--over", "offset_s=0:8:2", "--nemesis", "pause-client,kill-client"], ["one name"]),
        (["--over", "offset_s=0:8:2", "--nemesis", "none"], ["needs a fault"]),
        (["--over", "offset_s=0:8:2", "--resume"], ["holds no sweep-runs.json"]),
    ],
)
def test_the_command_refuses_before_anything_exists(here, capsys, extra, words):
    args = ["sweep", "--recipe", "redis-setnx", "--nemesis", "clock-skew-client", *extra]
    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    assert e.value.code == 254, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    assert list(here.iterdir()) == [], "bad input must not create anything"


def test_a_sweep_folder_on_record_is_not_overwritten(here, capsys):
    folder = here / "sw"
    rs.write_record(folder, settings(), [], {})
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--recipe", "redis-setnx", "--nemesis", "clock-skew-client",
              "--over", "offset_s=0:8:2", "--store", str(folder)])  # fmt: skip
    assert e.value.code == 254 and "--resume continues it" in capsys.readouterr().err


# ---- the record and the result --------------------------------------------------------------
def settings(**kw) -> dict:
    axis = {"fault": "clock-skew-client", "param": "offset_s", "relative": False,
            "timing_s": None, "grid": [0, 4, 8], "grain": 1.0}  # fmt: skip
    return {
        "recipe": "redis-setnx", "backend": "redis", "workload": "lock", "nodes": 1,
        "clients": 3, "time_limit_s": 15.0, "session_timeout_s": 4.0, "interval_s": 3.0,
        "params": {}, "fault_trigger": None, "seed": 1, "runs": 3, "target_rate": 0.5,
        "until_boundary": None, "services": None, "axis": axis, **kw,
    }  # fmt: skip


def run(point: float, seed: int, valid, kinds=(), store: str = "") -> dict:
    lock = {"valid": False if kinds else True}
    if kinds:
        lock["violations"] = [{"kind": k} for k in kinds]
    return {"point": point, "seed": seed, "valid": valid, "engine": "local",
            "results": {"valid": valid, "lock": lock}, "store": store}  # fmt: skip


def test_the_result_counts_each_measure_on_judged_runs_only(tmp_path):
    runs = [
        run(0, 1, True), run(0, 2, True), run(0, 3, "unknown"),
        run(4, 1, True), run(4, 2, False, ["belief-overlap"]), run(4, 3, True),
        run(8, 1, False, ["belief-overlap"]), run(8, 2, False, ["belief-overlap"]),
        run(8, 3, False, ["belief-overlap"]),
        run(6, 1, False, ["belief-overlap"]),  # a bisected point
    ]  # fmt: skip
    rs.write_record(tmp_path, settings(), runs, {"started": "2026-11-28 17:00 UTC"})
    res = rs.result(rs.read_record(tmp_path))
    by = {p["magnitude"]: p for p in res["points"]}
    assert by[0]["judged"] == 2 and by[0]["unknown"] == 1 and by[0]["rates"]["invalid"]["k"] == 0
    assert by[4]["rates"]["invalid"]["k"] == 1 and by[4]["rates"]["invalid"]["lo"] > 0
    assert by[6]["bisected"] and not by[8]["bisected"]
    assert res["boundaries"]["invalid"]["at_most"] == 4
    md = rs.markdown(res)
    assert "| 6 (bisected) | 1 |" in md and "1/3 (6-79 %)" in md


def test_a_point_no_run_was_judged_at_says_why_and_the_load_is_kept(tmp_path):
    axis = {"fault": "clock-rate-client", "param": "rate", "relative": False,
            "timing_s": None, "grid": [1.0, 1.5, 2.0], "grain": 0.001}  # fmt: skip
    power = {"valid": "unknown", "reason": "no fault landed where it could break the lock"}
    runs = [{**run(p, seed, "unknown"), "load": 20.5} for p, seed in ((1.0, 1), (1.0, 2), (1.5, 1))]
    for r in runs:
        r["results"]["power"] = power
    runs += [{**run(1.5, 2, False, ["belief-overlap"]), "load": 7.25}, run(2.0, 1, True)]
    rs.write_record(tmp_path, settings(axis=axis, runs=2), runs, {})
    res = rs.result(rs.read_record(tmp_path))
    by = {p["magnitude"]: p for p in res["points"]}
    assert by[1.0]["no_fault"] and "a rate of 1 is no fault" in by[1.0]["no_fault"]
    assert by[1.5]["no_fault"] is None and by[2.0]["no_fault"] is None
    assert by[1.0]["unknown_why"] == ["no fault landed where it could break the lock"]
    assert res["load"] == {"min": 7.25, "max": 20.5, "runs": 4}  # the run without one: apart
    md = rs.markdown(res)
    assert "- 1: every run unknown: a rate of 1 is no fault" in md  # named, not a gap
    assert "1.5: every run unknown" not in md  # judged there: an ordinary row
    assert "load average 7.25-20.5 as the runs ended (4 runs said)" in md
    assert rs.no_fault({"param": "offset_s"}, 0) and not rs.no_fault({"param": "offset_s"}, 2)


def test_a_record_is_checked_whole(tmp_path):
    rs.write_record(tmp_path, settings(), [run(0, 1, True), run(0, 1, True)], {})
    with pytest.raises(BadInput, match="each run once"):
        rs.read_record(tmp_path)
    rs.write_record(tmp_path, settings(), [run(0, 9, True)], {})
    with pytest.raises(BadInput, match="a seed the sweep ran"):
        rs.read_record(tmp_path)
    bad = run(0, 1, True)
    bad["valid"] = False
    rs.write_record(tmp_path, settings(), [bad], {})
    with pytest.raises(BadInput, match="its verdict"):
        rs.read_record(tmp_path)
    (tmp_path / rs.RECORD).write_text(json.dumps({"settings": {}, "runs": []}))
    with pytest.raises(BadInput, match="sweep-runs.json"):
        rs.read_record(tmp_path)


def test_merge_joins_one_sweeps_folders_and_refuses_another_sweep(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    rs.write_record(a, settings(), [run(0, 1, True)], {})
    rs.write_record(b, settings(runs=5), [run(4, 1, False, ["belief-overlap"])], {})
    doc = rs.merge_records([rs.read_record(a), rs.read_record(b)])
    assert len(doc["runs"]) == 2 and doc["settings"]["runs"] == 5
    with pytest.raises(BadInput, match="two of the folders"):
        rs.merge_records([rs.read_record(a), rs.read_record(a)])
    rs.write_record(b, settings(recipe="redlock"), [], {})
    with pytest.raises(BadInput, match="recipe differ"):
        rs.merge_records([rs.read_record(a), rs.read_record(b)])


def test_merge_renders_a_sweep_folder(tmp_path, capsys):
    rs.write_record(tmp_path, settings(), [run(0, 1, True), run(8, 1, False, ["belief-overlap"])],
                    {})  # fmt: skip
    with pytest.raises(SystemExit) as e:
        main(["merge", str(tmp_path)])
    assert e.value.code == 0, capsys.readouterr().err
    out = json.loads((tmp_path / "sweep.json").read_text())
    assert out["boundaries"]["invalid"]["at_most"] == 8
    assert (tmp_path / "sweep.png").stat().st_size > 0
    assert "sweep redis-setnx" in (tmp_path / "sweep.html").read_text()


def test_the_site_has_a_page_per_sweep_linking_its_runs(tmp_path):
    from stored_folder import stored_spec  # a run folder the site reads

    store = tmp_path / "store"
    folder = store / "sw"
    run_dir = folder / "sweep-x" / "20261128T170000"
    run_dir.mkdir(parents=True)
    (run_dir / "test.json").write_text(json.dumps(stored_spec()))
    rs.write_record(folder, settings(), [run(4, 1, True, store=str(run_dir))], {})
    site = read_store(store, lambda d: None)
    assert [w.rel for w in site.sweeps] == ["sw"]
    write_site(site, tmp_path / "out")
    page = (tmp_path / "out" / "sweep" / "0.html").read_text()
    assert 'href="../runs/sw/sweep-x/20261128T170000/index.html"' in page
    assert 'href="sweep/0.html"' in (tmp_path / "out" / "index.html").read_text()


def test_site_record_paths_are_relative(tmp_path):
    folder = tmp_path / "sw"
    rs.write_record(folder, settings(), [run(0, 1, True, store=str(folder / "t" / "1"))], {})
    raw = json.loads((folder / rs.RECORD).read_text())
    assert raw["runs"][0]["store"] == str(Path("t") / "1")


# ---- --until-boundary: the bisection loop, its runs faked (which points it asks for) -------
def test_until_boundary_bisects_to_the_width_on_the_axis_grain(tmp_path):
    from zkjepsen.cli.sweep import Record, refine

    base = settled(**SETNX)
    axis = parse_over("offset_s=0:12:4", "clock-skew-client", base)
    s = settings(axis=axis.to_json(), runs=2, target_rate=0.8)  # 0/2 reads safe at 80 %
    record = Record(tmp_path, s, [], {})
    asked: list[float] = []

    def fake_run(jobs: list) -> list:  # a lock that breaks once the lead passes 5 s
        for job in jobs:
            asked.append(job.tag)
            broken = job.tag > 5
            kinds = ["belief-overlap"] if broken else []
            record.runs.append(run(job.tag, job.spec.seed, not broken, kinds))
        return jobs

    fake_run([type("J", (), {"tag": m, "spec": TestSpec(seed=k)}) for m in axis.grid
              for k in (1, 2)])  # fmt: skip
    asked.clear()
    refine(record, base, axis, 1.0, 2, 1, fake_run)
    assert asked == [6, 6, 5, 5]  # (4, 8] -> 6 broken -> (4, 6] -> 5 safe -> (5, 6]: grain
    res = rs.result({"settings": s, "runs": record.runs})
    assert res["boundaries"]["invalid"]["above"] == 5
    assert res["boundaries"]["invalid"]["at_most"] == 6
