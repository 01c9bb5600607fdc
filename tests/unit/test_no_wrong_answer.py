"""Issue 48's smaller named cases, each by the mechanism that now answers its class: a workload
no checker judges is never VALID; an output path that is no file is refused before anything
runs; `client check` reads --hosts as the service's own session does and reaches the engine
before it makes its folder; a matrix with n/a cells (or only those) merges. The property tests
(test_manifest_properties.py, test_opener_properties.py, test_check_input_properties.py) cover
the classes' other members."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile import DEAD_ENGINE, refusal_wrong, run_bounded, snapshot
from stored_folder import make_run, stored_spec

from zkjepsen.checker import NO_CHECKER, compose
from zkjepsen.errors import BadInput
from zkjepsen.history import History, Op
from zkjepsen.workloads import WORKLOADS, get_workload

S = 1_000_000_000


@pytest.fixture
def ws(tmp_path, monkeypatch):
    from zkjepsen import store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    for name in ("DOCKER_CONTEXT", "ZKJEPSEN_STORE", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(store, "DEFAULT_ROOT", Path("store"))
    return tmp_path


# ---- nothing judged is not valid ---------------------------------------------------------------
def _ops(workload: str) -> list[Op]:
    """What a client of the workload records when all goes well (ping: writes; raw: creates
    and deletes recorded as acquire/release), and a fault."""
    f = {"ping": ("write", "write"), "raw": ("acquire", "release")}.get(workload, ("x", "y"))
    ops = [Op(0, 1, "nemesis", "info", "kill", None, {"phase": "start", "fault_id": 1})]
    for k in range(4):
        ops += [
            Op(len(ops), (k + 1) * S, 1, "invoke", f[k % 2], "/k", None, 1),
            Op(len(ops) + 1, (k + 1) * S + 5, 1, "ok", f[k % 2], "/k", {"token": k}, 1),
        ]
    return ops


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_no_workload_is_valid_on_a_history_that_tested_nothing(workload):
    checkers = get_workload(workload).checkers({})
    for h in (History([]), History(_ops(workload)[:1])):
        assert compose(checkers).check(h).valid != True, (workload, h.ops)  # noqa: E712
    if not checkers:  # ping, raw: whatever their clients did, no checker judged it
        r = compose(checkers).check(History(_ops(workload)))
        assert r.valid == "unknown" and r.reason == NO_CHECKER


@pytest.mark.parametrize("workload", ["ping", "raw"])
def test_a_stored_run_of_a_workload_without_checker_is_unknown(ws, workload):
    run = make_run(ws, workload)
    (run / "test.json").write_text(json.dumps(stored_spec(workload=workload, nemesis=["none"])))
    (run / "history.jsonl").write_text("")
    (run / "results.json").unlink()
    code, out, err = run_bounded(["analyze", str(run)])
    assert code == 2, (code, out, err)
    assert "UNKNOWN" in err and "nothing was tested" in err, err


# ---- an output path that is no file ------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["test", "--junit-xml", ""],
        ["test", "--junit-xml", "new/"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--junit-xml", ""],
        ["gate", "--recipe", "kazoo", "--junit-xml", ""],
        ["scenario", "run", "client-pause", "--junit-xml", "  "],
        ["merge", "st", "--out", ""],
    ],
)
def test_an_output_path_that_is_no_file_is_refused_up_front(ws, argv):
    before = snapshot(ws)
    code, _, err = run_bounded(argv)
    assert refusal_wrong(code, err, snapshot(ws) - before) is None, (code, err)
    assert "--junit-xml" in err or "--out" in err


def test_check_html_that_is_no_file_is_refused_before_the_search(ws):
    (ws / "h.jsonl").write_text(
        '{"index":0,"time":1,"process":1,"type":"invoke","f":"write","value":1}\n'
    )
    for html in ("", "x/"):
        code, _, err = run_bounded(["check", "h.jsonl", "--model", "register", "--html", html])
        assert refusal_wrong(code, err, set()) is None, (code, err)


# ---- client check --------------------------------------------------------------------------------
def test_client_check_without_an_engine_makes_no_folder_and_leaves_latest(ws):
    old = ws / "store" / "client-check" / "20200101T000000"
    old.mkdir(parents=True)
    (old.parent / "latest").symlink_to(old.name)
    before = snapshot(ws)
    code, _, err = run_bounded(["client", "check", "true"])
    assert code == 255 and "cannot reach a Docker engine" in err, (code, err)
    assert len([x for x in err.splitlines() if x.strip()]) == 1
    assert snapshot(ws) == before
    assert os.readlink(old.parent / "latest") == old.name


WRONG_HOSTS = ["a..b:2181", "256.1.1.1:2181", "a:١", "x" * 64 + ":1", "h:1,", ":2181"]


@pytest.mark.parametrize("backend", ["zookeeper", "etcd", "redis", "redis-sentinel", "postgres"])
def test_client_check_hosts_of_the_wrong_form_are_refused_for_every_service(ws, backend):
    from zkjepsen.cli.client import service_hosts

    scheme = {"redis": "redis://", "redis-sentinel": "redis-sentinel://m@"}.get(backend, "")
    other_form = "1.2.3.4:1" if scheme else "redis://1.2.3.4:1"  # without/with a scheme
    for hosts in [scheme + h for h in WRONG_HOSTS] + [other_form]:
        with pytest.raises(BadInput):
            service_hosts(hosts, backend)
        argv = ["client", "check", "--backend", backend, "--hosts", hosts, "true"]
        before = snapshot(ws)
        code, _, err = run_bounded(argv)
        assert refusal_wrong(code, err, snapshot(ws) - before) is None, (argv, code, err)
    assert service_hosts(scheme + "1.2.3.4:2181,h-1.example:2", backend)


# ---- merge of n/a cells -----------------------------------------------------------------------
def test_merge_of_a_matrix_with_n_a_cells_or_only_those(ws):
    from zkjepsen.report import findings

    settings = {
        "workload": "lock",
        "nodes": 3,
        "clients": 2,
        "time_limit_s": 4.0,
        "session_timeout_s": 3.0,
        "params": {},
        "runs": 1,
        "seed": 1,
        "recipes": ["kazoo", "redlock"],
        "nemeses": ["none", "kill-leader"],
        "not_applicable": {"redlock|kill-leader": "kill-leader does not apply: no leader"},
    }
    runs = [
        {"cell": c, "seed": 1, "valid": True, "results": {"valid": True}, "store": c, "engine": ""}
        for c in ("kazoo|none", "kazoo|kill-leader", "redlock|none")
    ]
    findings.write_manifest(ws / "some", settings, None, runs)
    only = {**settings, "recipes": ["redlock"], "nemeses": ["kill-leader"]}
    findings.write_manifest(ws / "only", only, None, [])
    for store, said in (("some", "3 runs from 1 stores"), ("only", "0 runs from 1 stores")):
        code, out, err = run_bounded(["merge", store, "--out", f"{store}.md"])
        assert code == 0 and said in out, (code, out, err)
    assert "no runs (1 per cell planned, every cell n/a)" in (ws / "only.md").read_text()
