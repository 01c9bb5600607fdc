"""The power figures wherever a verdict is shown: the summary line, the matrix cells, the
timeline and the pytest plugin's failure message (pure logic, hand-made histories)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from landed import observation

from zkjepsen.cli.matrix import cell_summary, markdown_table
from zkjepsen.cli.pytest_plugin import RunOutcome, ZkJepsenFailure
from zkjepsen.report.summary import power_line, summarise
from zkjepsen.report.timeline import render_timeline
from zkjepsen.run.analysis import check_history
from zkjepsen.run.spec import TestSpec

S = 1_000_000_000
LINE = "0 split holders in 1 landed client-pause: per-pause split rate ≤ 95.0 % (95 %)"


def records(pause_s: float, split: bool = False, seen: bool = True) -> list[dict]:
    """c1 holds 1-6 s and is paused from 2 s for `pause_s`; c2 holds 7-8 s (or, `split`, from
    4 s while c1 still believes). `seen`: the nemesis saw c1 frozen (it landed)."""
    c2 = 4 if split else 7
    fault = {"fault_id": 1, "targets": ["c1"]}
    end = {**fault, "phase": "end", **(observation("pause-client", ["c1"]) if seen else {})}
    rows = [
        (0.9, 1, "invoke", "acquire", None),
        (1, 1, "ok", "acquire", {"token": 1}),
        (2, "nemesis", "info", "pause-client", {**fault, "phase": "start"}),
        (2 + pause_s, "nemesis", "info", "pause-client", end),
        (c2 - 0.1, 2, "invoke", "acquire", None),
        (c2, 2, "ok", "acquire", {"token": 2}),
        (6, 1, "invoke", "release", None),
        (6.1, 1, "ok", "release", None),
        (8, 2, "invoke", "release", None),
        (8.1, 2, "ok", "release", None),
    ]  # fmt: skip
    out = []
    for i, (t, p, typ, f, v) in sorted(enumerate(rows), key=lambda r: r[1][0]):
        r = {"index": i, "time": int(t * S), "process": p, "type": typ, "f": f, "value": v}
        if p != "nemesis":
            r |= {"client": p, "key": "/l"}
        out.append(r)
    return out


def verdict(recs: list[dict]) -> dict:
    from zkjepsen.history import History, Op

    spec = TestSpec(workload="lock", nemesis=["pause-client"], session_timeout_s=2)
    spec.params = {"writes": 0}
    history = History([Op.from_dict(r) for r in recs])
    return json.loads(json.dumps(check_history(history, spec).to_json()))


def test_the_summary_and_the_verdict_line_carry_the_power():
    results = verdict(records(pause_s=3))
    assert results["valid"] is True and power_line(results) == LINE
    assert summarise(results["power"]) == LINE
    unknown = verdict(records(pause_s=1))
    assert unknown["valid"] == "unknown"
    assert summarise(unknown["power"]).startswith("no fault landed where it could break the lock")
    split = verdict(records(pause_s=3, split=True))
    assert split["valid"] is False and split["power"]["valid"] is True
    assert power_line(split).startswith("1 split holder in 1 landed client-pause")


def test_a_fault_never_seen_at_its_target_is_named_missed_wherever_the_power_is_shown():
    """The same pause without the nemesis's observation (a run stored before observations, or
    a freeze it never saw): not an opportunity, so the run is unknown, and every place that
    shows the power says it missed, and why."""
    results = verdict(records(pause_s=3, seen=False))
    assert results["valid"] == "unknown" and results["power"]["missed"] == 1
    why = "1 pause-client missed: no observation recorded"
    assert why in power_line(results) and why in summarise(results["power"])
    page = render_timeline(records(pause_s=3, seen=False), results, "t")
    assert "(landed)" not in page and why in page


def test_matrix_cells_pool_the_runs_power():
    runs = [
        {"valid": r["valid"], "store": "s", "results": r}
        for r in (verdict(records(3)), verdict(records(3)), verdict(records(1)))
    ]
    cell = cell_summary(runs)
    assert (cell["landed"], cell["landed_violated"], cell["unknown"]) == (2, 0, 1)
    assert cell["power_upper"] == pytest.approx(1 - 0.05**0.5)
    md = markdown_table({"kazoo|pause-client": cell}, ["kazoo"], ["pause-client"], "# m")
    assert "0/2 landed faults violated, rate ≤ 78 %" in md and "pooled over the cell" in md
    old = cell_summary([{"valid": True, "store": "s", "results": {"lock": {"valid": True}}}])
    assert "landed" not in old  # a run stored before power existed says nothing of it


def test_the_timeline_marks_the_fault_that_landed_and_states_the_power():
    recs = records(pause_s=3)
    page = render_timeline(recs, verdict(recs), "t")
    assert "pause-client" in page and "(landed)" in page and 'opacity="0.3"' in page
    assert "landed on client 1 (timeout 2 s)" in page and f"Power: {LINE}" in page
    recs = records(pause_s=1)
    page = render_timeline(recs, verdict(recs), "t")
    assert "(landed)" not in page and "Power: no fault landed" in page


def test_the_plugin_failure_message_carries_the_power(tmp_path):
    def outcome(results):
        spec = SimpleNamespace(test_name="t")
        return RunOutcome(
            SimpleNamespace(valid=results["valid"], results=results, store_dir=tmp_path, spec=spec)
        )

    with pytest.raises(ZkJepsenFailure) as e:
        outcome(verdict(records(pause_s=3, split=True))).assert_valid()
    assert "INVALID" in str(e.value) and "power: 1 split holder in 1 landed" in str(e.value)
    with pytest.raises(ZkJepsenFailure) as e:
        outcome(verdict(records(pause_s=1))).assert_valid()
    assert "UNKNOWN" in str(e.value)
    assert "power: no fault landed where it could break the lock" in str(e.value)
    assert str(e.value).count("no fault landed") == 1
    outcome(verdict(records(pause_s=3))).assert_valid()  # valid: no failure
    assert outcome(verdict(records(pause_s=3))).power_line == LINE
