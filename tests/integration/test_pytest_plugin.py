"""The README's CI-gate example, run by pytest inside pytest: it fails on a broken lock (naming
the violations and the evidence) and passes on kazoo's Lock without faults.

The inner gates are one inner pytest session (a module-scoped fixture, `inner`): each test
below is one inner test's outcome and folder. One session, not one per gate, pays pytest's and
the plugin's start once (each run still has its own ensemble, as `zkjepsen_run` gives it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
TEMPLATES = TESTS.parent / "docs" / "templates"

GATE = """
@pytest.mark.zkjepsen_faults(max_faults=1)
def test_{name}(zkjepsen_run):
    result = zkjepsen_run(recipe="{recipe}", workload="lock", nemesis={nemesis},
                          nodes=3, clients=3, time_limit_s={time_limit}, session_timeout_s=3.0,
                          recovery_s=3.0, interval_s=1.0, fault_duration_s=1.0)
    print("STORE", result.store_dir)
    {check}
"""

CMD_GATE = """
def test_{name}(zkjepsen_run):
    result = zkjepsen_run(client_cmd="python3 python_driver.py", client_dir="{templates}",
                          workload="lock", nemesis=["none"], nodes=3, clients=3,
                          time_limit_s=8, session_timeout_s=3.0, recovery_s=3.0)
    result.assert_valid()
"""

GEN_GATE = """
def test_{name}(zkjepsen_run):
    gen = lanes(
        steps(sleep(2), on(on_acquire(retries=10), fault("pause-client", duration=1.0))),
        steps(sleep(3), fault("partition-one", duration=1.5)),
    )
    result = zkjepsen_run(recipe="kazoo", workload="lock", nodes=3, clients=3, time_limit_s=10,
                          session_timeout_s=3.0, recovery_s=3.0, gen=gen)
    print("STORE", result.store_dir)
"""

HEAD = """
import pytest
from zkjepsen.nemesis.generator import fault, lanes, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
"""

# Each outer test's inner test. NoLock's first acquires overlap at once (three clients, no
# exclusion): 4 s of main phase show it as 8 s would.
INNER = {
    "test_gate_fails_on_a_lock_that_excludes_nobody": GATE.format(
        name="nolock", recipe="subjects.nolock:NoLock", nemesis=["none"], time_limit=4,
        check="result.assert_valid()",
    ),
    "test_gate_passes_on_kazoo_without_faults": GATE.format(
        name="kazoo", recipe="kazoo", nemesis=["none"], time_limit=8,
        check="result.assert_valid()",
    ),
    # 1 s faults every ~1 s for 8 s would be several faults; the marker allows one.
    "test_fault_budget_marker_caps_the_schedule": GATE.format(
        name="budget", recipe="kazoo", nemesis=["partition-one"], time_limit=8, check="pass"
    ),
    "test_gate_runs_a_users_program_given_by_client_cmd": CMD_GATE.format(
        name="cmd", templates=TEMPLATES
    ),
    "test_a_gen_run_is_recorded_as_what_ran_and_its_folder_replays_the_same_faults": (
        GEN_GATE.format(name="gen")
    ),
}  # fmt: skip


@dataclass
class Case:
    """One inner test's outcome (passed, failed, error, skipped), its failure's text, what it
    printed."""

    outcome: str
    failure: str
    out: str

    def store_dir(self) -> Path:
        """The run's folder, as the inner test printed it."""
        (line,) = [x for x in self.out.splitlines() if x.startswith("STORE ")]
        return Path(line.split(" ", 1)[1])


@dataclass
class Inner:
    cases: dict[str, Case]  # by outer test name
    store: Path
    tmp: Path


@pytest.fixture(scope="module")
def inner(request, zk_image, tmp_path_factory) -> Inner:
    """The inner tests of the outer tests selected in this module, run in one inner pytest
    session (the plugin's runs in the store `--zk-store` names); its JUnit XML gives each
    test's outcome, its failure and what it printed."""
    me = Path(request.module.__file__)
    wanted = [
        it.originalname for it in request.session.items
        if it.path == me and getattr(it, "originalname", None) in INNER
    ] or list(INNER)  # fmt: skip
    tmp = tmp_path_factory.mktemp("plugin")
    (tmp / "test_gate.py").write_text(HEAD + "".join(INNER[w] for w in dict.fromkeys(wanted)))
    store, xml = tmp / "store", tmp / "report.xml"
    # `subjects` is importable in the inner run like a user's package
    env = {**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}"}
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--zk-store={store}",
         f"--basetemp={tmp / 'basetemp'}", f"--junitxml={xml}", "-o", "junit_logging=system-out",
         "test_gate.py"],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=300 * len(wanted),
    )  # fmt: skip
    assert xml.exists(), p.stdout[-4000:] + p.stderr[-2000:]
    by_inner = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome, bad = "passed", None
        for tag, word in (("skipped", "skipped"), ("error", "error"), ("failure", "failed")):
            if case.find(tag) is not None:
                outcome, bad = word, case.find(tag)
        by_inner[case.get("name")] = Case(
            outcome,
            "" if bad is None else f"{bad.get('message')}\n{bad.text or ''}",
            case.findtext("system-out") or "",
        )
    names = {w: INNER[w].split("def ", 1)[1].split("(", 1)[0] for w in INNER}
    assert {names[w] for w in wanted} <= set(by_inner), p.stdout[-4000:] + p.stderr[-2000:]
    cases = {w: by_inner[names[w]] for w in wanted}
    return Inner(cases, store, tmp)


def test_gate_fails_on_a_lock_that_excludes_nobody(inner):
    case = inner.cases["test_gate_fails_on_a_lock_that_excludes_nobody"]
    assert case.outcome == "failed", case
    pytest.LineMatcher(case.failure.splitlines()).fnmatch_lines(
        [
            "*zkjepsen verdict INVALID*",
            "*belief overlaps; first: clients*",
            "*evidence: *timeline.html*",
        ]
    )


def test_gate_passes_on_kazoo_without_faults(inner):
    case = inner.cases["test_gate_passes_on_kazoo_without_faults"]
    assert case.outcome == "passed", case


def test_fault_budget_marker_caps_the_schedule(inner):
    case = inner.cases["test_fault_budget_marker_caps_the_schedule"]
    assert case.outcome == "passed", case
    schedule = case.store_dir() / "schedule.json"
    assert len(json.loads(schedule.read_text())["faults"]) == 1


def test_gate_runs_a_users_program_given_by_client_cmd(inner):
    """The plugin takes `client_cmd` / `client_dir` as the CLI does: the Python template,
    mounted read-only, is the lock under test (not kazoo in-process)."""
    case = inner.cases["test_gate_runs_a_users_program_given_by_client_cmd"]
    assert case.outcome == "passed", case
    (spec,) = inner.store.glob("exec-lock-none/latest/test.json")
    doc = json.loads(spec.read_text())
    assert (doc["recipe"], doc["client_cmd"]) == ("exec", "python3 python_driver.py")
    (client,) = inner.store.glob("exec-lock-none/latest/clients/control/c1/spec-c1.json")
    client_doc = json.loads(client.read_text())
    assert client_doc["command"] == ["/bin/sh", "-c", "python3 python_driver.py"]
    assert client_doc["program_mount"] == str(TEMPLATES)


def test_a_gen_run_is_recorded_as_what_ran_and_its_folder_replays_the_same_faults(inner):
    """A schedule given as Python (issue 47): the run is named after its faults, its verdict has
    their power line, and a replay of its folder runs the same faults, triggers and lanes."""
    from zkjepsen.reproduce.replay import replay
    from zkjepsen.run.stored import StoredRun

    case = inner.cases[
        "test_a_gen_run_is_recorded_as_what_ran_and_its_folder_replays_the_same_faults"
    ]
    assert case.outcome == "passed", case
    (folder,) = inner.store.glob("kazoo-lock-pause-client+partition-one/latest")
    run = StoredRun.load(folder, need_results=True, need_schedule=True)
    assert run.spec.nemesis == ["pause-client", "partition-one"]
    assert [t.get("fault") for t in run.spec.generator] == [None, None, *run.spec.nemesis]
    assert "power" in run.results  # the faults' power line
    ran = [(f.f, f.trigger, f.lane) for f in run.faults]
    # both faults ran; in which order is the two lanes' timing (a trigger against a sleep)
    assert sorted(f for f, _, _ in ran) == ["partition-one", "pause-client"]
    (again,) = replay(run, 1, store_root=inner.tmp / "replays")
    replayed = StoredRun.load(again.store_dir, need_schedule=True)
    assert replayed.spec.nemesis == run.spec.nemesis and replayed.spec.generator is None
    assert sorted((f.f, f.trigger, f.lane) for f in replayed.faults) == sorted(
        ran, key=lambda r: r[0]
    )
