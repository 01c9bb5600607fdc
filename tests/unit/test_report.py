"""timeline.html, the plots and the verdict summaries, from synthetic histories (pure logic)."""

from __future__ import annotations

from zkjepsen.checker.lock import LockChecker
from zkjepsen.cli.matrix import cell_summary, markdown_table
from zkjepsen.history import History, Op
from zkjepsen.report import render_run
from zkjepsen.report.summary import summarise
from zkjepsen.report.timeline import render_timeline
from zkjepsen.store import RunDir

S = 1_000_000_000


def split_holder_history() -> list[dict]:
    """Client 1 holds, is paused (a fault), loses its session; client 2 acquires meanwhile."""
    recs = [
        (0, 1, "invoke", "acquire", "/l", None),
        (1, 1, "ok", "acquire", "/l", {"token": 10}),
        (
            2,
            "nemesis",
            "info",
            "pause-client",
            None,
            {"fault_id": 1, "phase": "start", "targets": ["c1"]},
        ),
        (3, 2, "invoke", "acquire", "/l", None),
        (8, 2, "ok", "acquire", "/l", {"token": 11}),
        (9, "nemesis", "info", "pause-client", None, {"fault_id": 1, "phase": "end"}),
        (9.1, 1, "event", "session-state", None, "SUSPENDED"),
        (9.2, 1, "event", "session-state", None, "LOST"),
        (10, 2, "invoke", "release", "/l", None),
        (10.5, 2, "ok", "release", "/l", None),
        (11, 1, "invoke", "release", "/l", None),
        (11.2, 1, "ok", "release", "/l", None),
    ]
    out = []
    for i, (t, p, typ, f, key, value) in enumerate(recs):
        r = {"index": i, "time": int(t * S), "process": p, "type": typ, "f": f, "value": value}
        if key:
            r["key"] = key
        if p != "nemesis":
            r["client"] = p
        out.append(r)
    return out


def test_timeline_draws_holds_faults_sessions_and_the_violation():
    recs = split_holder_history()
    results = {"lock": LockChecker().check(History([Op.from_dict(r) for r in recs])).to_json()}
    assert results["lock"]["valid"] is False
    page = render_timeline(recs, results, "t")
    assert page.count('fill="#1565c0"') == 2  # two holds
    assert "pause-client" in page and 'fill="#7e57c2"' in page  # the fault, shaded
    assert 'fill="#ffb300"' in page and 'fill="#c62828"' in page  # SUSPENDED, then LOST
    assert page.count('stroke="#d50000"') == 1  # one violation frame
    assert "faults active: pause-client" in page
    assert "<script src" not in page and "http" not in page.split("<svg", 1)[0]  # self-contained


def test_render_run_writes_three_files(tmp_path):
    recs = split_holder_history()
    paths = render_run(RunDir(tmp_path), recs, {})
    assert sorted(p.name for p in paths) == ["latency.png", "rate.png", "timeline.html"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_summary_names_clients_window_and_fault():
    recs = split_holder_history()
    res = LockChecker().check(History([Op.from_dict(r) for r in recs])).to_json()
    line = summarise(res)
    assert line.startswith("1 belief overlaps; first: clients [1, 2] at 8.00s-")
    assert "during pause-client" in line


def test_matrix_cells_count_runs_and_fencing():
    run = {
        "valid": False,
        "store": "s",
        "results": {"lock": {"valid": False, "belief_overlap_count": 2, "effect_overlap_count": 0}},
    }
    ok = {"valid": True, "store": "t", "results": {"lock": {"valid": True}}}
    cell = cell_summary([run, ok, run])
    assert (cell["runs"], cell["invalid"], cell["belief"], cell["effect"]) == (3, 2, 2, 0)
    md = markdown_table({"kazoo|pause-client": cell}, ["kazoo"], ["pause-client"], "# m")
    assert cell["rate"] == "2/3 (67 %, 95 % CI 21-94 %)"
    assert "| kazoo | 2/3 (67 %, 95 % CI 21-94 %) invalid (belief 2, effect 0, half-done 0) |" in md


def _ops(recs):
    return [
        Op.from_dict(
            {"index": i, "time": int(t * S), "process": p, "type": typ, "f": f, "value": v}
        )
        for i, (t, p, typ, f, v) in enumerate(recs)
    ]


def test_liveness_flags_a_lock_that_stops_granting_after_the_heal():
    from zkjepsen.checker.liveness import LivenessChecker

    fault = {"fault_id": 1, "phase": "start", "targets": ["c1"]}
    stuck = _ops(
        [
            (0, 1, "invoke", "acquire", None),
            (1, 1, "ok", "acquire", None),
            (2, "nemesis", "info", "packet-loss", fault),
            (4, "nemesis", "info", "packet-loss", {**fault, "phase": "end"}),
            (10, 2, "invoke", "acquire", None),
            (20, 2, "fail", "acquire", None),
        ]
    )
    res = LivenessChecker(grace_s=5).check(stuck)
    assert res.valid is False and res.details["stuck"][0]["clients"] == [2]
    progressing = (
        stuck[:-1] + _ops([(15, 2, "ok", "acquire", None), (20, 2, "invoke", "release", None)])[:2]
    )
    assert LivenessChecker(grace_s=5).check(progressing).valid is True
    short = stuck[:-2] + _ops([(9.5, 2, "invoke", "acquire", None)])
    res = LivenessChecker(grace_s=5).check(short)
    # too short a quiet period to judge progress: no liveness claim either way, and it says so
    assert res.valid is True and res.details["judged"] is False
    assert "too short to judge" in res.details["reason"]


def test_liveness_flags_a_stall_that_a_late_grant_ends():
    """Waiters that asked before the heal and never ask again (an orphan node ahead of them),
    freed only by a harness timeout long after: stuck, though grants follow."""
    from zkjepsen.checker.liveness import LivenessChecker

    fault = {"fault_id": 1, "phase": "start", "targets": ["c1"]}
    recs = [
        (0, 1, "invoke", "acquire", None),
        (1, 1, "ok", "acquire", None),
        (1.5, 1, "invoke", "release", None),  # the lock is free: only the orphan blocks
        (1.6, 1, "ok", "release", None),
        (2, "nemesis", "info", "proxy-lose-create", fault),
        (3, 2, "invoke", "acquire", None),
        (4, "nemesis", "info", "proxy-lose-create", {**fault, "phase": "end"}),
        (60, 2, "ok", "acquire", None),
        (61, 2, "invoke", "release", None),
    ]
    res = LivenessChecker(grace_s=5).check(_ops(recs))
    assert res.valid is False and res.details["stuck"][0]["clients"] == [2]
    assert "waited all along" in res.details["stuck"][0]["reason"]
    quick = [r if r[0] != 60 else (12, 2, "ok", "acquire", None) for r in recs]
    assert LivenessChecker(grace_s=5).check(_ops(quick)).valid is True


def test_liveness_flags_a_stall_of_clients_that_keep_timing_out_and_asking_again():
    """A leaked node at the head times out every short acquire (kazoo issue 732): each attempt
    lasts 0.5 s, the next follows at once, no grant for 30 s, then one when its session ends."""
    from zkjepsen.checker.liveness import LivenessChecker

    fault = {"fault_id": 1, "phase": "start", "targets": ["c1"]}
    recs = [
        (0, 1, "invoke", "acquire", None),
        (1, 1, "ok", "acquire", None),
        (1.5, 1, "invoke", "release", None),  # the leaked node blocks, not client 1's hold
        (1.6, 1, "ok", "release", None),
        (2, "nemesis", "info", "proxy-drop-request", fault),
        (4, "nemesis", "info", "proxy-drop-request", {**fault, "phase": "end"}),
    ]
    t = 3.0
    while t < 40:
        recs += [(t, 2, "invoke", "acquire", None), (t + 0.5, 2, "fail", "acquire", None)]
        t += 0.6
    recs += [(41, 2, "invoke", "acquire", None), (41.2, 2, "ok", "acquire", None)]
    res = LivenessChecker(grace_s=5).check(_ops(sorted(recs, key=lambda r: r[0])))
    assert res.valid is False and res.details["stuck"][0]["clients"] == [2]
    # Attempts 3 s apart are not "asking all along": no stall is claimed from them.
    sparse = [r for r in recs if r[1] != 2 or r[0] >= 41]
    sparse += [
        (t, 2, kind, "acquire", None)
        for t0 in range(5, 40, 3)
        for t, kind in ((t0, "invoke"), (t0 + 0.5, "fail"))
    ]
    assert LivenessChecker(grace_s=5).check(_ops(sorted(sparse, key=lambda r: r[0]))).valid


def test_plots_of_a_run_with_no_completed_op_warn_nothing(tmp_path) -> None:
    """An empty legend is a matplotlib UserWarning on the console of `test` (issue 40)."""
    import warnings

    from zkjepsen.report.plots import write_plots
    from zkjepsen.store import RunDir

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_plots(RunDir(tmp_path), [])


def test_an_image_build_says_each_phase_and_is_never_silent() -> None:
    """docker/image.Heartbeat: a phase is a line at once; a tool's own output is not, but a
    phase that lasts gets a `still ...` line with the latest of it (issue 40)."""
    import time

    from zkjepsen.docker.image import Detail, Heartbeat

    lines: list[str] = []
    with Heartbeat(lines.append, every_s=1.0) as progress:
        progress("debootstrap bookworm")
        progress(Detail("I: Retrieving Packages"))
        assert len(lines) == 1 and lines[0].endswith("debootstrap bookworm")
        deadline = time.monotonic() + 30  # a bounded wait: the beat comes after ~1-2 s
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    assert lines[1].endswith("still debootstrap bookworm: I: Retrieving Packages"), lines
