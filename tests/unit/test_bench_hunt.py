"""benchmarks/hunt.py takes a recipe as a NAME (`recipe:kazoo@kill-leader`): the same base spec
and menu as `zkjepsen hunt --recipe kazoo --faults kill-leader`; its rows as a dated note's
block, and docs/findings.md's table of hunted cells drawn from such blocks
(benchmarks/findings_current.py). No Docker."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from zkjepsen.cli.hunt import hunt_base
from zkjepsen.run.hunt import menu

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import hunt as bench  # noqa: E402


def test_a_cell_names_its_recipe_and_pins_its_faults():
    assert bench.cell_of("recipe:kazoo@kill-leader") == ("kazoo", ["kill-leader"])
    assert bench.cell_of("recipe:kazoo@kill-leader, pause-client") == (
        "kazoo",
        ["kill-leader", "pause-client"],
    )
    assert bench.cell_of("recipe:go-zk") == ("go-zk", None)


def test_a_recipe_name_is_the_clis_hunt():
    ours = bench.base_of("recipe:kazoo@kill-leader")
    cli = hunt_base({"recipe": "kazoo"}, 15.0, None, {}, {})
    assert ours == cli
    assert {fault for _, fault in menu(ours, ["kill-leader"]).arms} == {"kill-leader"}


def test_a_pinned_proxy_fault_turns_the_proxy_on():
    assert bench.base_of("recipe:curator-java@proxy-hold-session").proxy is True
    assert not bench.base_of("recipe:curator-java@kill-leader").proxy


def test_a_notes_block_of_hunted_cells_is_drawn_as_findings_mds_table(tmp_path):
    import findings_current as fc

    rows = [json.loads(x) for x in ROWS.splitlines()]
    (row,) = json.loads(bench.block([_written(rows, tmp_path)]))
    assert row["program"] == "`recipe:kazoo@kill-leader`" and row["load"] == "5-8"
    assert row["guided"] == "1 of 1: runs 3; median 3 runs, 80 s"
    assert row["random"] == "0 of 1 (none in 9)"
    with pytest.raises(ValueError, match="lacks budget, date, command, section"):
        fc.hunt_table([("n.md", f"{fc.HUNT_MARK}\n```json\n{json.dumps([row])}\n```\n")])
    row |= {"budget": "4m", "date": "2026-11-29", "command": "X", "section": "A (b)"}
    drawn = fc.hunt_table([("n.md", f"{fc.HUNT_MARK}\n```json\n{json.dumps([row])}\n```\n")])
    assert f"### {fc.HUNT_TITLE}" in drawn
    assert (
        "| `recipe:kazoo@kill-leader` | 1 | 4m | 1 of 1: runs 3; median 3 runs, 80 s "
        "| 0 of 1 (none in 9) | splits beyond a lease's or a fault's nature 1 | 5-8 "
        "| 2026-11-29 · a |" in drawn
    )
    assert "a. [n.md](findings/n.md#a-b): `X`" in drawn
    assert fc.hunt_table([]) == []  # no note with a block: no table


ROWS = """\
{"program": "recipe:kazoo@kill-leader", "strategy": "guided", "seed": 1, "found": true, \
"runs": 3, "wall_s": 80.0, "words": "2 of 3 belief overlaps beyond a lease's or a fault's \
nature", "load": "load 5.2"}
{"program": "recipe:kazoo@kill-leader", "strategy": "random", "seed": 1, "found": false, \
"runs": 9, "wall_s": 250.0, "words": "", "load": "load 7.9"}
"""


def _written(rows: list[dict], folder: Path) -> Path:
    """The rows as `--out` writes them, in the test's own folder (pytest removes it)."""
    path = folder / f"rows-{len(list(folder.glob('rows-*')))}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_gate_only_runs_every_scenario_to_its_end_and_no_hunt(monkeypatch, tmp_path, capsys):
    """`--gate-only`: the gate alone, as `gate --run-all` (each scenario's own verdict); each
    scenario's row says what its lock part saw and what the hunt's rule calls the run."""
    import zkjepsen.run.gate as gate
    import zkjepsen.run.hunt as hunt_mod

    asked = {}
    lock = {"valid": False, "belief_overlap_count": 2, "beyond_lease_count": 0}
    lock |= {"lease_split_count": 2, "effect_overlap_count": 0}

    def fake_run_gate(specs, names, parallel, store_root=None, on_done=None, run_all=False):
        asked["run_all"], asked["names"] = run_all, names
        out = []
        for n in names:
            run = type("R", (), {"results": {"lock": lock} if n == "client-pause" else {}})()
            row = gate.GateRow(n, False if n == "client-pause" else True, "x", None, run)
            on_done(row)
            out.append(row)
        return out

    monkeypatch.setattr(gate, "run_gate", fake_run_gate)
    monkeypatch.setattr(hunt_mod, "hunt", lambda *a, **k: pytest.fail("no hunt with --gate-only"))
    out = tmp_path / "rows.jsonl"
    argv = ["--gate-only", "--image", "x", "--out", str(out), "--store", str(tmp_path)]
    assert bench.main([*argv, "zk_no_relist"]) == 0
    assert asked == {"run_all": True, "names": list(gate.SCENARIOS)}
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]
    pause = row["scenarios"][0]
    assert row["verdict"] == "INVALID" and row["run_all"] is True
    assert (pause["verdict"], pause["reached"], pause["splits"], pause["beyond"]) == (
        "INVALID",
        "close",  # two splits, both a lease's nature: the gate caught it only by a lease
        2,
        0,
    )
    assert [s["verdict"] for s in row["scenarios"][1:]] == ["VALID", "VALID"]
    drawn = bench.gate_table([out])
    assert drawn.splitlines()[0].startswith("| program | client-pause | client-cut | leader-kill")
    assert "| `zk_no_relist` | INVALID, close (2 splits, 0 beyond, 0 effect; invalid: lock" in drawn
    # and plain --gate keeps the gate's own early end (the first invalid scenario ends the rest)
    bench.gate_of("zk_no_relist", 1, tmp_path)
    assert asked["run_all"] is False


def test_an_outsiders_program_is_hunted_from_its_own_folder():
    """A NAME of benchmarks/zoo-outside/ runs with that folder as its client_dir (its base
    module is there), and a NAME of neither zoo is refused by name."""
    given, params = bench.settings_of("zk_persistent_node")
    assert Path(given["client_dir"]).name == "zoo-outside"
    assert (Path(given["client_dir"]) / "zk_base.py").is_file()
    assert given["backend"] == "zookeeper" and params["resource"] == "unguarded"
    assert Path(bench.settings_of("zk_orphan_create")[0]["client_dir"]).name == "zoo"
    with pytest.raises(SystemExit, match="no_such_program"):
        bench.settings_of("no_such_program")


def test_the_table_says_randoms_median_over_guideds_and_what_found_each(tmp_path):
    """The issue's goal is a ratio of medians: the table says it over every hunt (`median_of`:
    random's hunt that found none counts as longer than it ran, so random's median of 2 hunts
    is censored and the ratio a bound), and by which fault kinds the finds came (a pair as
    `a + b`); `-` when a side was not measured."""
    skew = {"fault": "clock-skew-client", "moment": "at-a-time"}
    pair = {"fault": "kill-client", "then": {"fault": "clock-rate-client"}}
    rows = [
        {
            "program": "p",
            "strategy": "guided",
            "seed": 1,
            "found": True,
            "runs": 1,
            "wall_s": 20.0,
            "what": skew,
            "words": "1 of 1 beyond a lease",
            "load": "load 2.0",
            "per_run_s": 20.0,
        },
        {
            "program": "p",
            "strategy": "guided",
            "seed": 2,
            "found": True,
            "runs": 3,
            "wall_s": 60.0,
            "what": pair,
            "words": "invalid: atomicity",
            "load": "load 3.0",
            "per_run_s": 20.0,
        },
        {
            "program": "p",
            "strategy": "random",
            "seed": 1,
            "found": True,
            "runs": 8,
            "wall_s": 160.0,
            "what": skew,
            "words": "1 of 1 beyond a lease",
            "load": "load 2.0",
            "per_run_s": 20.0,
        },
        {
            "program": "p",
            "strategy": "random",
            "seed": 2,
            "found": False,
            "runs": 30,
            "wall_s": 600.0,
            "what": "coverage",
            "words": "",
            "load": "load 2.0",
            "per_run_s": 20.0,
        },
    ]
    (p,) = bench.programs([_written(rows, tmp_path)])
    # (8 + >30) / 2 over median(1, 3); (160 + >600) / 2 over median(20, 60)
    assert p["ratio"] == ">= 9.5x runs, >= 9.5x wall"
    assert p["finds"].endswith("; by clock-skew-client 2, kill-client + clock-rate-client 1")
    assert p["cost"] == "20 s"
    assert bench.programs([_written(rows[:2], tmp_path)])[0]["ratio"] == "-"  # random not measured
    assert "| >= 9.5x runs, >= 9.5x wall |" in bench.table([_written(rows, tmp_path)])


def test_what_guided_learned_is_read_from_each_hunts_own_log(tmp_path):
    """`--learned`: per program, the kinds its guided hunts drew and their mean reward, best
    first, from each hunt's hunt.jsonl; random's hunts are not the guidance's."""
    folder = tmp_path / "h"
    folder.mkdir()
    lines = [
        {"choice": {"fault": "kill-client"}, "reward": 0.25},
        {"choice": {"fault": "clock-skew-client", "then": {"fault": "kill-client"}}, "reward": 0.5},
        {"choice": {"fault": "kill-client"}, "reward": 0.0},
        {"choice": {"fault": "clock-skew-client"}, "reward": 1.0},
    ]
    (folder / "hunt.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = [
        {"program": "p", "strategy": "guided", "folder": str(folder)},
        {"program": "p", "strategy": "random", "folder": str(folder)},
    ]
    drawn = bench.learned([_written(rows, tmp_path)]).splitlines()
    assert drawn[2] == (
        "| `p` | 4 | 3 | clock-skew-client (1, 1.00), clock-skew-client + kill-client (1, 0.50), "
        "kill-client (2, 0.12) |"
    )


def _hunts(*outcomes: tuple[bool, int]) -> list[dict]:
    """Hunts as `--out` rows: (found, runs), each run 20 s."""
    return [
        {"found": f, "runs": n, "wall_s": 20.0 * n, "seed": i} for i, (f, n) in enumerate(outcomes)
    ]


def test_the_median_counts_every_hunt_a_hunt_that_found_none_as_longer():
    """etcd_waiter_lease's random hunts, 2026-11-30: runs 16, 23, 9 to a find, and two that
    found none in 27 and 28. The median of the finds alone is 16; over every hunt it is 23 (a
    hunt that found none took longer than any that did). A strategy that found once in five,
    at run 1, would have had the best median of its finds: 1."""
    random = _hunts((True, 16), (True, 23), (False, 27), (False, 28), (True, 9))
    assert bench.median_of(random, "runs") == (23, False)
    assert bench.median_of(random, "wall_s") == (460.0, False)
    once = _hunts((True, 1), (False, 30), (False, 30), (False, 31), (False, 29))
    assert bench.median_of(once, "runs") == (30, True)  # censored: a lower bound
    assert "median > 30 runs" in bench.cell(once)
    even = _hunts((True, 2), (True, 4), (False, 9), (True, 6))
    assert bench.median_of(even, "runs") == (5, False)  # the two middle ones: 4 and 6
    assert bench.median_of(_hunts((True, 2), (False, 9)), "runs") == (5.5, True)


def test_the_ratio_is_a_bound_where_randoms_median_is_censored():
    guided = _hunts((True, 2), (True, 3), (True, 4))
    assert bench.ratio({"guided": guided, "random": _hunts((True, 6), (True, 9), (True, 12))}) == (
        "3.0x runs, 3.0x wall"
    )
    censored = _hunts((True, 6), (False, 20), (False, 21))
    assert bench.ratio({"guided": guided, "random": censored}) == ">= 6.7x runs, >= 6.7x wall"
    never = _hunts((False, 20), (False, 20), (False, 20))
    assert bench.ratio({"guided": guided, "random": never}) == "-"  # random finds it not at all
    assert bench.ratio({"guided": censored, "random": guided}) == "-"  # guided's censored
