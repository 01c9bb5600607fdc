"""What the hunt does with a finding (reproduce/hunt_finding.py), its pure parts: which violations a
finding is about, when a confirmation run shows it again, the confirmation loop (runs faked),
the catalogue entry (it must be Python that makes a Scenario whose schedule is the one found),
what the finding leaves in the hunt's folder, and the hunt's one JUnit case. What a real hunt
confirms and shrinks is the integration test's and docs/hunt.md's to say."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.report.junit import write_junit
from zkjepsen.reproduce import hunt_finding as hf
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.run.resolve import spec_from_json


def part(valid, *kinds, **details):
    return {"valid": valid, "violations": [{"kind": k} for k in kinds], **details}


def lock(splits, beyond, *kinds):
    return part(not kinds, *kinds, belief_overlap_count=splits, beyond_lease_count=beyond)


BEYOND = {
    "valid": False,
    "lock": lock(2, 1, "belief", "effect"),
    "fencing": part(False, "backwards"),
    "atomicity": part(False, "torn"),
}
LEASE_ONLY_STUCK = {
    "valid": False,
    "lock": lock(1, 0, "belief"),
    "fencing": part(False, "backwards"),
    "liveness": part(False, "stuck"),
}
STUCK = {"valid": False, "lock": lock(0, 0), "liveness": part(False, "stuck")}
LEASE_ONLY = {"valid": False, "lock": lock(3, 0, "belief"), "atomicity": part(False, "torn")}
VALID = {"valid": True, "lock": lock(0, 0)}


# ---- which violations a finding is about --------------------------------------------------------
def test_a_split_beyond_a_lease_is_about_the_split_not_what_follows_from_it():
    assert hf.target_kinds(BEYOND) == {"lock:belief"}


def test_after_lease_splits_the_finding_is_the_other_parts():
    assert hf.target_kinds(LEASE_ONLY_STUCK) == {"liveness:stuck"}
    assert hf.target_kinds(STUCK) == {"liveness:stuck"}
    assert hf.target_kinds(LEASE_ONLY) == set()  # nothing a lease does not explain
    assert hf.target_kinds(VALID) == set()


def test_a_confirmation_must_be_found_again_and_show_the_same_violation():
    assert hf.recurred(BEYOND, {"lock:belief"})
    assert not hf.recurred(LEASE_ONLY, {"lock:belief"})  # a split a lease allows: not the bug
    assert not hf.recurred(STUCK, {"lock:belief"})  # found, but something else
    assert hf.recurred(LEASE_ONLY_STUCK, {"liveness:stuck"})
    assert not hf.recurred(VALID, {"lock:belief"})


# ---- the confirmation loop ----------------------------------------------------------------------
def fake_reruns(monkeypatch, results):
    """run_jobs replaced: each re-run gets the next of `results`."""
    calls = []

    def run_jobs(jobs, engine, parallel, store_root, keep_going=False, cluster=None):
        out = []
        for job in jobs:
            r = results[len(calls)]
            calls.append((job.spec, parallel))
            run = SimpleNamespace(
                spec=job.spec, results=r, valid=r["valid"], store_dir=store_root / f"c{len(calls)}"
            )
            out.append(SimpleNamespace(job=job, run=run))
        return out

    monkeypatch.setattr(hf, "run_jobs", run_jobs)
    return calls


def stored(tmp_path, name="hunt-pause-client"):
    spec = spec_from_json({"recipe": "kazoo", "clients": 4, "seed": 99, "name": name})
    return SimpleNamespace(spec=spec, store_dir=tmp_path / "found")


def test_confirmation_reruns_the_same_spec_and_seed_until_it_recurs(monkeypatch, tmp_path):
    calls = fake_reruns(monkeypatch, [LEASE_ONLY, BEYOND, BEYOND])
    c = hf.confirm(stored(tmp_path), {"lock:belief"}, tmp_path)
    assert (c.hits, c.runs) == (2, 3) and c.line() == "confirmed 2 of 3"
    assert len(calls) == 2  # stopped at the first recurrence
    assert all(s.seed == 99 and s.clients == 4 for s, _ in calls)
    assert calls[0][0].name == "hunt-pause-client-confirm"
    assert c.folders == [tmp_path / "c1", tmp_path / "c2"]


def test_confirmation_says_so_when_it_never_recurs(monkeypatch, tmp_path):
    fake_reruns(monkeypatch, [VALID, STUCK])
    c = hf.confirm(stored(tmp_path), {"lock:belief"}, tmp_path)
    assert c.line() == "confirmed 1 of 3"


def test_confirmation_runs_its_reruns_at_once_when_parallel(monkeypatch, tmp_path):
    calls = fake_reruns(monkeypatch, [BEYOND, BEYOND])
    c = hf.confirm(stored(tmp_path), {"lock:belief"}, tmp_path, parallel=4)
    assert c.line() == "confirmed 3 of 3" and [p for _, p in calls] == [4, 4]


# ---- the catalogue entry ------------------------------------------------------------------------
def triggered_fault():
    return FaultOp(
        "pause-client",
        target="trigger",
        start_ns=5_000_000_000,
        end_ns=8_000_000_000,
        armed_ns=3_000_000_000,
        trigger=on_acquire(retries=10).to_json(),
    )


def test_entry_names_say_the_program_the_fault_and_the_moment():
    name = hf.entry_name("pause-client", "on-acquire", "python3 etcd_blind_delete.py")
    assert name == "hunt-etcd-blind-delete-pause-client-on-acquire"
    assert hf.entry_name("kill-leader", "at-a-time", "") == "hunt-kill-leader-at-a-time"


def test_the_entry_is_a_scenario_whose_schedule_is_the_one_found():
    from zkjepsen.nemesis.generator import executed_items, items_text

    schedule = items_text(executed_items([triggered_fault()]))
    assert schedule.startswith("steps(")
    spec = {"backend": "etcd", "recipe": "exec", "client_cmd": "python3 x.py", "clients": 4}
    text = hf.entry_text("hunt-x", spec, schedule, {"lock:belief"}, "1 of 2 beyond", "found")
    space: dict = {}
    exec(  # noqa: S102 - the entry is meant to be pasted as code: it must run
        "from zkjepsen.nemesis.generator import fault, lanes, on, sleep, steps\n"
        "from zkjepsen.nemesis.triggers import *\n"
        "from zkjepsen.reproduce.scenario import Scenario, expect\n" + text,
        space,
    )
    s = space["HUNT_X"]
    assert isinstance(s, Scenario) and s.name == "hunt-x"
    assert s.settings == spec and "the program `python3 x.py` on etcd" in s.title
    assert s.expect["exec"].present == frozenset({"lock:belief"})
    assert "pause-client" in s.schedule_text() and "on_acquire" in s.schedule_text()


def test_what_a_finding_writes_into_the_hunts_folder(tmp_path):
    spec = spec_from_json({"recipe": "kazoo", "clients": 4, "seed": 5, "name": "hunt-p"})
    run = SimpleNamespace(
        spec=spec,
        store_dir=tmp_path / "r",
        faults=[triggered_fault()],
        schedule={"origin_ns": 0},
    )
    test_file = tmp_path / "r" / "minimal" / "test_reproduce_x.py"
    test_file.parent.mkdir(parents=True)
    test_file.write_text("def test_x():\n    assert False\n")
    shrunk = SimpleNamespace(best=SimpleNamespace(spec=spec, faults=[triggered_fault()]))
    s = hf.Settled(run, {"lock:belief"}, hf.Confirmation(2, 3), shrunk, "1 faults [...]")
    found = {
        "run": 4,
        "seed": 5,
        "words": "1 of 1 belief overlaps beyond a lease's nature",
        "choice": {"fault": "pause-client", "moment": "on-acquire", "magnitude": "1.5x"},
    }
    w = hf.write_finding(tmp_path, found, s, test_file)
    assert w.reproducer == tmp_path / "test_reproduce_x.py" and w.reproducer.exists()
    assert w.entry == tmp_path / hf.ENTRY_FILE and w.confirmed == "confirmed 2 of 3"
    record = json.loads((tmp_path / hf.FINDING_JSON).read_text())
    assert record["confirmed"]["hits"] == 2 and record["kinds"] == ["lock:belief"]
    assert record["reproducer"] == str(w.reproducer)
    entry = w.entry.read_text()
    compile(entry, str(w.entry), "exec")  # the file as written is Python
    assert "confirmed 2 of 3" in entry and "'seed':" not in w.entry_text


# ---- the hunt's verdict and its JUnit case ------------------------------------------------------
def result(found=None, valids=(True,), folder=Path("/tmp/h")):
    return SimpleNamespace(
        found=found,
        valids=list(valids),
        runs=len(valids),
        wall_s=61.0,
        covered=3,
        pairs=20,
        folder=folder,
        coverage_line=lambda: f"no violation in {len(valids)} runs, 3 of 20 pairs covered",
    )


@pytest.mark.parametrize(
    ("found", "valids", "verdict", "status"),
    [
        (None, (True, "unknown"), True, "passed"),
        (None, ("unknown", "unknown"), "unknown", "error"),
        (None, (), "unknown", "error"),
        ({"run": 1, "words": "w", "folder": "/f"}, (True, False), False, "failed"),
    ],
)
def test_the_hunt_is_one_case_with_its_coverage_as_properties(found, valids, verdict, status):
    r = result(found, valids)
    assert hf.hunt_verdict(r) == verdict
    props = hf.hunt_properties(r, "guided", 3, 300.0)
    case = hf.hunt_case(r, "kazoo on zookeeper", props)
    assert case.status == status and case.name == "hunt"
    assert case.properties["pairs_covered"] == "3" and case.properties["pairs_on_menu"] == "20"
    assert case.properties["coverage"] == r.coverage_line()


def test_the_junit_xml_holds_the_hunt_case_and_its_properties(tmp_path):
    r = result({"run": 2, "words": "invalid: liveness", "folder": "/f"}, (True, True, False))
    case = hf.hunt_case(r, "kazoo on zookeeper", hf.hunt_properties(r, "random", 1, 60.0))
    out = tmp_path / "h.xml"
    write_junit(out, [case], "zkjepsen hunt")
    root = ET.parse(out).getroot()
    (tc,) = root.iter("testcase")
    assert tc.get("name") == "hunt" and tc.find("failure") is not None
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["strategy"] == "random" and props["runs"] == "3"
    assert "run 2: invalid: liveness" in tc.find("failure").get("message")


def test_the_shrink_keeps_only_what_the_workloads_checkers_report():
    known = {"lock:belief", "liveness:stuck"}
    target = {"liveness:stuck", "recovery:could-not-boot"}
    assert hf.shrinkable(target, known) == ({"liveness:stuck"}, "")
    keep, why = hf.shrinkable({"recovery:could-not-boot"}, known)
    assert keep == set() and "not shrunk: recovery:could-not-boot" in why


def test_a_finding_the_shrink_refuses_is_written_unshrunk(monkeypatch, tmp_path):
    from zkjepsen.errors import BadInput

    def refuse(*args, **kwargs):
        raise BadInput("--kind x: not a violation")

    monkeypatch.setattr(hf, "shrink", refuse)
    run = SimpleNamespace(spec=spec_from_json({"recipe": "kazoo"}))
    res, why = hf._shrunk(run, {"lock:belief"}, tmp_path, 60.0, 1, None, lambda line: None)
    assert res is None and why == "not shrunk: --kind x: not a violation"
