"""One reader of a run's clients' files while it runs (issue 49): the run's live history.

Counted on the source with `ast`: the tailer of a live file (`Tailer`) is made only by the live
history (history/live.py); a `LiveHistory` is made only by the client pool, once per run (the
runner hands the pool's to the display and the online check, the nemesis reaches it through
the pool); and nothing else names where the clients' files are, but the modules listed below
with why. Each of the six readers this replaced (the display, the online check, a trigger's
watch per arming, the holder tracker, the pool's wait for sessions, the power loss's wait for
an acknowledged write) would fail it."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import zkjepsen

ROOT = Path(zkjepsen.__file__).resolve().parent

# Where the clients' files may be named, and why none of these follows them during a run.
NAMES_CLIENT_FILES = {
    "store/__init__.py": "the run layout: defines where they are",
    "history/jsonl.py": "defines how one live file is read (the tailer, read_records)",
    "history/live.py": "THE reader: follows them during the run",
    "run/accounting.py": "after the teardown, once: the merge into history.jsonl and the seals",
    "run/runner.py": "client 0's file: the runner's own session WRITES it (a Recorder)",
    "nemesis/targets.py": "the ClientFiles protocol (the run layout's shape), no read",
    "nemesis/proxy.py": "the folder of a client: the proxy's own events file beside it",
}
# Who may tail a live file (history/jsonl.py defines the tailer).
MAKES_TAILERS = {
    "history/jsonl.py": "defines it",
    "history/live.py": "one per client file and nemesis.jsonl, per run",
    "nemesis/proxy.py": "the wire proxy's own events (proxy-events.jsonl), not a client's history",
}
MAKES_LIVE_HISTORY = {"client/pool.py"}  # one per pool, and a run has one pool


@cache
def _sources() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p))
        for p in sorted(ROOT.rglob("*.py"))
    }


def _names(tree: ast.AST) -> set[str]:
    """Every name and attribute the module uses (calls, references, imports)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.FunctionDef):
            out.add(node.name)
    return out


def _calls(tree: ast.AST, name: str) -> int:
    """How many calls make `name` (`name(...)` or `name.of_run(...)`)."""
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr == "of_run":
                fn = fn.value
            if (isinstance(fn, ast.Name) and fn.id == name) or (
                isinstance(fn, ast.Attribute) and fn.attr == name
            ):
                n += 1
    return n


def test_only_the_live_history_reads_the_clients_files():
    sources = _sources()
    naming = {
        m
        for m, tree in sources.items()
        if _names(tree) & {"client_history", "client_histories", "read_records", "_read_live"}
    }
    # read_records: the after-run merge's (accounting); nothing during the run
    assert naming <= set(NAMES_CLIENT_FILES), sorted(naming - set(NAMES_CLIENT_FILES))
    tailing = {
        m for m, tree in sources.items() if "Tailer" in _names(tree) or "DirTailer" in _names(tree)
    }
    assert tailing <= set(MAKES_TAILERS), sorted(tailing - set(MAKES_TAILERS))
    assert not any("DirTailer" in _names(tree) for tree in sources.values())  # gone: one follower


def test_a_run_has_one_live_history():
    made = {m: _calls(tree, "LiveHistory") for m, tree in _sources().items()}
    makers = {m: n for m, n in made.items() if n}
    assert makers == {m: 1 for m in MAKES_LIVE_HISTORY}, makers
    pool = ast.parse((ROOT / "client/pool.py").read_text())
    inits = [
        f
        for f in ast.walk(pool)
        if isinstance(f, ast.FunctionDef) and f.name == "__init__" and _calls(f, "LiveHistory")
    ]
    assert len(inits) == 1  # made with the pool, not per call


def test_the_readers_it_replaced_subscribe_to_it():
    """The display, the online check, the triggers, the holder view and the power-loss wait
    each reach the run's live history (and none keeps a tailer of its own: above)."""
    sources = _sources()
    for module in (
        "cli/display.py",
        "run/online.py",
        "nemesis/triggers.py",
        "nemesis/arming.py",
        "nemesis/targets.py",
        "nemesis/disk.py",
    ):
        names = _names(sources[module])
        assert names & {"subscribe", "holding", "cursor", "live", "LiveHistory"}, module
