"""The client wire protocol against real ZooKeeper: the conformance check passes the Python
driver and the Python template and names what a fake program gets wrong; a whole run through a
user's program (--client-cmd, files mounted read-only) is judged like any other; a program that
crashes mid-run gives client-errors and the run still ends and tears down."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from zkjepsen.client.conformance import Conformance
from zkjepsen.client.serverview import ZooKeeperView

REPO = Path(__file__).resolve().parents[2]
SUBJECTS = REPO / "tests" / "subjects"
TEMPLATES = REPO / "docs" / "templates"


def test_conformance_passes_the_python_driver_and_the_template(ensemble3) -> None:
    for argv in (
        [sys.executable, "-m", "zkjepsen.workloads.driver", "kazoo"],
        [sys.executable, str(TEMPLATES / "python_driver.py")],
    ):
        hosts = ensemble3.connect_string()
        report = Conformance(argv, hosts, view=ZooKeeperView(hosts)).run()
        assert report.ok, (argv, report.problems)
        assert not report.notes


def test_conformance_names_what_a_fake_lock_gets_wrong(ensemble3) -> None:
    """The fake program answers well-formed lies: its node is not in ZooKeeper, its writes never
    land, and a second instance 'acquires' the held lock."""
    report = Conformance(
        [sys.executable, str(SUBJECTS / "fake_program.py"), "good"],
        ensemble3.connect_string(),
        view=ZooKeeperView(ensemble3.connect_string()),
    ).run()
    assert not report.ok
    text = "\n".join(report.problems)
    assert "which is not under the lock path" in text
    assert "which does not exist" in text
    assert "the write was answered ok but the resource holds b'{}', not b'A1'" in text
    assert report.problems[-1] == "acquire succeeded while another instance held the lock"


def _client_records(run_dir: Path) -> list[dict]:
    out = []
    from zkjepsen.store import RunDir

    for f in RunDir(run_dir).client_histories():
        if f.name == "client-0.jsonl":
            continue
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def test_a_users_program_through_client_cmd(zk_image, store_root) -> None:
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    spec = TestSpec(
        client_cmd="python3 python_driver.py",
        client_dir=str(TEMPLATES),
        workload="counter",
        nodes=3,
        clients=3,
        time_limit_s=8,
        recovery_s=2,
        session_timeout_s=3.0,
        image=zk_image,
        params={"resource": "fenced"},
    )
    run = run_test(spec, store_root)
    assert run.valid is True, run.results
    assert run.results["counter"]["acknowledged"] > 5
    recs = _client_records(run.store_dir)
    assert not [r for r in recs if r["f"] == "client-error"]
    assert sum(r["f"] == "session" for r in recs) == 3


def test_a_crashing_program_gives_client_errors_and_the_run_ends(
    zk_image, store_root, docker_client
) -> None:
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    spec = TestSpec(
        client_cmd="python3 fake_program.py crash-write:3",
        client_dir=str(SUBJECTS),
        workload="lock",
        nodes=1,
        clients=2,
        time_limit_s=6,
        recovery_s=1,
        session_timeout_s=3.0,
        image=zk_image,
        params={"hold_s": 0.05},
    )
    run = run_test(spec, store_root)
    assert run.valid in (True, False, "unknown")  # judged, whatever the verdict
    recs = _client_records(run.store_dir)
    errors = [r for r in recs if r["f"] == "client-error"]
    assert errors and all(e["value"].startswith("the program died with write") for e in errors)
    infos = [r for r in recs if r["type"] == "info"]
    assert infos and all(r["error"] == "client-error" for r in infos)
    from zkjepsen.docker import resources

    run_id = re.search(r"zkj-\d+-\w+", (run.store_dir / "run.log").read_text()).group(0)
    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    assert not docker_client.containers.list(all=True, filters=flt, ignore_removed=True)


def test_client_check_cli_in_the_client_image(ensemble3, zk_image) -> None:
    """`zkjepsen client check` runs the program as a run would (client image, read-only
    mounts): a registered recipe conforms (exit 0); a program that prints junk gets the sentence
    and exit 1; no container is left behind."""
    import subprocess

    base = [
        sys.executable,
        "-m",
        "zkjepsen.cli",
        "client",
        "check",
        "--hosts",
        ensemble3.connect_string(),
        "--image",
        zk_image,
    ]
    ok = subprocess.run([*base, "--recipe", "kazoo"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "conforms" in ok.stderr
    bad = subprocess.run(
        [*base, "--in-image", "--client-dir", str(SUBJECTS), "python3 fake_program.py junk"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert (
        "- malformed message from the program: 'hello, I am starting up' is not JSON" in bad.stdout
    )
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=zkjepsen.role=client-check"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert not left


def test_a_client_whose_child_escaped_before_init_makes_the_run_unknown(zk_image, store_root):
    """Client 2's program forks a child that escapes into a session of its own with the pipe,
    and exits without answering init (tests/subjects/escaped_child.py); client 1 serves kazoo's
    lock. Client 2 never initializes: the run is UNKNOWN naming it, not VALID on client 1's
    records alone (it once started "without them"). The main phase starts once client 2's init
    has timed out (20 s); a few seconds of it are client 1's acquires."""
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    spec = TestSpec(
        client_cmd="python3 escaped_child.py 2",
        client_dir=str(SUBJECTS),
        workload="lock",
        nodes=1,
        clients=2,
        time_limit_s=6,
        recovery_s=2,
        session_timeout_s=3.0,
        image=zk_image,
        params={"hold_s": 0.05},
    )
    run = run_test(spec, store_root)
    assert run.valid == "unknown", run.results
    unaccounted = run.results["clients"]["unaccounted"]
    assert list(unaccounted) == ["2"] and "never initialized" in unaccounted["2"], unaccounted
    recs = _client_records(run.store_dir)
    assert any(r["client"] == 1 and r["f"] == "acquire" and r["type"] == "ok" for r in recs)
    errors = [r["value"] for r in recs if r["client"] == 2 and r["f"] == "client-error"]
    assert errors and "init was never answered" in errors[0], errors
    history = [json.loads(x) for x in (run.store_dir / "history.jsonl").read_text().splitlines()]
    said = [(r["client"], r["value"]) for r in history if r["f"] == "unaccounted"]
    assert said == [(2, unaccounted["2"])], said  # the history says so: analyze says it again


def test_a_program_that_closes_its_stdout_under_a_shell_is_seen_at_once(zk_image, store_root):
    """Every client's program answers init, then closes its stdout and runs on
    (tests/subjects/closes_stdout.py), under the `/bin/sh -c` a --client-cmd with shell syntax
    runs in, which keeps the pipe open: each request is a protocol fault of its own (the
    recorder reads who holds the pipe, as the program's uid), not a hang, and liveness does not
    call a lock stuck that was never asked (it was judged stuck: a false INVALID)."""
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    spec = TestSpec(
        client_cmd="python3 closes_stdout.py; true",
        client_dir=str(SUBJECTS),
        workload="lock",
        nodes=1,
        clients=2,
        time_limit_s=15,
        recovery_s=2,
        session_timeout_s=3.0,
        image=zk_image,
        params={"hold_s": 0.05},
    )
    run = run_test(spec, store_root)
    assert run.valid == "unknown", run.results
    assert run.results["liveness"]["valid"] is not False, run.results["liveness"]
    assert "clients" not in run.results  # both initialized and ended: accounted for
    recs = _client_records(run.store_dir)
    errors = [r["value"] for r in recs if r["f"] == "client-error"]
    closed = [e for e in errors if e.startswith("the program closed its stdout with acquire")]
    assert closed and all(e in closed or e.startswith("giving up") for e in errors), errors
