"""Engines, shards, merge, subnets and the parallel shrink, without Docker."""

from __future__ import annotations

import os
import random
import signal
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from zkjepsen.docker import resources, subnets
from zkjepsen.docker.engine import Engine, parse_engines
from zkjepsen.errors import EXIT_BAD_INPUT, BadInput
from zkjepsen.report import findings

S = 1_000_000_000


# ---- engines ---------------------------------------------------------------------------------
def test_engines_are_named_as_docker_users_name_them(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert Engine.parse("default") == Engine() == Engine.parse("")
    assert Engine.parse("unix:///tmp/x/docker.sock").host == "unix:///tmp/x/docker.sock"
    assert Engine.parse("tcp://10.1.2.3:2376").host == "tcp://10.1.2.3:2376"
    assert Engine.parse("ssh://me@build-7").host == "ssh://me@build-7"
    # However it was named, the machine's default engine is recorded as "default".
    assert Engine.parse("unix:///var/run/docker.sock").key == "default"
    assert Engine.parse("unix:///tmp/x/docker.sock").key == "unix:///tmp/x/docker.sock"
    for bad in ("http://h:2375", "unix://", "no-such-context-zkjepsen"):
        with pytest.raises(BadInput):
            Engine.parse(bad)


def test_engines_on_other_machines_are_refused_in_one_sentence_pointing_at_cluster():
    assert Engine.parse("unix:///tmp/x.sock").local
    assert Engine.parse("tcp://127.0.0.1:2375").local
    assert Engine.parse("ssh://localhost").local
    far = Engine.parse("tcp://203.0.113.7:2376")  # TEST-NET-3: nobody's address
    assert not far.local
    with pytest.raises(BadInput) as e:
        far.require_local()
    assert e.value.exit_code == EXIT_BAD_INPUT
    msg = str(e.value)
    assert "\n" not in msg and "another machine" in msg and "--cluster" in msg


def test_engine_lists_drop_duplicates():  # `cleanup --engine` takes several
    es = parse_engines(["default", "unix:///tmp/a.sock,unix:///tmp/b.sock", "unix:///tmp/a.sock"])
    assert [e.name for e in es] == ["default", "unix:///tmp/a.sock", "unix:///tmp/b.sock"]
    assert parse_engines([]) == [Engine()]


# ---- shards and merge ------------------------------------------------------------------------
def test_shards_split_the_cells_deterministically_and_completely():
    cells = [f"r{i}|n{j}" for i in range(4) for j in range(3)]
    for n in range(1, 6):
        parts = [findings.cells_of_shard(cells, (i, n)) for i in range(1, n + 1)]
        assert sorted(c for p in parts for c in p) == sorted(cells)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        assert parts == [findings.cells_of_shard(cells, (i, n)) for i in range(1, n + 1)]
    assert findings.parse_shard("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0"):
        with pytest.raises(BadInput):
            findings.parse_shard(bad)


def _runs(cells: list[str]) -> list[dict]:
    bad = {
        "valid": False,
        "lock": {"valid": False, "belief_overlap_count": 1, "effect_overlap_count": 0},
    }
    return [
        {
            "cell": c,
            "seed": 1 + k,
            "valid": "nolock" not in c,
            "results": {"valid": True} if "nolock" not in c else bad,
            "store": f"{c.replace('|', '-')}/{k}",
            "engine": "default",
        }
        for c in cells
        for k in range(2)
    ]


SETTINGS = {
    "workload": "lock",
    "nodes": 3,
    "clients": 2,
    "time_limit_s": 4.0,
    "session_timeout_s": 3.0,
    "params": {},
    "runs": 2,
    "seed": 1,
    "recipes": ["kazoo", "nolock"],
    "nemeses": ["none", "kill-client"],
}


def test_merging_the_shards_gives_the_unsharded_table(tmp_path):
    cells = [f"{r}|{n}" for r in SETTINGS["recipes"] for n in SETTINGS["nemeses"]]
    whole = findings.merge(
        [
            findings.read_manifest(
                findings.write_manifest(tmp_path / "all", SETTINGS, None, _runs(cells))
            )
        ]
    )[1]
    paths = [
        findings.write_manifest(
            tmp_path / f"s{i}", SETTINGS, (i, 3), _runs(findings.cells_of_shard(cells, (i, 3)))
        )
        for i in (1, 2, 3)
    ]
    settings, merged, notes = findings.merge([findings.read_manifest(p.parent) for p in paths])
    assert notes == []
    table = findings.markdown_table(merged, settings["recipes"], settings["nemeses"], "h")
    assert table == findings.markdown_table(whole, settings["recipes"], settings["nemeses"], "h")
    assert (
        "| nolock | 2/2 (100 %, 95 % CI 34-100 %) invalid (belief 2, effect 0, half-done 0) |"
        in table
    )
    assert all(Path(s).is_absolute() for c in merged.values() for s in c["stores"])
    # Two shards only: a note, the missing cells show "-".
    _, part, notes = findings.merge([findings.read_manifest(p.parent) for p in paths[:2]])
    assert notes and "3/3" in notes[0] and len(part) < len(cells)


def test_merge_refuses_mixed_matrices_and_repeated_shards(tmp_path):
    a = findings.write_manifest(tmp_path / "a", SETTINGS, (1, 2), _runs(["kazoo|none"]))
    b = findings.write_manifest(
        tmp_path / "b", {**SETTINGS, "nodes": 5}, (2, 2), _runs(["kazoo|kill-client"])
    )
    with pytest.raises(BadInput, match="different matrices"):
        findings.merge([findings.read_manifest(a), findings.read_manifest(b)])
    with pytest.raises(BadInput, match="given twice"):
        findings.merge([findings.read_manifest(a), findings.read_manifest(a)])
    with pytest.raises(BadInput, match="matrix-runs.json"):
        findings.read_manifest(tmp_path / "nothing-here")


def test_a_matrix_cut_short_keeps_its_finished_runs_and_says_how_many(tmp_path, monkeypatch):
    """Runs go run-major (every cell's first run, then the seconds), the manifest is written
    after every run, and the table of a matrix killed half-way counts what it holds."""
    from zkjepsen.cli import main
    from zkjepsen.run import fanout

    order = []

    def fake_run_jobs(jobs, engine, parallel, store_root, on_start, on_done, keep_going, *_):
        for i, job in enumerate(jobs[:5]):
            order.append(job.tag)
            run = SimpleNamespace(
                valid=True, results={"valid": True}, store_dir=tmp_path / "st" / f"r{i}"
            )
            on_done(i, SimpleNamespace(job=job, run=run, engine="default"))
        raise KeyboardInterrupt  # the deadline: killed after 5 of 6 runs

    monkeypatch.setattr(fanout, "run_jobs", fake_run_jobs)
    monkeypatch.setattr("zkjepsen.cli.cells.prepare", lambda engine, backends=(), **kw: Engine())
    monkeypatch.chdir(tmp_path)
    argv = ["matrix", "--recipes", "kazoo,blog", "--nemeses", "none", "--runs", "3"]
    # An interrupted CLI ignores later signals while it exits; this process goes on testing.
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with pytest.raises(BaseException):  # noqa: B017 - whatever the CLI makes of the interrupt
            main([*argv, "--store", str(tmp_path / "st")])
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert order == ["kazoo|none", "blog|none"] * 2 + ["kazoo|none"]
    settings, cells, _ = findings.merge([findings.read_manifest(tmp_path / "st")])
    assert {k: c["runs"] for k, c in cells.items()} == {"kazoo|none": 3, "blog|none": 2}
    header = findings.settings_header(settings, "now", "here", cells)
    assert "2-3 runs per cell (3 planned)" in header
    assert "3 runs per cell;" in findings.settings_header(settings, "now", "here")

    # The merged table of that cut-short matrix says when and where it ran, not only when merged.
    manifests = [findings.read_manifest(tmp_path / "st")]
    when, where = findings.merged_origin(manifests, "2026-01-02 03:04 UTC")
    assert when.endswith("(merged 2026-01-02 03:04 UTC)") and when[:4].isdigit(), when
    assert "cores" in where and where.endswith("1 store merged"), where
    # Stores from before origins were recorded: only the merge time is known.
    old = [{**manifests[0], "origin": {}}]
    assert findings.merged_origin(old, "X") == ("before X", "1 store merged")


def test_a_matrix_cut_short_resumes_where_it_stopped(tmp_path, monkeypatch):
    """--resume keeps the runs on record, runs only the (cell, seed) pairs missing, and a
    larger --runs extends the matrix; a different matrix in the store is refused (254)."""
    from zkjepsen.cli import main
    from zkjepsen.run import fanout

    ran: list[tuple[str, int]] = []
    stop_after = [3]  # the first matrix dies after 3 runs

    def fake_run_jobs(jobs, engine, parallel, store_root, on_start, on_done, keep_going, *_):
        outs = []
        for i, job in enumerate(jobs):
            if len(ran) == stop_after[0]:
                raise KeyboardInterrupt
            ran.append((job.tag, job.spec.seed))
            ok = job.tag.startswith("kazoo")
            folder = f"r-{job.tag.replace('|', '-')}-{job.spec.seed}"  # each run its own
            run = SimpleNamespace(
                valid=ok, results={"valid": ok}, store_dir=tmp_path / "st" / folder
            )
            outs.append(SimpleNamespace(job=job, run=run, engine="default"))
            on_done(i, outs[-1])
        return outs

    monkeypatch.setattr(fanout, "run_jobs", fake_run_jobs)
    monkeypatch.setattr("zkjepsen.cli.cells.prepare", lambda engine, backends=(), **kw: Engine())
    monkeypatch.chdir(tmp_path)
    argv = ["matrix", "--recipes", "kazoo,blog", "--nemeses", "none", "--store", "st"]

    def exit_code(*more):
        with pytest.raises(SystemExit) as ended:
            main([*argv, *more])
        return ended.value.code or 0

    # An interrupted CLI ignores later signals while it exits; this process goes on testing.
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        assert exit_code("--runs", "2") != 0
        assert ran == [("kazoo|none", 1), ("blog|none", 1), ("kazoo|none", 2)]
        ran.clear()
        stop_after[0] = -1
        assert exit_code("--runs", "3", "--resume", "--junit-xml", "m.xml") == 0
        assert ran == [("blog|none", 2), ("kazoo|none", 3), ("blog|none", 3)]
        # The runs of this invocation as JUnit test cases: a failure per invalid run.
        cases = ET.parse(tmp_path / "m.xml").findall("testsuite/testcase")
        assert [(c.get("classname"), c.get("name")) for c in cases] == [
            ("blog on zookeeper", "none run 1"),
            ("kazoo on zookeeper", "none run 1"),
            ("blog on zookeeper", "none run 2"),
        ]
        assert [c.find("failure") is not None for c in cases] == [True, False, True]
        _, cells, _ = findings.merge([findings.read_manifest(tmp_path / "st")])
        assert {k: (c["runs"], c["invalid"]) for k, c in cells.items()} == {
            "kazoo|none": (3, 0),
            "blog|none": (3, 3),
        }
        # Nothing left to run: the table is rendered from the record alone.
        ran.clear()
        assert exit_code("--runs", "3", "--resume") == 0 and ran == []
        # A store holding another matrix, or none, is refused before anything runs.
        assert exit_code("--runs", "3", "--clients", "7", "--resume") == EXIT_BAD_INPUT
        assert exit_code("--store", "elsewhere", "--resume") == EXIT_BAD_INPUT
        assert ran == []
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


# ---- subnets ---------------------------------------------------------------------------------
def test_host_routes_are_read_from_proc_net_route(tmp_path):
    route = tmp_path / "route"
    route.write_text(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "br-1\t0085A60A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    )
    assert [str(n) for n in subnets.host_routes(route)] == ["10.166.133.0/24"]


def _allocate(args):
    root, run_id = args
    resources.SCRATCH_ROOT = Path(root)
    subnets.host_routes = lambda: []  # in this worker process only
    # Every process draws the SAME candidates: only the machine lock and the claims keep
    # them apart, as they keep apart zkjepsen processes using different engines.
    return str(subnets.allocate(run_id, lambda s: True, local=False, rng=random.Random(7)))


def test_concurrent_processes_never_get_the_same_subnet(tmp_path):
    with ProcessPoolExecutor(6) as pool:
        got = list(pool.map(_allocate, [(str(tmp_path), f"zkj-run-{i}") for i in range(12)]))
    assert len(set(got)) == 12


def test_allocation_skips_routes_claims_and_engine_refusals(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "SCRATCH_ROOT", tmp_path)
    first = subnets.candidate(random.Random(3))
    monkeypatch.setattr(subnets, "host_routes", lambda: [first])
    refused = []

    def create(s):
        refused.append(s)
        return len(refused) > 1  # the engine refuses the first candidate it is offered

    got = subnets.allocate("zkj-a", create, rng=random.Random(3))
    assert got != first and first not in refused and len(refused) == 2
    assert (tmp_path / "zkj-a" / subnets.SUBNET_FILE).read_text() == str(got)
    assert got in subnets.claimed(tmp_path)


def test_cleanup_of_one_engine_leaves_a_live_run_of_another_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "SCRATCH_ROOT", tmp_path)
    resources.claim_scratch("zkj-here", "unix:///tmp/b.sock")
    old = tmp_path / "zkj-old"  # a crashed run's from before engines were recorded
    old.mkdir()
    os.utime(old, (0, 0))  # long past its start-up grace
    empty = SimpleNamespace(
        api=SimpleNamespace(containers=lambda **kw: []),
        networks=SimpleNamespace(list=lambda **kw: []),
    )
    on_default = resources.find_runs(empty)
    assert set(on_default) == {"zkj-old"} and on_default["zkj-old"].orphaned
    on_b = resources.find_runs(empty, "unix:///tmp/b.sock")
    assert set(on_b) == {"zkj-here"} and not on_b["zkj-here"].orphaned  # its owner is us


# ---- shrink in parallel ----------------------------------------------------------------------
def _stored(tmp_path):
    from zkjepsen.run.spec import TestSpec
    from zkjepsen.run.stored import StoredRun
    from zkjepsen.store import RunDir

    fault = {
        "fault_id": 1,
        "f": "pause-client",
        "target": "holder",
        "targets": None,
        "detail": None,
        "params": {},
        "duration": "1.5x",
        "start_ns": 9 * S,
        "end_ns": 13 * S,
    }
    results = {
        "valid": False,
        "lock": {"valid": False, "belief_overlap_count": 1, "effect_overlap_count": 0},
    }
    spec = TestSpec(
        recipe="kazoo", workload="lock", nemesis=["pause-client"], clients=4, time_limit_s=20
    )
    return StoredRun(RunDir(tmp_path), spec, {"faults": [fault]}, results)


@pytest.mark.parametrize("parallel", [1, 2])
def test_parallel_shrink_visits_the_same_candidates_in_fewer_waves(tmp_path, monkeypatch, parallel):
    from zkjepsen.reproduce import shrink as shrink_mod

    waves = []

    def fake_replay(run, runs, *, spec, faults, parallel, engine, **kw):
        waves.append(runs)
        # Reproduces while the fault is at least 3 s long, with at least 3 clients.
        ok = faults[0].end_ns - faults[0].start_ns >= 3 * S and spec.clients >= 3
        results = (
            {"valid": False, "lock": {"valid": False, "belief_overlap_count": 1}}
            if ok
            else {"valid": True}
        )
        return [SimpleNamespace(results=results, store_dir=Path("x")) for _ in range(runs)]

    monkeypatch.setattr(shrink_mod, "replay", fake_replay)
    res = shrink_mod.shrink(
        _stored(tmp_path), tries=3, min_hits=2, parallel=parallel, engine=Engine()
    )
    # The holder-aimed pause becomes a triggered one first (it keeps the violation), then shrinks.
    assert (
        res.best.summary() == "1 faults [pause-client on_acquire(retries=10)+4.0s], 4 clients, 16s"
    )
    assert [[e["why"], e["hits"]] for e in res.log] == EXPECTED_LOG
    # Every candidate is decided by its first two replays: one wave each with two slots.
    assert waves == {1: [1] * 4, 2: [2] * 2}[parallel]


EXPECTED_LOG = [
    ["pause-client on the next acquire instead of at 9.0s", 2],
    ["half the clients", 0],  # never 25% shorter: that is below 1.5 session timeouts
]


@pytest.mark.parametrize(
    "argv",
    [
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--engine", "tcp://203.0.113.7:2376"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--shard", "3/2"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--engine", "ftp://x"],
        ["test", "--engine", "ssh://ci@203.0.113.7"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--engine", "a", "--engine", "b"],
        ["merge", "no-such-store"],
    ],
)
def test_remote_engines_and_bad_shards_are_one_sentence_before_anything(
    argv, tmp_path, monkeypatch, capsys
):
    from zkjepsen.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == EXIT_BAD_INPUT, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "store").exists()


def test_two_tries_needing_two_hits_run_as_one_wave(tmp_path, monkeypatch):
    from zkjepsen.reproduce import shrink as shrink_mod

    waves = []

    def fake_replay(run, runs, **kw):
        waves.append(runs)
        bad = {"valid": False, "lock": {"valid": False, "belief_overlap_count": 1}}
        return [SimpleNamespace(results=bad, store_dir=Path("x")) for _ in range(runs)]

    monkeypatch.setattr(shrink_mod, "replay", fake_replay)
    shrink_mod.shrink(_stored(tmp_path), tries=2, min_hits=2, parallel=2, engine=Engine())
    assert waves and set(waves) == {2}


def test_keep_going_turns_a_runs_error_into_an_unknown_outcome(monkeypatch):
    """A matrix keeps going past a run that ended in an error (a lost session on a loaded
    machine): that run is unknown with its error; bad input still stops everything."""
    from zkjepsen.errors import EnvironmentProblem
    from zkjepsen.run import fanout
    from zkjepsen.run.spec import TestSpec

    calls = []

    def fake_run_test(spec, store_root, schedule=None, engine=None, gen=None):
        calls.append(spec.seed)
        if spec.seed == 2:
            raise EnvironmentProblem("ConnectionLoss")
        if spec.seed == 9:
            raise BadInput("no such thing")
        return fanout.RunResult(spec, Path("/st") / str(spec.seed), True, {"valid": True}, {})

    monkeypatch.setattr(fanout, "run_test", fake_run_test)
    jobs = [fanout.Job(TestSpec(seed=s)) for s in (1, 2, 3)]
    out = fanout.run_jobs(jobs, Engine(), keep_going=True)
    assert [o.run.valid for o in out] == [True, "unknown", True] and calls == [1, 2, 3]
    assert "ConnectionLoss" in out[1].run.results["error"]
    with pytest.raises(EnvironmentProblem):
        fanout.run_jobs(jobs, Engine())  # without it, the first error ends the runs
    with pytest.raises(BadInput):
        fanout.run_jobs([fanout.Job(TestSpec(seed=9))], Engine(), keep_going=True)


def test_the_last_orphaned_run_removes_the_pools_folder(tmp_path):
    """A killed `matrix --parallel`: each orphaned run removes its own files and those of runs
    that ended; the one that ends last removes the folder."""
    from zkjepsen.run.fanout import _clear_pool_dir

    pool = tmp_path / "zkjepsen-fanout-x"
    pool.mkdir()
    for name in ("0", "1", "2"):
        (pool / f"job-{name}.json").write_text("{}")
        (pool / f"log-{name}.txt").write_text("")
    (pool / "result-0.json").write_text("{}")  # run 0 ended before the parent was killed
    (pool / "ask-0").touch()
    _clear_pool_dir(pool / "job-1.json")  # run 1 ends: run 2 is still under way
    assert sorted(p.name for p in pool.iterdir()) == ["job-2.json", "log-2.txt"]
    _clear_pool_dir(pool / "job-2.json")
    assert not pool.exists()
