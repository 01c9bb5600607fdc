"""README.md's example outputs are what the console prints today: each fenced block after an
`<!-- example: NAME -->` marker is drawn again by the console's verdict printer from the run it
shows (tests/unit/readme_runs/NAME/: its test.json and results.json) and must be the same, so a
change of the console's format fails here until benchmarks/readme_examples.py is re-run."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import readme_examples  # noqa: E402 - benchmarks/readme_examples.py: what writes the blocks


def test_readme_examples_are_what_the_console_prints():
    text = (REPO / "README.md").read_text()
    assert readme_examples.rewritten(text) == text, (
        "README.md's example outputs are not what the console prints: "
        ".venv/bin/python benchmarks/readme_examples.py"
    )


def test_every_example_has_its_run_and_every_run_its_example():
    named = readme_examples.MARKER.findall((REPO / "README.md").read_text())
    kept = sorted(p.name for p in readme_examples.RUNS.iterdir() if p.is_dir())
    assert len(named) >= 2
    assert sorted(name for name, _ in named) == kept


def test_a_changed_format_is_caught():
    """The check compares the block with the printer's output: a block edited by hand differs."""
    text = (REPO / "README.md").read_text()
    name, block = readme_examples.MARKER.findall(text)[0]
    edited = text.replace(block, block.replace("  lock: ", "  lock:  ", 1), 1)
    assert edited != text and readme_examples.rewritten(edited) == text
