"""`zkjepsen check` stays light: a corpus of small files is checked one process each, so what
the command imports before it has read a line is most of its cost (benchmarks/startup.py
times it). This keeps the import graph, not a time: the modules below are never loaded on
the way to a verdict on a two-line history."""

from __future__ import annotations

import json
import subprocess
import sys

# What `check` has no use for: the other commands' libraries, the runner's rooms, and the
# standard modules that cost the most to import (orjson loads dataclasses, datetime and uuid).
# (zkjepsen.store is loaded, and with it dataclasses and pathlib: the history's path is opened
# through store/regular.py, regular files only, and importing it runs the store package's
# __init__ with its RunDir dataclass. Moving regular.py out of the package would take them off.)
NOT_FOR_CHECK = [
    "click",
    "rich",
    "docker",
    "kazoo",
    "orjson",
    "matplotlib",
    "subprocess",
    "asyncio",
    "datetime",
    "uuid",
    "zkjepsen.run",
    "zkjepsen.docker",
    "zkjepsen.backends",
    "zkjepsen.nemesis",
    "zkjepsen.report",
    "zkjepsen.cli.app",
]

PROBE = """
import json, sys
from zkjepsen.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded(argv: list[str]) -> tuple[int, set[str], str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True)
    *_, last = out.stderr.strip().splitlines()
    got = json.loads(last)
    return got["code"], set(got["modules"]), out.stdout


def test_check_on_a_two_line_history_loads_none_of_the_heavy_modules(tmp_path):
    h = tmp_path / "h2.jsonl"
    h.write_text(
        '{"index":0,"time":0,"process":0,"type":"invoke","f":"write","value":1}\n'
        '{"index":1,"time":5,"process":0,"type":"ok","f":"write","value":1}\n'
    )
    code, modules, said = loaded(["check", str(h), "--model", "register"])
    assert code == 0 and "valid" in said, said  # the check really ran to its verdict
    assert "zkjepsen.checker.linear.engine" in modules
    # Whatever this Python's own start-up loads (site hooks) is not check's doing.
    bare = json.loads(
        subprocess.run(
            [sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
            capture_output=True,
            text=True,
        ).stdout
    )
    heavy = [
        m
        for m in sorted(modules - set(bare))
        if any(m == n or m.startswith(n + ".") for n in NOT_FOR_CHECK)
    ]
    assert heavy == [], f"`zkjepsen check` imports {heavy}"


def test_the_probe_sees_what_another_command_loads():
    """The same probe on `zkjepsen list` (click, rich...): it would see a heavy import."""
    code, modules, _ = loaded(["list", "models"])
    assert code == 0
    assert "click" in modules
