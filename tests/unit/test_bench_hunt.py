"""benchmarks/hunt.py takes a recipe as a NAME (`recipe:kazoo@kill-leader`): the same base spec
and menu as `zkjepsen hunt --recipe kazoo --faults kill-leader`. No Docker."""

from __future__ import annotations

import sys
from pathlib import Path

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
