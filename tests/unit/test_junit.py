"""The CI reports (report/junit.py) from verdict values, no Docker: JUnit XML valid against the
schema Jenkins' xUnit plugin validates with (junit-10.xsd, vendored beside this file) and read
back with xml.etree; the GitHub step summary's table and `::error` annotations; the gate's
scenario rows as cases; a --junit-xml path that cannot be written refused before anything."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from zkjepsen.checker import Violation
from zkjepsen.checker.power import FaultPower, Power
from zkjepsen.report.junit import (
    Case,
    case_of,
    error_annotations,
    first_violation,
    matrix_cases,
    publish,
    summary_table,
    write_junit,
)
from zkjepsen.run.fanout import NOT_RUN, Job, Outcome
from zkjepsen.run.gate import gate_cases, row_of
from zkjepsen.run.outcome import RunResult
from zkjepsen.run.spec import TestSpec

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "schemas" / "junit-10.xsd"))


def power_table(landed: int, violated: int, upper: float) -> dict:
    p = Power((FaultPower("pause-client", landed, violated, upper, landed + 1),), prop="belief")
    return {"valid": True, **p.to_json()}


def invalid_results() -> dict:
    v = Violation("belief", (5, 3), 17_780_000_000, 18_070_000_000, ({"f": "pause-client"},))
    lock = {"valid": False, "violations": [v.to_json()], "violation_counts": {"belief": 4}}
    return {
        "valid": False,
        "lock": lock,
        "liveness": {"valid": True, "violations": []},
        "power": power_table(1, 1, 0.95),
        "early_stop": {
            "stopped_early": True,
            "reason": "violation",
            "after_main_start_s": 5.4,
            "why": "belief violation confirmed online: clients [5, 3]",
        },
    }


def valid_results(landed: int = 30, upper: float = 0.095) -> dict:
    return {
        "valid": True,
        "lock": {"valid": True, "violations": []},
        "power": power_table(landed, 0, upper),
    }


def asked_results() -> dict:
    r = valid_results(2, 0.78)
    r["early_stop"] = {"stopped_early": True, "reason": "asked", "after_main_start_s": 6.1}
    return r


def run(results: dict, valid, folder: str, seed: int = 7, nemesis: str = "pause-client"):
    spec = TestSpec(recipe="kazoo", nemesis=[nemesis], seed=seed, time_limit_s=60.0)
    return RunResult(spec, Path(folder), valid, results, {})


def gate_runs() -> list:
    return [
        ("client-pause", run(invalid_results(), False, "store/gate-client-pause/1")),
        ("client-cut", run(asked_results(), True, "store/gate-client-cut/1")),
        ("leader-kill", run(valid_results(), True, "store/gate-leader-kill/1")),
    ]


def written(tmp_path: Path, cases: list[Case]) -> ET.Element:
    out = tmp_path / "out.xml"
    write_junit(out, cases, "zkjepsen gate")
    SCHEMA.validate(str(out))  # raises with the first rule broken
    return ET.parse(out).getroot()


def test_a_gate_report_is_valid_junit_with_a_case_per_scenario(tmp_path):
    rows = [row_of(name, r) for name, r in gate_runs()]
    root = written(tmp_path, gate_cases(rows))
    assert root.tag == "testsuites"
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["client-pause", "client-cut", "leader-kill"]
    assert {c.get("classname") for c in cases} == {"kazoo on zookeeper"}
    assert {s.get("name") for s in root.findall("testsuite")} == {"kazoo on zookeeper"}
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "0")

    failure = cases[0].find("failure")
    line = first_violation(invalid_results())
    assert failure.get("message") == line
    assert line.startswith("lock: 4 belief overlaps; first: clients [5, 3] at 17.78s")
    assert "store/gate-client-pause/1" in failure.text
    assert "lock: INVALID" in failure.text and "liveness: VALID" in failure.text
    assert cases[1].find("skipped").get("message") == "stopped 6.1s in: another scenario failed"
    assert cases[1].find("failure") is None
    assert [list(c) for c in cases[2]] == [[]] and cases[2].find("system-out") is not None


def test_each_case_carries_its_power_and_run_in_properties(tmp_path):
    root = written(tmp_path, [case_of(r, name) for name, r in gate_runs()])
    props = [
        {p.get("name"): p.get("value") for p in s.findall("properties/property")}
        for s in root.findall("testsuite")
    ]
    for p in props:
        assert 0 <= float(p["power_upper_bound"]) <= 1
        assert {"landed", "violations", "seed", "store"} <= set(p)
    assert [float(p["power_upper_bound"]) for p in props] == [0.95, 0.78, 0.095]
    assert [p["landed"] for p in props] == ["1", "2", "30"]
    assert [p["violations"] for p in props] == ["4", "0", "0"]
    assert props[0]["seed"] == "7" and props[0]["store"] == "store/gate-client-pause/1"


def test_unknown_is_an_error_and_not_run_or_na_is_skipped(tmp_path):
    unknown = {"valid": "unknown", "power": {"valid": "unknown", "reason": "no fault landed"}}
    not_run = RunResult(TestSpec(recipe="kazoo"), Path(""), "unknown", {"error": NOT_RUN}, {})
    rows = [row_of("client-cut", run(unknown, "unknown", "s/1")), row_of("leader-kill", not_run)]
    cases = gate_cases(rows)
    assert [c.status for c in cases] == ["error", "skipped"]
    assert "no fault landed" in cases[0].message and cases[1].message == NOT_RUN
    # A run that never ran ran no time and has no folder (not `.`, the current directory).
    assert rows[1].store_dir is None and not rows[1].line.startswith("ran "), rows[1]
    assert cases[1].folder == "" and "folder: none" in cases[1].text
    spec = TestSpec(recipe="kazoo", nemesis=["kill-leader"])
    outcome = Outcome(Job(spec, tag="kazoo|kill-leader"), "", run(valid_results(), True, "m/1"))
    mcases = matrix_cases([outcome, outcome], {"redlock|kill-leader": "no leader"})
    assert [(c.suite, c.name, c.status) for c in mcases] == [
        ("kazoo on zookeeper", "kill-leader run 1", "passed"),
        ("kazoo on zookeeper", "kill-leader run 2", "passed"),
        ("redlock", "kill-leader", "skipped"),
    ]
    root = written(tmp_path, cases + mcases)
    assert len(root.findall("testsuite/testcase/error")) == 1
    assert len(root.findall("testsuite/testcase/skipped")) == 2


def test_a_scenario_run_passes_or_fails_on_its_expectation(tmp_path):
    bad = run(invalid_results(), False, "s/1")
    cases = [
        case_of(bad, "pause-past-session", expected=(True, "found ['belief']")),
        case_of(bad, "pause-past-session", expected=(False, "expected valid, got False")),
    ]
    assert [c.status for c in cases] == ["passed", "failed"]
    root = written(tmp_path, cases)
    assert root.findall("testsuite/testcase/failure")[0].get("message") == (
        "expected valid, got False"
    )


def test_the_schema_check_can_fail():
    # The vendored schema refuses what JUnit readers refuse: properties on a testcase, a suite
    # without counts. (Why each case has a suite of its own for its properties.)
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        SCHEMA.validate(
            '<testsuites><testsuite name="a" tests="1" failures="0" errors="0">'
            '<testcase name="x"><properties/></testcase></testsuite></testsuites>'
        )
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        SCHEMA.validate('<testsuites><testsuite name="a"/></testsuites>')


def test_control_characters_and_markup_in_messages_stay_valid_xml(tmp_path):
    nasty = 'a <b> & "c" \x1b[31m red \x00'
    case = Case("kazoo on zookeeper", "x", "failed", nasty, nasty, properties={"p": nasty})
    root = written(tmp_path, [case])
    assert root.find("testsuite/testcase/failure").get("message") == 'a <b> & "c" [31m red '


def test_github_gets_a_summary_table_and_an_annotation_per_failure(tmp_path):
    cases = [case_of(r, name) for name, r in gate_runs()]
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    out = io.StringIO()
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    publish(tmp_path / "g.xml", cases, "zkjepsen gate", env=env, out=out)
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not overwritten
    table = [x for x in text.splitlines() if x.startswith("| ")]
    assert table[0] == ("| scenario | verdict | landed faults | bound | first violation | folder |")
    assert len(table) == 4
    assert table[1].startswith("| kazoo on zookeeper: client-pause | INVALID | 1 | ≤ 95.0 % |")
    assert "`store/gate-client-pause/1`" in table[1]
    assert "| ≤ 9.5 % |" in table[3]
    lines = out.getvalue().splitlines()
    assert lines == error_annotations(cases, "zkjepsen gate") and len(lines) == 1
    title = "zkjepsen gate%3A kazoo on zookeeper%3A client-pause"
    assert lines[0].startswith(f"::error title={title}::")
    assert "store/gate-client-pause/1" in lines[0]
    assert (tmp_path / "g.xml").exists()


def test_outside_github_nothing_but_the_xml(tmp_path):
    cases = [case_of(r, name) for name, r in gate_runs()]
    out = io.StringIO()
    publish(None, cases, "zkjepsen gate", env={}, out=out)
    assert out.getvalue() == "" and list(tmp_path.iterdir()) == []
    assert "client-pause" in summary_table(cases, "zkjepsen gate")


COMMANDS = [
    ["gate"],
    ["test"],
    ["matrix", "--recipes", "kazoo", "--nemeses", "none"],
    ["scenario", "run", "--all"],
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["/proc/zkj-nowhere/out.xml", "."])
def test_an_unwritable_junit_path_is_refused_before_anything(
    tmp_path, monkeypatch, capsys, command, where
):
    from zkjepsen.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")
    with pytest.raises(SystemExit) as e:
        main([*command, "--junit-xml", where])
    err = capsys.readouterr().err
    assert e.value.code == 254, err
    assert err.startswith("zkjepsen: --junit-xml") and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []
