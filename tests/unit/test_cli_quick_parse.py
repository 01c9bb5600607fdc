"""`zkjepsen check` parses its usual command lines without argparse: the same values as
argparse, and anything unusual left to argparse."""

from __future__ import annotations

import pytest

from zkjepsen.cli.check import parser, quick_parse


@pytest.mark.parametrize(
    "argv",
    [
        ["h.jsonl", "--model", "lock"],
        ["--model=register", "h.jsonl"],
        ["h.jsonl", "--model", "cas-register", "--format", "edn", "--initial", "0"],
        ["h", "--model", "kv", "--time-limit", "2.5", "--json", "--memory-limit", "100"],
        ["h", "--model", "kv", "--html", "out.html", "--time-limit=1e3"],
    ],
)
def test_same_values_as_argparse(argv):
    assert quick_parse(argv) == vars(parser().parse_args(argv))


@pytest.mark.parametrize(
    "argv",
    [
        ["h.jsonl"],  # no model
        ["h.jsonl", "--model"],
        ["h.jsonl", "--mod", "lock"],  # an abbreviation: argparse's call
        ["h.jsonl", "--model", "lock", "--format", "xml"],
        ["h.jsonl", "--model", "lock", "--time-limit", "-1"],
        ["h.jsonl", "--model", "lock", "--memory-limit", "x"],
        ["h.jsonl", "--model", "lock", "--json=yes"],
        ["a", "b", "--model", "lock"],
        ["--help"],
        ["h.jsonl", "--model", "lock", "--", "x"],
    ],
)
def test_unusual_lines_go_to_argparse(argv):
    assert quick_parse(argv) is None
