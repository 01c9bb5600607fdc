"""`gate --backend`: a --client-cmd program on etcd or Redis is gated from the command line as
`test` runs it (each scenario's spec names the backend given), and a backend that is unknown,
or that the recipe cannot run on, is one sentence, exit 254, before anything is created."""

from __future__ import annotations

import pytest

from zkjepsen.cli import main
from zkjepsen.run.gate import gate_specs, scenario_names


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    return tmp_path


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    return e.value.code, capsys.readouterr().err


@pytest.mark.parametrize("backend", ["etcd", "redis"])
def test_each_scenario_runs_the_program_on_the_backend_given(backend):
    settings = {"client_cmd": "python3 lock.py", "backend": backend}
    specs = gate_specs(settings, scenario_names(None), 0.1)
    assert [s.backend for s in specs] == [backend] * 3
    assert {s.recipe for s in specs} == {"exec"}


def test_without_backend_a_program_runs_on_zookeeper():
    (spec,) = gate_specs({"client_cmd": "python3 lock.py"}, ["client-pause"], 0.1)
    assert spec.backend == "zookeeper"


@pytest.mark.parametrize(
    "args,words",
    [
        (["--client-cmd", "python3 lock.py", "--backend", "nosuch"], ["nosuch"]),
        (["--recipe", "kazoo", "--backend", "redis"], ["kazoo", "redis"]),
    ],
)
def test_a_backend_that_cannot_be_is_refused_before_anything(args, words, here, capsys):
    code, err = run_cli(["gate", *args], capsys)
    assert code == 254, err
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err
    assert not (here / "store").exists()


def test_a_good_backend_gets_as_far_as_the_engine(here, capsys):
    """--backend etcd is accepted: what stops this gate is the missing engine (255), not the
    option."""
    here.chmod(0o755)  # the program's folder (here) must be readable by the unprivileged user
    code, err = run_cli(["gate", "--client-cmd", "python3 lock.py", "--backend", "etcd"], capsys)
    assert code == 255 and "cannot reach" in err, err
    assert not list(here.glob("store/*/*/test.json"))
