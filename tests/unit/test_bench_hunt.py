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


def test_a_notes_block_of_hunted_cells_is_drawn_as_findings_mds_table():
    import findings_current as fc

    rows = [json.loads(x) for x in ROWS.splitlines()]
    (row,) = json.loads(bench.block([_written(rows)]))
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


def _written(rows: list[dict]) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
