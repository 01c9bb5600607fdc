"""Refused before anything is created (issue 23): paths that cannot be written, `client check`'s
arguments, config values hidden by an option, `list models`; and what an interrupted run's
folder holds, which `analyze` completes. No Docker engine is reachable here (DOCKER_HOST points
to a dead socket): before these fixes the commands below reached for one (255) or ran first."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from stored_folder import stored_spec

from zkjepsen.cli import folder_state, interrupted_message, main
from zkjepsen.run.outcome import Phase, Teardown, stopped
from zkjepsen.run.spec import TestSpec
from zkjepsen.store.writable import can_create_in

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused  # noqa: E402 - one sentence, 254, no store

from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.zookeeper.service import ZooKeeperSettings

# As root, os.access says /proc is writable; creating anything there fails all the same.
UNWRITABLE = "/proc/zkj-nowhere"


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    got = capsys.readouterr()
    return e.value.code, got.out, got.err


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")
    monkeypatch.delenv("ZKJEPSEN_STORE", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    "args,words",
    [
        (["test", "--store", UNWRITABLE], ["store path", "not writable"]),
        (["test", "--store", f"{UNWRITABLE}/deeper"], ["store path", "not writable"]),
        (
            ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--out", f"{UNWRITABLE}/m.md"],
            ["--out", "not writable"],
        ),
        (
            ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--store", UNWRITABLE],
            ["store path"],
        ),
        (["matrix", "--recipes", "kazoo", "--nemeses", "none", "--out", "."], ["directory"]),
        (["matrix", "--recipes", "kazoo", "--nemeses", "none", "--out", "m.json"], [".md"]),
        (["merge", "somewhere", "--out", f"{UNWRITABLE}/m.md"], ["--out"]),
        (["replay", "run", "--store", UNWRITABLE], ["store path"]),
        (["shrink", "run", "--store", UNWRITABLE], ["store path"]),
        (["scenario", "run", "--all", "--store", UNWRITABLE], ["store path"]),
        (["cluster", "up", "--store", UNWRITABLE], ["store path"]),
        (["check", "h.jsonl", "--model", "mutex", "--html", f"{UNWRITABLE}/x.html"], ["--html"]),
        (["client", "check", ""], ["empty"]),
        (["client", "check", "   "], ["empty"]),
        (["client", "check", "true", "--request-timeout", "-1"], ["--request-timeout"]),
        (["client", "check", "true", "--session-timeout", "nan"], ["--session-timeout"]),
        (["client", "check", "true", "--hosts", "not a host list"], ["--hosts", "host[:port]"]),
        (["client", "check", "true", "--hosts", "h:99999"], ["--hosts"]),
        (["client", "check", "true", "--hosts", ""], ["--hosts"]),
    ],
)
def test_refused_before_anything_exists(args, words, here, capsys):
    (here / "h.jsonl").write_text("")
    code, _, err = run_cli(args, capsys)
    assert_refused(code, err, here, *words)


def test_a_shrink_of_a_folder_it_cannot_write_into_is_refused(here, capsys, monkeypatch):
    run = here / "run"
    run.mkdir()
    (run / "test.json").write_text(json.dumps(stored_spec(clients=2)))
    (run / "results.json").write_text(json.dumps({"valid": False}))
    (run / "minimal").write_text("a file where shrink writes its folder")
    code, _, err = run_cli(["shrink", str(run)], capsys)
    assert_refused(code, err, here, "shrink's output")


def test_a_good_host_list_is_not_refused():
    from zkjepsen.cli.options import check_hosts

    for ok in ("172.18.0.2:2181", "a:1,b.example:2181/chroot/x", "[::1]:2181", "zk1"):
        assert check_hosts(ok) == ok


@pytest.mark.parametrize(
    "config,cli,words",
    [
        ('clients = "x"', ["--clients", "3"], ["config", "clients", "command line"]),
        ("nodes = 3.5", ["--nodes", "3"], ["config", "nodes"]),
        ("params = 3", ["--param", "hold_s=1"], ["config", "params"]),
        ('time_limit_s = "soon"', ["--time-limit", "5"], ["config", "time limit"]),
        ("session_timeout_s = 7200", ["--session-timeout", "4s"], ["config", "session timeout"]),
        ("nodes = 3.5", [], ["config", "nodes"]),
    ],
)
def test_config_values_hidden_by_an_option_are_still_validated(config, cli, words, here, capsys):
    (here / "t.toml").write_text(config + "\n")
    code, _, err = run_cli(["test", "--config", "t.toml", *cli], capsys)
    assert_refused(code, err, here, *words)


def test_the_command_line_wins_over_a_valid_config(here):
    from zkjepsen.cli.config import with_config

    toml = {"clients": 4, "nodes": 5, "params": {"hold_s": 1, "resource": "fenced"}}
    got = with_config(toml, {"clients": 2, "params": {"hold_s": 2}}, Path("t.toml"))
    assert got == {"clients": 2, "nodes": 5, "params": {"hold_s": 2, "resource": "fenced"}}
    # tick_ms in the file makes the command line's session timeout legal: both sources valid.
    toml = {"zookeeper": {"tick_ms": 100}}
    assert with_config(toml, {"session_timeout_s": 1.0}, None)["zookeeper"] == {"tick_ms": 100}
    # A service's table from the file and one from the command line: the keys of both, the
    # command line's winning.
    cli = {"zookeeper": {"version": "3.9"}}
    assert with_config(toml, cli, None)["zookeeper"] == {"tick_ms": 100, "version": "3.9"}


def test_list_models_names_every_model_check_accepts(capsys):
    from zkjepsen.checker.linear import MODELS
    from zkjepsen.cli.check import OTHER_CHECKERS

    code, out, _ = run_cli(["list", "models"], capsys)
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines()}
    assert listed == set(MODELS) | set(OTHER_CHECKERS)


def test_can_create_in_tries_instead_of_asking(tmp_path):
    assert can_create_in(str(tmp_path)) and not os.listdir(tmp_path)  # the probe is gone
    assert not can_create_in("/proc")


def lock_history(n: int = 3) -> list[dict]:
    records, t = [], 1_000_000
    for c in (1, 2):
        for f in ("acquire", "release") * n:
            for typ in ("invoke", "ok"):
                t += 1_000_000
                records.append(
                    {"index": len(records), "time": t, "process": c, "type": typ, "f": f}
                    | {"key": "/zkjepsen/lock", "client": c}
                )
    return records


def interrupted_folder(root: Path) -> Path:
    run = root / "run"
    run.mkdir()
    spec = stored_spec(clients=2, seed=1, nemesis=["none"])
    (run / "test.json").write_text(json.dumps(spec))
    (run / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lock_history()))
    return run


def test_the_interrupt_message_says_where_the_folder_is_and_what_is_complete(tmp_path):
    run = interrupted_folder(tmp_path)
    td = Teardown("zkj-1", run, [], phase=Phase.REPORT)
    (run / "results.json").write_text("{}")
    msg = interrupted_message(_with(td), "interrupted")
    assert msg == (
        "zkjepsen: interrupted during the report; everything run zkj-1 started was removed; "
        f"its folder {run} has test.json, history.jsonl, results.json; `zkjepsen analyze "
        f"{run}` writes timeline.html, latency.png, rate.png"
    )
    early = Teardown("zkj-1", run, ["1 container"], phase=Phase.MAIN)
    assert "history.jsonl (up to the interrupt)" in folder_state(early)
    assert "left 1 container behind" in interrupted_message(_with(early))


def _with(td: Teardown) -> BaseException:
    e = stopped(KeyboardInterrupt(), td)
    assert isinstance(e, KeyboardInterrupt)  # caught where a Ctrl-C is
    return e


def test_analyze_finishes_an_interrupted_runs_report(here, capsys):
    run = interrupted_folder(here)
    code, _, err = run_cli(["analyze", str(run)], capsys)
    assert code in (0, 1, 2), err
    for name in ("results.json", "timeline.html", "latency.png", "rate.png"):
        assert (run / name).stat().st_size > 0, name
    assert "written results.json, timeline.html, latency.png, rate.png" in err
    assert folder_state(Teardown("zkj-1", run, [], phase=Phase.REPORT)).endswith("(complete)")
    code2, _, err2 = run_cli(["analyze", str(run)], capsys)
    assert code2 == code and "reproduced" in err2 and "written" not in err2


def test_an_interrupted_matrix_says_where_its_finished_runs_are(here, capsys, monkeypatch):
    """A matrix cut short after one run: the message names the store that `merge` renders and
    `--resume` continues (the runs themselves are faked: no engine here)."""
    import signal

    from zkjepsen.docker.engine import Engine
    from zkjepsen.run import fanout
    from zkjepsen.run.outcome import RunResult

    def one_run_then_ctrl_c(jobs, engine, parallel, store_root, on_start, on_done, *a, **kw):
        job = jobs[0]
        on_start(0, job, engine)
        on_done(0, fanout.Outcome(job, "default", RunResult(job.spec, here, True, {}, {})))
        raise KeyboardInterrupt

    monkeypatch.setattr("zkjepsen.cli.cells.prepare", lambda *a, **kw: Engine())
    monkeypatch.setattr(fanout, "run_jobs", one_run_then_ctrl_c)
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        args = ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--store", "m"]
        code, _, err = run_cli([*args, "--runs", "2"], capsys)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert code == 130
    assert err.strip().splitlines()[-1] == (
        "zkjepsen: interrupted; the matrix's 1 finished run is on record in "
        "m/matrix-runs.json: `zkjepsen merge m` renders them, the same matrix command with "
        "--resume continues it."
    )
    assert (here / "m" / "matrix-runs.json").exists()


def test_without_a_config_file_a_mistake_names_no_file(here, capsys):
    code, _, err = run_cli(["test", "--nemesis", ""], capsys)
    assert_refused(code, err, here, "empty fault name")
    assert "config" not in err, err  # was "config None: nemesis '' has…"


@pytest.mark.parametrize("backend", ["etcd", "redis", "postgres"])
def test_cluster_up_refuses_zookeepers_tick_for_another_backend(backend, here, capsys):
    """Only an explicit --tick-ms is refused (click tells it from its default)."""
    code, _, err = run_cli(["cluster", "up", "--backend", backend, "--tick-ms", "200"], capsys)
    assert_refused(code, err, here, "--tick-ms is ZooKeeper's tickTime", f"backend {backend}")


@pytest.mark.parametrize(
    "args,words",
    [
        (["test", "--recipe", "kazoo", "--etcd-version", "3.5"], ["backend zookeeper has none"]),
        (["test", "--recipe", "pg-advisory", "--etcd-version", "3.5"], ["backend postgres"]),
        (["test", "--recipe", "etcd3-python", "--etcd-version", "3.6"], ["unknown etcd version"]),
        (["cluster", "up", "--backend", "redis", "--etcd-version", "3.5"], ["etcd's"]),
        (["image", "build", "--backend", "zookeeper", "--etcd-version", "3.5"], ["etcd's"]),
    ],
)
def test_etcd_version_is_etcds_only(args, words, here, capsys):
    code, _, err = run_cli(args, capsys)
    assert_refused(code, err, here, *words)


def test_etcd_version_picks_the_suite_and_is_recorded():
    from zkjepsen.backends.etcd.image import etcd_image
    from zkjepsen.docker.image import default_tag
    from zkjepsen.run.resolve import validate_spec

    spec = TestSpec(recipe="etcd3-python", workload="lock", nodes=3)
    validate_spec(spec)
    assert spec.service == EtcdSettings(version="3.4", fsync="strict")  # test.json says what ran
    spec = TestSpec(
        recipe="etcd3-python", workload="lock", nodes=3, service=EtcdSettings(version="3.5.16")
    )
    validate_spec(spec)
    assert spec.service == EtcdSettings(version="3.5", fsync="strict")
    assert (etcd_image().suite, etcd_image("3.5").suite) == ("bookworm", "trixie")
    assert default_tag(etcd_image("3.4")) == default_tag(etcd_image())
    assert default_tag(etcd_image("3.5")) != default_tag(etcd_image())


def test_a_go_recipe_is_refused_on_an_etcd_without_its_driver(monkeypatch):
    from dataclasses import replace

    from zkjepsen.errors import BadInput
    from zkjepsen.recipes import RECIPES
    from zkjepsen.run.resolve import validate_spec

    go = replace(RECIPES["etcd3-python"], language="go")
    monkeypatch.setitem(RECIPES, "etcd-go-probe", go)
    validate_spec(TestSpec(recipe="etcd-go-probe", workload="lock", nodes=3))  # 3.4: built
    with pytest.raises(BadInput, match="Go driver is built against etcd 3.4"):
        validate_spec(
            TestSpec(
                recipe="etcd-go-probe",
                workload="lock",
                nodes=3,
                service=EtcdSettings(version="3.5"),
            )
        )


@pytest.mark.parametrize("recipe", ["etcd3-python", "redis-set-px", "pg-advisory"])
def test_zookeepers_tick_bounds_the_session_of_zookeeper_runs_only(recipe):
    """A 30 s lease, TTL or connection is the other services' to grant; only ZooKeeper clamps
    a session timeout to [2, 20] ticks, so only a ZooKeeper run is refused it."""
    from zkjepsen.errors import BadInput
    from zkjepsen.run.resolve import validate_spec

    spec = TestSpec(recipe=recipe, workload="lock", session_timeout_s=30.0)
    validate_spec(spec)
    assert spec.session_timeout_s == 30.0
    with pytest.raises(BadInput, match=r"outside what the servers grant with tickTime 500 ms"):
        validate_spec(TestSpec(recipe="kazoo", workload="lock", session_timeout_s=30.0))


def test_scenario_run_pins_etcds_version_on_the_etcd_pairs_only(capsys):
    """`scenario run --etcd-version 3.5`: the Python etcd recipe runs on 3.5, the Go ones (no
    driver there) are left out with a line saying so, ZooKeeper pairs keep their own version;
    with only Go recipes left, nothing would run, and the command is refused."""
    from zkjepsen.cli.reproduce import _scenario_plan
    from zkjepsen.errors import BadInput
    from zkjepsen.reproduce.scenarios import get_scenario

    etcd, zk = get_scenario("etcd-lease-pause"), get_scenario("client-pause")
    pairs = [(etcd, r) for r in etcd.expect] + [(zk, next(iter(zk.expect)))]
    tables = {"zookeeper": {"version": "3.9"}, "etcd": {"version": "3.5"}}
    plan = _scenario_plan(pairs, 1, tables, {})
    assert [(s.name, r, pin) for s, r, pin in plan] == [
        ("etcd-lease-pause", "etcd3-python", EtcdSettings(version="3.5")),
        ("client-pause", next(iter(zk.expect)), ZooKeeperSettings(version="3.9")),
    ]
    out = capsys.readouterr().err
    assert "n/a etcd-lease-pause with etcd-mutex-go: recipe etcd-mutex-go's Go driver" in out
    go_only = [(etcd, "etcd-mutex-go"), (etcd, "etcd-lock-rpc")]
    capsys.readouterr()
    with pytest.raises(BadInput, match="^nothing to run: recipe etcd-mutex-go's Go driver"):
        _scenario_plan(go_only, 1, {"etcd": {"version": "3.5"}}, {})
    assert capsys.readouterr().err == ""  # the refusal is the one sentence
