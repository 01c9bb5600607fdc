"""What `./run test` removes when the suite ends (tests/leftovers.py): only the runs of the
suite's own processes, never one another process owns, even in part."""

from __future__ import annotations

import sys
from pathlib import Path

from zkjepsen.docker.resources import RunResources

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from leftovers import suite_runs  # noqa: E402 - tests/leftovers.py, a script beside conftest


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
