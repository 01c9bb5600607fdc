"""`--fsync strict|relaxed` on etcd and Redis (issue 34): one flag several services declare,
its value going to the run's service; what each preset runs; the refusals. Pure: no engine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zkjepsen.backends.etcd.cluster import member_args
from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.redis.cluster import redis_conf
from zkjepsen.backends.registry import services, settings_for
from zkjepsen.backends.shared import fold
from zkjepsen.docker.cluster import Node
from zkjepsen.errors import BadInput
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec, read_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused, here, run_cli  # noqa: E402, F401 - fixtures


def _spec(**kw) -> TestSpec:
    spec = read_spec(kw)
    validate_spec(spec)
    return spec


def test_fsync_given_alone_goes_to_the_run_s_service_and_is_recorded():
    tables = {s: {"fsync": "relaxed"} for s in ("zookeeper", "redis", "etcd")}  # the CLI's
    spec = _spec(recipe="redis-set-px", **tables)
    assert spec.service.name == "redis" and spec.service.fsync == "relaxed"
    assert spec.to_json()["service"] == {"name": "redis", "fsync": "relaxed"}
    spec = _spec(recipe="etcd3-python", etcd={"version": "3.5"}, zookeeper={"fsync": "relaxed"})
    assert spec.service == EtcdSettings(version="3.5", fsync="relaxed")
    assert _spec(recipe="kazoo", **tables).service.fsync == "relaxed"


def test_without_fsync_each_service_keeps_its_default():
    assert _spec(recipe="redis-set-px").service.fsync == "off"  # no persistence, as before
    assert _spec(recipe="etcd3-python").service.fsync == "strict"  # as shipped
    assert _spec(recipe="kazoo").service.fsync == "strict"  # forceSync=yes


def test_fold_gives_shared_values_to_the_run_s_service_only():
    svcs = services()
    both = {"etcd": {"version": "3.5"}, "zookeeper": {"fsync": "relaxed"}}
    assert fold(both, svcs) == {"etcd": {"version": "3.5", "fsync": "relaxed"}}
    two_own = {"etcd": {"version": "3.5"}, "zookeeper": {"version": "3.9"}}
    assert fold(two_own, svcs) == two_own  # left for the caller to refuse
    differ = {"redis": {"fsync": "strict"}, "zookeeper": {"fsync": "relaxed"}}
    assert fold(differ, svcs) == differ
    # The run's service known: a lone table of shared values is its, another's own is not.
    lone = {"zookeeper": {"fsync": "relaxed"}}
    assert fold(lone, svcs, "etcd") == {"etcd": {"fsync": "relaxed"}}
    own = {"zookeeper": {"version": "3.9"}}
    assert fold(own, svcs, "etcd") == own
    zk = svcs["zookeeper"].settings(version="3.9")
    with pytest.raises(BadInput, match="--zk-version is"):
        settings_for("etcd", zk)
    # Settings a service made are never carried to another's (--fsync included).
    with pytest.raises(BadInput, match="--fsync is ZooKeeper's fsync preset; backend etcd"):
        settings_for("etcd", svcs["zookeeper"].settings(fsync="relaxed"))


def test_what_each_preset_runs():
    n = Node("n1", 1, "10.0.0.11", 2379)
    assert "--unsafe-no-fsync" not in member_args(n, [n], "t")
    assert member_args(n, [n], "t", relaxed=True)[-1] == "--unsafe-no-fsync"
    assert "appendonly no" in redis_conf() and "appendfsync" not in redis_conf()
    assert "appendonly yes\nappendfsync always\n" in redis_conf(fsync="strict")
    assert "appendonly yes\nappendfsync everysec\n" in redis_conf(fsync="relaxed")


@pytest.mark.parametrize(
    "args,words",
    [
        (["--recipe", "etcd3-python", "--fsync", "relaxed"], ["3.4.23 lacks", "3.5"]),
        (["--recipe", "redis-set-px", "--fsync", "off"], ["strict or relaxed, not 'off'"]),
        (["--backend", "redlock", "--recipe", "redlock", "--nemesis", "power-loss-leader"],
         ["power-loss-leader does not apply to backend redlock"]),
    ],
)  # fmt: skip
def test_fsync_refusals_are_one_sentence(args, words, here, capsys):  # noqa: F811
    code, err = run_cli(["test", *args], capsys)
    assert_refused(code, err, here, *words)


def test_a_relaxed_matrix_marks_etcd_3_4_rows_na_and_runs_the_rest(tmp_path, monkeypatch):
    """etcd 3.4 has no --unsafe-no-fsync: `matrix --fsync relaxed` with etcd 3.4 rows (etcd
    3.4's only Go driver among them) marks those rows' cells n/a with the reason and runs the
    ZooKeeper and Redis cells, rather than refusing the whole matrix."""
    import json

    from test_many_interrupted import finished_run

    from zkjepsen.cli import main, matrix
    from zkjepsen.run import many

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(matrix, "placement", lambda *a: (None, None))
    ran = []

    def run_jobs(jobs, engine, parallel, store_root, on_start, on_done, **kw):
        out = []
        for i, job in enumerate(jobs):
            ran.append((job.tag, job.spec.service))
            on_start(i, job, None)
            out.append(many.Outcome(job, "default", finished_run(job.spec, tmp_path, f"r{i}")))
            on_done(i, out[-1])
        return out

    monkeypatch.setattr(many, "run_jobs", run_jobs)
    recipes = "kazoo-careful,etcd3-python,etcd-mutex-go,redis-set-px"
    argv = ["matrix", "--recipes", recipes, "--nemeses", "power-loss-all", "--runs", "1"]
    out = tmp_path / "m.md"
    with pytest.raises(SystemExit) as e:
        main([*argv, "--fsync", "relaxed", "--store", str(tmp_path / "s"), "--out", str(out)])
    assert e.value.code == 0
    assert sorted(tag for tag, _ in ran) == [
        "kazoo-careful|power-loss-all",
        "redis-set-px|power-loss-all",
    ]
    assert all(svc.fsync == "relaxed" for _, svc in ran)
    cells = json.loads(out.with_suffix(".json").read_text())
    for row in ("etcd3-python", "etcd-mutex-go"):
        assert "3.4.23 lacks" in cells[f"{row}|power-loss-all"]["na"]
    assert "n/a (--fsync relaxed is etcd's --unsafe-no-fsync" in out.read_text()
