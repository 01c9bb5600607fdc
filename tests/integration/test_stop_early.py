"""`--stop-on-violation` through a whole run: kazoo's Lock under a holder pause past its session
stops at the split, heals, tears everything down and is checked offline as usual."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from zkjepsen.docker import resources
from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec
from zkjepsen.store import RunDir


def test_stop_on_violation_ends_the_main_phase_at_the_split_and_leaves_nothing(
    zk_image, store_root, docker_client, fenced_gate
):
    """(`fenced_gate`: that gate's runs go on beside this one's, read by its own test.)"""
    spec = TestSpec(
        recipe="kazoo",
        workload="lock",
        nemesis=["pause-client"],
        nodes=3,
        clients=3,
        time_limit_s=40,
        recovery_s=1,
        session_timeout_s=2,
        seed=3,
        image=zk_image,
        params={"resource": "unguarded", "hold_s": 0.4},
        stop_on_violation=True,
    )
    gen = steps(sleep(2), on(on_acquire(retries=10), fault("pause-client", duration="1.5x")))
    r = run_test(spec, store_root, gen=gen)
    early = r.results["early_stop"]
    assert early["stopped_early"] is True and early["reason"] == "violation", early
    # In this order: the violation's window opened, then the follower stopped the main phase
    # (its history time; how soon is benchmarks/stop_early.py's figure).
    assert early["violation"]["start"] is not None, early
    assert early["violation"]["start"] <= early["history_ns"], early
    # The offline check, on the whole history, finds what the online one stopped on: the same
    # pair of believed holds, or the same stale write (a stale write may have several newer
    # ones; offline names the newest as its witness, online the first it saw).
    v = early["violation"]
    lock = r.results["lock"]
    assert r.valid is False and lock["valid"] is False
    if v["kind"] == "belief":
        offline = {(b["start"], tuple(b["clients"])) for b in lock["belief_overlaps"]}
        assert (v["start"], tuple(v["clients"])) in offline, (v, lock["belief_overlaps"])
    else:
        assert v["kind"] == "effect", v
        stale = v["evidence"]["writes"][0]
        offline = [e["writes"][0] for e in lock["effect_overlaps"]]
        assert stale in offline, (v, lock["effect_overlaps"])
    # Healed and torn down: nothing of the run is left; the report is written as usual.
    d = RunDir(r.store_dir)
    run_id = json.loads(d.schedule.read_text())["run_id"]
    assert resources.leftovers(docker_client, run_id) == []
    saved = json.loads(d.results.read_text())
    assert saved["early_stop"]["stopped_early"] is True
    assert d.timeline.exists() and d.history.exists()
    assert "main phase stopped" in d.run_log.read_text()


ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]


def gate(*argv: str, timeout: float = 240, env: dict | None = None) -> tuple[int, str]:
    """Exit code and what it printed (the console is stderr, as for `zkjepsen test`)."""
    r = subprocess.run(
        [*ZKJEPSEN, "gate", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return r.returncode, r.stdout


def junit_cases(path) -> dict:
    """scenario -> (its testcase, its suite's properties), from the XML read with xml.etree."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    out = {}
    for suite in root.findall("testsuite"):
        (case,) = suite.findall("testcase")
        props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        out[case.get("name")] = (case, props)
    return out


def test_gate_fails_kazoos_lock_at_the_first_split(zk_image, store_root, tmp_path):
    """The pause splits kazoo's Lock within seconds; a leader kill seldom does. The gate's answer
    is known at the pause's split: the leader-kill scenario is asked to end its main phase then
    (or has split by itself), not run to its 60 s cap. CI reads it: the JUnit XML has the
    failure with the violation, GitHub's step summary the table, an annotation per failure."""
    xml, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    code, out = gate(
        "--recipe", "kazoo", "--scenarios", "client-pause,leader-kill", "--time-limit", "60s",
        "--parallel", "2", "--image", zk_image, "--store", str(store_root),
        "--junit-xml", str(xml),
        env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"},
    )  # fmt: skip
    assert code == 1, out
    (line,) = [x for x in out.splitlines() if x.strip().startswith("client-pause")]
    # Whichever shows first stops it: a pair of believed holds, or a paused holder's stale write
    # landing after its successor's (both are the split; which comes first is timing).
    assert "INVALID" in line and "stopped" in line, out
    assert "belief:" in line or "effect:" in line, out
    # Its power is on the line, what the verdict rests on. Whether this pause counts as landed
    # depends on when the stop healed it (a pause cut short at the violation may end, in the
    # record, before its session timeout): the machine's pace decides that, so it is not asserted.
    assert "landed" in line, line
    (other,) = [x for x in out.splitlines() if x.strip().startswith("leader-kill")]
    assert "stopped" in other and "ran 60s" not in other, out
    assert "(another scenario failed)" in other or "INVALID" in other, out
    last = out.splitlines()[-1]  # the leader kill may have landed (valid) before it was asked
    assert last.startswith(("INVALID 0/2 scenarios valid", "INVALID 1/2 scenarios valid")), out
    cases = junit_cases(xml)
    assert set(cases) == {"client-pause", "leader-kill"}
    case, props = cases["client-pause"]
    failure = case.find("failure")
    assert failure is not None and failure.get("message").startswith("lock: "), out
    assert props["store"] in failure.text and props["store"] in out.splitlines()[-1]
    assert 0 < float(props["power_upper_bound"]) <= 1 and int(props["violations"]) >= 1
    assert int(props["landed"]) >= 0 and props["seed"]
    assert (int(props["landed"]) == 0) == ("no fault landed" in line), line  # the same power
    table = [x for x in summary.read_text().splitlines() if x.startswith("| kazoo on zookeeper")]
    assert len(table) == 2 and "| INVALID |" in table[0], table
    assert "::error title=zkjepsen gate%3A kazoo on zookeeper%3A client-pause::" in out, out


@pytest.fixture(scope="module")
def fenced_gate(zk_image, tmp_path_factory):
    """The fenced gate of `test_gate_judges_a_fenced_resource_with_its_bounds`, started when
    the module's first test asks for it, so that it runs beside that test's run and not after
    it: (its process, its JUnit XML)."""
    tmp = tmp_path_factory.mktemp("fenced")
    xml = tmp / "good.xml"
    proc = subprocess.Popen(
        [*ZKJEPSEN, "gate",
         "--recipe", "kazoo", "--scenarios", "client-pause,leader-kill", "--time-limit", "10s",
         "--parallel", "2", "--param", "resource=fenced", "--param", "property=effect",
         "--param", "writes=1", "--image", zk_image, "--store", str(tmp / "store"),
         "--junit-xml", str(xml)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    yield proc, xml
    if proc.poll() is None:  # its test did not run: it ends its runs on SIGINT
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=240)


def test_gate_judges_a_fenced_resource_with_its_bounds(fenced_gate):
    """Fencing makes kazoo's split holders a near miss: judged on effects (property=effect, one
    write per hold, so no multi-step update to leave half done) the gate is not invalid, and
    each scenario says how many faults landed and the bound they give (in the JUnit XML too)."""
    proc, xml = fenced_gate
    out, _ = proc.communicate(timeout=240)
    code = proc.returncode
    assert code in (0, 2), out
    rows = [x for x in out.splitlines() if x.startswith("  ")]
    assert len(rows) == 2, out
    for row in rows:
        assert "ran 10s" in row and ("≤" in row or "no fault landed" in row), row
    word = out.splitlines()[-1].split()[0]
    assert word == {0: "VALID", 2: "UNKNOWN"}[code], out
    cases = junit_cases(xml)
    assert set(cases) == {"client-pause", "leader-kill"}
    for case, props in cases.values():
        assert case.find("failure") is None, ET.tostring(case)
        assert props["violations"] == "0" and props["verdict"] in ("VALID", "UNKNOWN")
        landed, bound = int(props["landed"]), float(props["power_upper_bound"])
        assert bound == 1.0 if not landed else 0 < bound < 1, props


def test_gate_refuses_a_bad_power_target_before_anything_runs(store_root):
    code, out = gate("--recipe", "kazoo", "--until-power", "1.5", "--store", str(store_root))
    assert code == 254 and "between 0 and 1" in out and len(out.splitlines()) == 1, out
    assert not any(store_root.iterdir()) if store_root.exists() else True
