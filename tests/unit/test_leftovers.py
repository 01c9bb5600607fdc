"""What `./run test` removes when the suite ends (tests/leftovers.py): only the runs of the
suite's own processes, never one another process owns, even in part."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zkjepsen.docker.resources import RunResources

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from leftovers import let_children_tear_down, suite_runs  # noqa: E402 - tests/leftovers.py


def _run(run_id: str, *owners: str) -> RunResources:
    return RunResources(run_id, owners=set(owners))


def test_only_runs_owned_by_the_suite_alone_are_its_own():
    suite = {"101:5", "102:6"}
    runs = {
        r.run_id: r
        for r in (
            _run("zkj-a", "101:5"),  # a worker's ensemble
            _run("zkj-b", "101:5", "102:6"),  # two of the suite's processes
            _run("zkj-c", "201:9"),  # another helper's run
            _run("zkj-d", "101:5", "201:9"),  # shared with another process: not ours alone
            _run("zkj-e", ""),  # no owner named: unknown, kept
            _run("zkj-f", "101:7"),  # the same pid, another process (recycled pid)
        )
    }
    assert suite_runs(runs, suite) == ["zkj-a", "zkj-b"]
    assert suite_runs(runs, set()) == []


# A child that, like `zkjepsen test`, tears down on SIGTERM (here: writes a file, after a while).
_TEARS_DOWN = """
import signal, sys, time
def down(*_):
    time.sleep(0.5)
    open(sys.argv[1], "w").write("torn down")
    sys.exit(0)
signal.signal(signal.SIGTERM, down)
print("ready", flush=True)
time.sleep(60)
"""


def test_an_interrupted_suite_waits_for_its_zkjepsen_children_and_no_other(tmp_path):
    """The signal handler's wait (conftest.py): a child running zkjepsen is asked to end and
    finishes its teardown before the test is unwound; any other child is left alone."""
    marker = tmp_path / "zkjepsen-done"
    ours = subprocess.Popen(
        [sys.executable, "-c", _TEARS_DOWN, str(marker)], stdout=subprocess.PIPE
    )
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert ours.stdout is not None and ours.stdout.readline() == b"ready\n"  # handler set
        assert let_children_tear_down(bound_s=30) == []
        assert marker.read_text() == "torn down"  # its teardown ran to its end
        assert ours.wait(timeout=5) == 0  # not reaped by the wait: its Popen still has it
        assert other.poll() is None  # not a zkjepsen: untouched
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
        if ours.stdout:
            ours.stdout.close()
