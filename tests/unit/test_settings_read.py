"""Property (issue 48, every setting used or refused): a valid run, drawn with parameters from
its own parts' declarations (its workload's, its recipe's, its service's, its faults'), is
accepted whole; the same run with one setting no part of it reads (another recipe's or fault's
parameter, a target beyond its servers or clients, a client's target for a fault on servers or
back, a trigger its workload cannot fire, a bound on faults it does not inject, a program's
folder without a program, a minority of fewer than 3, a sub-second clock step, a list with a
stray comma) is refused first: exit 254, one line, nothing
created. Through the CLI (`test --config`, `matrix`) and a stored test.json (`analyze`,
`replay`, `shrink`), with DOCKER_HOST on a dead socket: what is accepted goes on to look for the
engine (255, "cannot reach a Docker engine"), so no engine is needed.

The figures are printed; ZKJEPSEN_SETTINGS_EXAMPLES (default 200) and ZKJEPSEN_SETTINGS_SEED
(default: derandomized) explore further.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/unit, for the shared helpers
from hostile import Tally, examples, refusal_wrong, run_bounded, seeded, snapshot  # noqa: E402
from stored_folder import make_run, stored_spec  # noqa: E402

from zkjepsen.errors import BadInput  # noqa: E402
from zkjepsen.recipes import RECIPES  # noqa: E402
from zkjepsen.run import readers  # noqa: E402
from zkjepsen.run.readers import ACQUIRING, Shape, param_readers  # noqa: E402
from zkjepsen.run.spec import TestSpec  # noqa: E402
from zkjepsen.workloads import WORKLOADS  # noqa: E402
from zkjepsen.workloads.params import (  # noqa: E402
    KNOWN,
    RECIPE_PARAMS,
    SERVICE_PARAMS,
    WORKLOAD_PARAMS,
    WORKLOAD_READS_TOO,
    Param,
)

DEAD_ENGINE = "unix:///nonexistent/zkjepsen-settings-read.sock"
EXAMPLES = examples("ZKJEPSEN_SETTINGS_EXAMPLES", 200)
ACCEPTED = "cannot reach a Docker engine"

# Candidate runs: (recipe, workload) and the faults to draw from; each kept only if the rest of
# `validate_spec` (this check left out) takes it with no parameter, so what makes a run valid
# is not decided by the check under test.
PAIRS = [
    ("kazoo", "lock"),
    ("kazoo", "election"),
    ("kazoo", "counter"),
    ("kazoo", "register"),
    ("kazoo", "queue"),
    ("kazoo", "ping"),
    ("kazoo", "barrier"),
    ("curator", "lock"),
    ("curator-java", "lock"),
    ("redis-setnx", "lock"),
    ("redis-set-px", "lock"),
    ("redlock", "lock"),
    ("etcd3-python", "lock"),
    ("etcd-mutex-go", "lock"),
    ("pg-advisory", "lock"),
]
FAULTS = [
    "none",
    "kill-one",
    "kill-minority",
    "pause-client",
    "kill-client",
    "partition-one",
    "clock-bump",
    "clock-rate-leader",
    "clock-skew-client",
    "clock-rate-client",
]
CLIENT_SIDE = ("holder", "random")


@dataclass(frozen=True)
class Base:
    recipe: str
    workload: str
    fault: str
    nodes: int  # 3 or 5: a minority exists

    def table(self, clients: int) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "workload": self.workload,
            "nemesis": [self.fault],
            "nodes": self.nodes,
            "clients": clients,
            "time_limit_s": 5.0,
        }


def _rest_takes(table: dict[str, Any]) -> bool:
    """The rest of the validation (all but run/readers.py) takes this run."""
    from zkjepsen.run.resolve import validate_spec

    mp = pytest.MonkeyPatch()
    try:
        import zkjepsen.run.resolve as resolve

        mp.setattr(resolve, "check_read", lambda spec: None)
        mp.setattr(resolve, "check_can_act", lambda spec, shape: None)
        validate_spec(TestSpec(**table))
        return True
    except BadInput:
        return False
    finally:
        mp.undo()


def _bases() -> list[Base]:
    from zkjepsen.backends.registry import backend_info
    from zkjepsen.nemesis.faults import KINDS

    out = []
    for recipe, workload in PAIRS:
        servers = backend_info(RECIPES[recipe].backends[0]).nodes  # a fixed shape's
        for fault in FAULTS:
            for nodes in (3, 5):
                if KINDS[fault].target == "minority" and (servers or nodes) < 3:
                    continue  # a minority of one server is that server: not a valid run
                b = Base(recipe, workload, fault, nodes)
                if _rest_takes(b.table(3)):
                    out.append(b)
    return out


BASES = _bases()


def _value(p: Param, name: str, clients: int) -> st.SearchStrategy[Any]:
    """A value the parameter's own declaration takes (and the rules across settings)."""
    if name == "locks":
        return st.integers(1, clients)
    if name == "nested":
        return st.just(False)  # True needs client_mode in-process: its own rule
    if name == "offset_s":
        return st.integers(-3600, 3600)  # clock faults step whole seconds
    if p.kind is bool:
        return st.booleans()
    if p.choices:
        return st.sampled_from(p.choices)
    if p.kind is str:
        return st.just("/zkjepsen/h48")
    lo = p.minimum if p.minimum is not None else -1000.0
    hi = p.maximum if p.maximum is not None else 1000.0
    hi = min(hi, lo + 1000.0)
    if p.kind is int:
        return st.integers(int(lo) + (1 if p.positive else 0), int(hi))
    return st.floats(lo, hi, exclude_min=p.positive, allow_nan=False)


def _servers(table: dict[str, Any]) -> int:
    """The servers the run has: its backend's fixed shape (one Redis, Redlock's masters), else
    `nodes` (told independently of the check under test, from the registry)."""
    from zkjepsen.backends.registry import backend_info

    return backend_info(RECIPES[table["recipe"]].backends[0]).nodes or table["nodes"]


def _shape(table: dict[str, Any]) -> Shape:
    return Shape.of(TestSpec(**table))


@st.composite
def valid_runs(draw: Any, base: Base | None = None) -> dict[str, Any]:
    """A valid run: a base, its own parameters, and the steering its faults can take."""
    b = base or draw(st.sampled_from(BASES))
    clients = draw(st.integers(1, 6))
    table = b.table(clients)
    own = sorted(param_readers(_shape(table)))
    for name in draw(st.lists(st.sampled_from(own), unique=True, max_size=4)) if own else ():
        table.setdefault("params", {})[name] = draw(_value(KNOWN[name], name, clients))
    if b.fault != "none":
        from zkjepsen.nemesis.faults import KINDS

        if draw(st.booleans()):
            if KINDS[b.fault].target in CLIENT_SIDE:
                table["fault_target"] = f"client:{draw(st.integers(1, clients))}"
            else:
                table["fault_target"] = f"n{draw(st.integers(1, _servers(table)))}"
        if b.workload in ACQUIRING and draw(st.booleans()):
            table["fault_trigger"] = "acquired"
        if draw(st.booleans()):
            table["until_power"] = 0.05
    return table


def _toml(table: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, str)):
            return json.dumps(v)
        return repr(v)

    lines = [f"{k} = {value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    for k, v in table.items():
        if isinstance(v, dict):
            lines += [f"[{k}]", *(f"{n} = {value(x)}" for n, x in v.items())]
    return "\n".join(lines) + "\n"


@st.composite
def one_unread(draw: Any) -> tuple[str, dict[str, Any], list[str]]:
    """(what was added, the run's table, extra command-line words): a valid run and one
    setting none of its parts reads or can act on."""
    what = draw(
        st.sampled_from(
            [
                "foreign param",
                "target beyond",
                "target of the other side",
                "trigger never fires",
                "nothing to steer",
                "minority of few",
                "client dir",
                "sub-second offset",
                "stray comma",
            ]
        )
    )
    if what == "foreign param":
        table = draw(valid_runs())
        others = sorted(set(KNOWN) - param_readers(_shape(table)))
        name = draw(st.sampled_from(others))
        clients = table["clients"]
        table.setdefault("params", {})[name] = draw(_value(KNOWN[name], name, clients))
        return f"{what} ({name})", table, []
    if what == "target beyond":
        faulty = [b for b in BASES if b.fault != "none"]
        table = draw(valid_runs(draw(st.sampled_from(faulty))))
        from zkjepsen.nemesis.faults import KINDS

        if KINDS[table["nemesis"][0]].target in CLIENT_SIDE or _servers(table) >= 9:
            table["fault_target"] = f"client:{table['clients'] + draw(st.integers(1, 90))}"
        else:
            table["fault_target"] = f"n{draw(st.integers(_servers(table) + 1, 9))}"
        return what, table, []
    if what == "target of the other side":  # a server's name for a client's fault, or back
        faulty = [b for b in BASES if b.fault != "none"]
        table = draw(valid_runs(draw(st.sampled_from(faulty))))
        from zkjepsen.nemesis.faults import KINDS

        if KINDS[table["nemesis"][0]].target in CLIENT_SIDE:
            table["fault_target"] = draw(
                st.sampled_from([f"n{_servers(table)}", "n1", "one", "leader", "majority"])
            )
        else:
            table["fault_target"] = draw(st.sampled_from([f"client:{table['clients']}", "holder"]))
        return what, table, []
    if what == "trigger never fires":
        never = [b for b in BASES if b.fault != "none" and b.workload not in ACQUIRING]
        table = draw(valid_runs(draw(st.sampled_from(never))))
        table["fault_trigger"] = draw(st.sampled_from(readers.ON_ACQUIRE))
        return what, table, []
    if what == "nothing to steer":
        calm = [b for b in BASES if b.fault == "none"]
        table = draw(valid_runs(draw(st.sampled_from(calm))))
        key, v = draw(
            st.sampled_from(
                [("until_power", 0.05), ("fault_target", "n1"), ("fault_target", "client:1")]
                + [("fault_trigger", t) for t in readers.ON_ACQUIRE]
            )
        )
        table[key] = v
        return f"{what} ({key})", table, []
    if what == "minority of few":
        table = draw(valid_runs(Base("kazoo", "lock", "kill-minority", 3)))
        table["nodes"] = draw(st.integers(1, 2))
        table.pop("fault_target", None)
        return what, table, []
    if what == "client dir":
        table = draw(valid_runs())
        return what, table, ["--client-dir", "."]
    if what == "sub-second offset":
        clocks = [b for b in BASES if b.fault in ("clock-bump", "clock-skew-client")]
        table = draw(valid_runs(draw(st.sampled_from(clocks))))
        whole = draw(st.integers(-60, 60))
        table.setdefault("params", {})["offset_s"] = whole + draw(st.sampled_from([0.5, 0.25]))
        return what, table, []
    table = draw(valid_runs())
    fault = table["nemesis"][0]
    comma = draw(st.sampled_from([f"{fault},", f",{fault}", f"{fault},,none"]))
    return what, table, ["--nemesis", comma]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from zkjepsen import store
    from zkjepsen.docker import resources

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    for name in ("DOCKER_CONTEXT", "ZKJEPSEN_STORE", "ZKJEPSEN_FILES", "ZKJEPSEN_CONTROLLER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(store, "DEFAULT_ROOT", Path("store"))
    monkeypatch.setattr(resources, "SCRATCH_ROOT", ws / "scratch")
    return ws


def _run_test(ws: Path, table: dict[str, Any], extra: list[str]) -> tuple[Any, str, set[str]]:
    (ws / "run.toml").write_text(_toml(table))
    before = snapshot(ws)
    code, _out, err = run_bounded(["test", "--config", "run.toml", *extra])
    return code, err, snapshot(ws) - before


def test_declarations_name_what_exists():
    """Each declaration names a registered recipe, workload, service and known parameter, and
    every known parameter is read by some part (else it could never be given)."""
    from zkjepsen.backends.registry import services
    from zkjepsen.nemesis.faults import KINDS

    assert set(RECIPE_PARAMS) <= set(RECIPES)
    assert set(WORKLOAD_PARAMS) | set(WORKLOAD_READS_TOO) <= set(WORKLOADS)
    assert set(SERVICE_PARAMS) <= set(services())
    assert set(readers.ACQUIRING) <= set(WORKLOADS)
    declared = {n for ps in WORKLOAD_PARAMS.values() for n, _ in ps}
    declared |= {n for ps in (*WORKLOAD_READS_TOO.values(), *RECIPE_PARAMS.values()) for n in ps}
    declared |= {n for ps in SERVICE_PARAMS.values() for n in ps}
    fault_params = {n for k in KINDS.values() for n in k.params}
    assert declared <= set(KNOWN)
    assert set(KNOWN) <= declared | fault_params, set(KNOWN) - declared - fault_params
    assert len(BASES) >= 40, BASES  # the draws cover many recipes, workloads and faults


def test_valid_runs_are_accepted_and_one_unread_setting_is_refused(workspace, request):
    tally = Tally()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=os.environ.get("ZKJEPSEN_SETTINGS_SEED") is None,
    )
    @given(valid=valid_runs(), bad=one_unread())
    def check(valid: dict[str, Any], bad: tuple[str, dict[str, Any], list[str]]) -> None:
        code, err, created = _run_test(workspace, valid, [])
        wrong = None if code == 255 and ACCEPTED in err else f"exit {code}: {err.strip()}"
        tally.add("valid run accepted", json.dumps(valid), wrong)
        # The same run, its recipe and faults given on the command line over a config of
        # another recipe and none: what is read is the whole run's to say, not the file's.
        words = ["--recipe", valid["recipe"], "--nemesis", valid["nemesis"][0]]
        code, err, created = _run_test(
            workspace, {**valid, "recipe": "kazoo", "nemesis": ["none"]}, words
        )
        wrong = None if code == 255 and ACCEPTED in err else f"exit {code}: {err.strip()}"
        tally.add("valid run accepted (over a config)", json.dumps(valid), wrong)
        what, table, extra = bad
        code, err, created = _run_test(workspace, table, extra)
        tally.add(
            what.split(" (")[0],
            f"{what}: {json.dumps(table)} {extra}",
            refusal_wrong(code, err, created),
        )

    seeded(check, "ZKJEPSEN_SETTINGS_SEED")()
    tally.assert_none_wrong(tally.report(request, "settings used or refused (test --config)"))


def test_a_matrix_refuses_a_setting_no_cell_reads(workspace, request):
    """A matrix's settings are shared: one a cell leaves unread another may read (lock_ttl_s on
    kazoo and redis-setnx), but one that no cell reads is refused, and so is a stray comma."""
    tally = Tally()
    base = ["matrix", "--time-limit", "5", "--nemeses", "none,pause-client"]
    cases = [
        (["--recipes", "kazoo,redis-setnx", "--param", "lock_ttl_s=3"], False),
        (["--recipes", "kazoo,curator", "--param", "lock_ttl_s=3"], True),
        (["--recipes", "kazoo", "--param", "offset_s=3"], True),
        (["--recipes", "kazoo", "--fault-trigger", "acquired"], False),
        (["--recipes", "kazoo", "--workload", "register", "--fault-trigger", "acquired"], True),
        (["--recipes", "kazoo,", "--param", "hold_s=1"], True),
        (["--recipes", "kazoo,,curator"], True),
    ]
    for words, refused in cases:
        argv = [*base, *words]
        before = snapshot(workspace)
        code, _out, err = run_bounded(argv)
        created = snapshot(workspace) - before
        if refused:
            wrong = refusal_wrong(code, err, created)
        else:
            wrong = None if code == 255 and ACCEPTED in err else f"exit {code}: {err.strip()}"
        tally.add("refused" if refused else "accepted", " ".join(argv), wrong)
    tally.assert_none_wrong(tally.report(request, "matrix settings used or refused"))


@pytest.mark.parametrize("command", ["analyze", "replay", "shrink"])
@pytest.mark.parametrize(
    "over",
    [
        {"params": {"lock_ttl_s": 3.0}},
        {"params": {"offset_s": 5.0}},
        {"fault_target": "client:99"},
        {"nemesis": ["kill-one"], "fault_target": "n9"},
        {"nemesis": ["none"], "until_power": 0.05},
        {"client_dir": "."},
    ],
)
def test_a_stored_run_with_an_unread_setting_is_refused(workspace, command, over):
    """A stored test.json goes through the same check as `test`'s before any command acts."""
    run = make_run(workspace)
    table = stored_spec(**{"nemesis": ["pause-client"], **over})
    (run / "test.json").write_text(json.dumps(table))
    before = snapshot(workspace)
    code, _out, err = run_bounded([command, str(run)])
    assert refusal_wrong(code, err, snapshot(workspace) - before) is None, (code, err)
    assert "test.json" in err, err  # the file it is in, as every stored file's refusal


def _schedule(kind: str) -> Any:
    from zkjepsen.nemesis.generator import fault, on, steps
    from zkjepsen.nemesis.triggers import on_acquire

    return {
        "target beyond the clients": steps(fault("pause-client", target="client:7")),
        "target beyond the servers": steps(fault("kill-one", target="n4")),
        "trigger client beyond": on(on_acquire(client=9), steps(fault("pause-client"))),
        "sub-second offset": steps(fault("clock-bump", target="n1", offset_s=0.5)),
        "ok": on(on_acquire(client=3), steps(fault("clock-bump", target="n3", offset_s=60))),
    }[kind]


@pytest.mark.parametrize(
    ("kind", "over", "word"),
    [
        ("target beyond the clients", {}, "names no client"),
        ("target beyond the servers", {}, "names no server"),
        ("trigger client beyond", {}, "waits for client 9"),
        ("sub-second offset", {}, "whole seconds"),
        ("ok", {"workload": "register"}, "never acquires"),  # an acquire trigger, no acquire
        ("ok", {"fault_target": "n2"}, "schedule is given"),  # its faults name their targets
    ],
)
def test_a_given_schedule_is_checked_against_the_run(kind, over, word):
    """A schedule given as Python (the pytest plugin's gen=, a scenario's steps), recorded into
    the spec: its targets, trigger clients and magnitudes against the run, as test's flags."""
    from zkjepsen.run.resolve import resolve

    with pytest.raises(BadInput, match=word) as e:
        resolve(TestSpec(**{"nodes": 3, "clients": 3, **over}), _schedule(kind))
    assert "\n" not in str(e.value)
    resolve(TestSpec(nodes=3, clients=3), _schedule("ok"))  # the same run, as given, is taken


def test_a_reproducer_of_a_run_aimed_by_fault_target_runs(tmp_path):
    """shrink's emitted test runs its SCHEDULE with gen=: the run's fault_target, trigger and
    budget steered the standard schedule, which the SCHEDULE replaces (its faults carry their
    targets), so SPEC leaves them out rather than be refused as read by nothing."""
    from zkjepsen.cli.minimal import emit_pytest
    from zkjepsen.nemesis.executed import FaultOp
    from zkjepsen.reproduce.replay import faults_for_replay
    from zkjepsen.reproduce.shrink import Candidate, ShrinkResult
    from zkjepsen.run.resolve import resolve
    from zkjepsen.run.stored import StoredRun
    from zkjepsen.store import RunDir

    spec = TestSpec(nodes=3, clients=3, nemesis=["kill-one"], fault_target="n2", max_faults=2)
    spec.fault_trigger = "time"
    resolve(spec)
    kill = {"fault_id": 1, "f": "kill-one", "target": "n2", "targets": ["n2"], "detail": {},
            "start_ns": 2_000_000_000, "end_ns": 3_000_000_000}  # fmt: skip
    faults = faults_for_replay([FaultOp.from_json(kill)])
    run = StoredRun(RunDir(tmp_path), spec, {"faults": [kill]}, {"valid": False})
    ns: dict = {}
    text = emit_pytest(ShrinkResult(Candidate(spec, faults, "x"), 2, 3), run, "k")
    exec(compile(text, "t", "exec"), ns)  # noqa: S102
    emitted = resolve(ns["SPEC"], ns["SCHEDULE"]).spec
    assert emitted.fault_target is None and emitted.generator, text
    assert any(t.get("target") == "n2" for t in emitted.generator), emitted.generator
