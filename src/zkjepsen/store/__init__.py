"""The store: `store/<test-name>/<YYYYmmddTHHMMSS>[-n]/` with a `latest` link per test.

Only this package knows the names of a run's files. `RunDir` gives their paths and saves them,
as raw JSON: the store sits below every service and imports none of them; run/stored.py
`StoredRun` is the typed view (spec, schedule, verdict) that `analyze`, `replay` and `shrink`
load.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.store.regular import read_json as read_regular_json
from zkjepsen.store.writable import check_directory

DEFAULT_ROOT = Path(os.environ.get("ZKJEPSEN_STORE", "store"))
REPORTS = ("timeline.html", "latency.png", "rate.png")
# What a run that ran to its end has, in the order it writes them.
FINISHED_FILES = ("test.json", "history.jsonl", "results.json", *REPORTS)


RUN_LOG = "run.log"  # what a bug report should attach


@dataclass(frozen=True)
class RunDir:
    """The paths of one run's folder (it need not exist yet)."""

    path: Path

    test_json = property(lambda self: self.path / "test.json")
    history = property(lambda self: self.path / "history.jsonl")
    schedule = property(lambda self: self.path / "schedule.json")
    results = property(lambda self: self.path / "results.json")
    run_log = property(lambda self: self.path / RUN_LOG)
    nemesis_log = property(lambda self: self.path / "nemesis.jsonl")
    clients = property(lambda self: self.path / "clients")
    nodes = property(lambda self: self.path / "nodes")
    timeline = property(lambda self: self.path / "timeline.html")
    latency_png = property(lambda self: self.path / "latency.png")
    rate_png = property(lambda self: self.path / "rate.png")
    minimal = property(lambda self: self.path / "minimal")
    # a hunt's folder (run/hunt.py): one line per run it chose, its runs' folders beside it
    hunt_log = property(lambda self: self.path / "hunt.jsonl")
    # The clients' control files, one directory per client (`client_control`), mounted
    # read-only into that client's container only: its spec, its start barrier and its
    # libfaketime file (what the runner tells a client; a client must not rewrite its own, and
    # its program must not read another's, or what a fault will do to it: client/seal.py).
    control = property(lambda self: self.clients / "control")

    def client_control(self, client: int) -> Path:
        return self.control / f"c{client}"

    def client_spec(self, client: int) -> Path:
        return self.client_control(client) / f"spec-c{client}.json"

    def start_barrier(self, client: int) -> Path:
        return self.client_control(client) / "start"

    def client_dir(self, client: int) -> Path:
        """Client N's own output directory, mounted read-write into client N only (so no client
        can rewrite another's history). Client 0 is the host: setup and final reads."""
        return self.clients / f"c{client}"

    def client_history(self, client: int) -> Path:
        return self.client_dir(client) / f"client-{client}.jsonl"

    def client_log(self, client: int) -> Path:
        return self.client_dir(client) / f"client-{client}.log"

    def client_histories(self) -> list[Path]:
        """Every client's own history file. Runs stored before per-client directories kept
        them all in `clients/`; they are still read (`analyze` of an old run)."""
        return sorted(
            [*self.clients.glob("c*/client-*.jsonl"), *self.clients.glob("client-*.jsonl")]
        )

    def history_sources(self) -> list[Path]:
        """What `history.jsonl` is merged from."""
        return [*self.client_histories(), self.nemesis_log]

    def inventory(self) -> tuple[list[str], list[str]]:
        """Which of a finished run's files this folder has, and which it lacks (an interrupted
        run: `analyze` writes the missing ones). Each is written whole or not at all."""
        present = [n for n in FINISHED_FILES if (self.path / n).exists()]
        return present, [n for n in FINISHED_FILES if n not in present]

    def save_spec(self, doc: dict[str, Any]) -> None:
        """test.json: the spec as a table (`TestSpec.to_json()`; the store knows no spec)."""
        _write_json(self.test_json, doc)

    def save_results(self, results: dict[str, Any]) -> None:
        _write_json(self.results, results)


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str))
    tmp.replace(path)  # a reader (or a crash) never sees half a file


def read_json(path: Path, what: str) -> Any:
    """A JSON file of a run, read through the one opener (store/regular.py: a regular file,
    bounded in size and nesting)."""

    return read_regular_json(path, what, "give a run directory written by zkjepsen")


def check_root(root: Path | None) -> Path:
    """The store root, usable: an existing directory we can write into, or creatable (tried
    with a probe file, not `os.access`, which says yes to root on /proc: store/writable.py)."""

    root = Path(root or DEFAULT_ROOT)
    check_directory(root, "store path", "give --store a directory you can write to")
    return root


def new_run_dir(test_name: str, root: Path | None = None) -> RunDir:
    """Create a fresh directory for one run and point `<test-name>/latest` at it."""
    base = check_root(root) / test_name
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    n = 1
    while True:  # several runs in one second (several processes, too): each gets its own
        run_dir = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            run_dir.mkdir()
            break
        except FileExistsError:
            n += 1
    latest = base / "latest"
    tmp = base / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(latest)  # atomic: a reader never sees a missing `latest`
    return RunDir(run_dir)


VERDICTS = (True, False, "unknown")


def check_verdicts(results: dict[str, Any], path: Path, where: str = "") -> None:
    """Every `valid` in a stored results table (the run's, and each checker's) is a verdict:
    a hand-edited or foreign file must not be read as some verdict it never stated."""
    field = f"{where}valid"
    if "valid" not in results and not where:
        raise BadInput(f"{path} has no field 'valid'; it was not written by zkjepsen")
    v = results.get("valid")
    if "valid" in results and (v.__class__ not in (bool, str) or v not in VERDICTS):
        raise BadInput(
            f'{path}: field {field!r} is {json.dumps(v)}, not true, false or "unknown"; '
            "remove the file to have `zkjepsen analyze` check the history again"
        )
    for name, part in results.items():
        if isinstance(part, dict) and "valid" in part:
            check_verdicts(part, path, f"{where}{name}.")
