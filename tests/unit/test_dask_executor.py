"""`--cluster`'s address and scheduler checks: one sentence, before anything is created."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from zkjepsen.cli.app import cli
from zkjepsen.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, BadInput, EnvironmentProblem
from zkjepsen.run.dask_executor import check_address


@pytest.mark.parametrize(
    "good", ["tcp://10.0.0.5:8786", "tcp://sched.example:8786", "tls://[::1]:1"]
)
def test_scheduler_addresses_are_accepted(good):
    assert check_address(good) == good


@pytest.mark.parametrize(
    "bad", ["", "tcp://", "tcp://host", "http://host:8786", "tcp://host:0", "tcp://host:70000",
            "host:8786", "tcp://-x:1", "tcp://host:8786/path"],
)  # fmt: skip
def test_malformed_scheduler_addresses_are_refused_in_one_sentence(bad):
    with pytest.raises(BadInput, match="tcp://HOST:PORT"):
        check_address(bad)


def _matrix(tmp_path, *extra):
    from zkjepsen.cli import main

    argv = ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--runs", "1",
            "--store", str(tmp_path / "s"), "--out", str(tmp_path / "m.md"), *extra]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code


def test_a_malformed_cluster_is_bad_input_and_creates_nothing(tmp_path, capsys):
    assert _matrix(tmp_path, "--cluster", "tcp://nohost") == EXIT_BAD_INPUT
    assert "is not a Dask scheduler address" in capsys.readouterr().err
    assert not (tmp_path / "s").exists() and not (tmp_path / "m.md").exists()


def test_cluster_with_engine_or_parallel_is_bad_input(tmp_path, capsys):
    with socket.socket() as s:  # a listening port: the refusal comes before any connection
        s.bind(("127.0.0.1", 0))
        s.listen()
        addr = f"tcp://127.0.0.1:{s.getsockname()[1]}"
        assert _matrix(tmp_path, "--cluster", addr, "--parallel", "2") == EXIT_BAD_INPUT
    assert "leave out --engine and --parallel" in capsys.readouterr().err


def test_an_unreachable_scheduler_is_a_broken_environment_in_one_sentence(tmp_path, capsys):
    pytest.importorskip("distributed")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert _matrix(tmp_path, "--cluster", f"tcp://127.0.0.1:{port}") == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()


def test_the_help_names_the_option():
    assert "--cluster" in CliRunner().invoke(cli, ["matrix", "--help"]).output


class _Future:
    def __init__(self, result=None, error=None):
        self._result, self._error = result, error

    def result(self):
        if self._error:
            raise self._error
        return self._result


def test_a_run_lost_past_the_schedulers_retries_is_unknown_with_the_reason(tmp_path):
    from distributed.scheduler import KilledWorker

    from zkjepsen.run.dask_executor import _collect
    from zkjepsen.run.fanout import Job
    from zkjepsen.run.spec import TestSpec

    job = Job(TestSpec(seed=3), tag="kazoo|none")
    worker = SimpleNamespace(address="tcp://10.0.0.7:4242")
    lost = _Future(error=KilledWorker("zkjepsen-run-x-0", worker, 1))
    o = _collect(lost, job, tmp_path, keep_going=True)
    assert o.run.valid == "unknown" and "KilledWorker" in o.run.results["error"]
    assert "lost on the cluster" in o.run.results["error"]
    stopped = _Future({"ok": False, "error": "cancelled", "exit_code": 143, "where": "w1"})
    assert _collect(stopped, job, tmp_path, keep_going=True).run.valid == "unknown"
    refused = _Future({"ok": False, "error": "no such recipe", "exit_code": 254, "where": "w1"})
    with pytest.raises(BadInput, match="on w1: no such recipe"):
        _collect(refused, job, tmp_path, keep_going=True)


def test_the_gate_refuses_a_bad_cluster_address_or_parallel_beside_it(tmp_path, capsys):
    from zkjepsen.cli import main

    base = ["gate", "--recipe", "kazoo", "--store", str(tmp_path / "s")]
    for extra, said in (
        (["--cluster", "http://sched:8786"], "tcp://HOST:PORT"),
        (["--cluster", "tcp://127.0.0.1:1", "--parallel", "2"], "leave out --engine and"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main([*base, *extra])
        assert exit_info.value.code == EXIT_BAD_INPUT, extra
        out = capsys.readouterr()
        assert said in out.err and len((out.out + out.err).strip().splitlines()) == 1, out
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").iterdir())


class _Cluster:
    """What check_builds asks of a Dask client: its workers, and a function run on each."""

    def __init__(self, builds, error=None):
        self.builds, self.error = builds, error

    def scheduler_info(self):
        return {"workers": {a: {"resources": {"docker": 1}} for a in self.builds}}

    def run(self, fn, workers):
        if self.error:
            raise self.error
        return {a: self.builds[a] for a in workers}


def test_workers_with_another_zkjepsen_are_a_broken_environment_in_one_sentence():
    from zkjepsen.run.dask_builds import build_id, check_builds

    mine = build_id()
    assert mine.startswith("0.") and len(mine.split("+")[1]) == 12
    check_builds(_Cluster({"tcp://a:1": mine, "tcp://b:1": mine}), "tcp://s:1")  # the same
    with pytest.raises(EnvironmentProblem) as e:
        check_builds(_Cluster({"tcp://a:1": mine, "tcp://b:1": "0.1.0+000000000000"}), "tcp://s:1")
    said = str(e.value)
    assert "worker tcp://b:1" in said and "0.1.0+000000000000" in said and mine in said, said
    with pytest.raises(EnvironmentProblem, match="cannot run zkjepsen"):
        check_builds(_Cluster({"tcp://a:1": mine}, ModuleNotFoundError("zkjepsen")), "tcp://s:1")


def test_a_task_whose_run_told_a_violation_sets_the_commands_event_once(tmp_path, monkeypatch):
    """On a cluster the gate's ask is a Dask Event: the task whose run confirmed a violation
    online sets it itself (the others' tasks watch it), once, and not before it is told."""
    import distributed

    from zkjepsen.run.dask_executor import _AskWatch

    sets: list[str] = []

    class Event:
        def __init__(self, name):
            self.name = name

        def set(self):
            sets.append(self.name)

    monkeypatch.setattr(distributed, "Event", Event)
    told = tmp_path / "told"
    watch = _AskWatch("zkjepsen-stop-abc", tmp_path / "ask")
    watch.tell_if(told)
    assert sets == []
    told.touch()
    watch.tell_if(told)
    watch.tell_if(told)
    assert sets == ["zkjepsen-stop-abc"]
    _AskWatch(None, tmp_path / "ask2").tell_if(told)  # a command that asks nobody: no Event
    assert sets == ["zkjepsen-stop-abc"]
