"""A run read back from the store, typed: its `TestSpec`, its fault schedule and its verdict.
(The store itself, below every service, knows file names and raw JSON only: this view of a
run needs the spec and the fault registry, which sit above it.)"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.history import History
from zkjepsen.history.jsonl import checked_history
from zkjepsen.history.stream import read_jsonl_all
from zkjepsen.nemesis.executed import FaultOp, read_faults
from zkjepsen.run.accounting import merged
from zkjepsen.run.resolve import spec_from_json
from zkjepsen.run.stored_checks import check_history_records, check_run_folder, check_stored_spec
from zkjepsen.run.stored_files import check_nemesis_records, check_results, check_schedule
from zkjepsen.spec import TestSpec
from zkjepsen.store import RunDir, read_json
from zkjepsen.store.regular import check_path


@dataclass
class StoredRun:
    """A run read back from the store. `history()` merges the clients' own files when the run
    was interrupted before its merged history was written."""

    dir: RunDir
    spec: TestSpec
    schedule: dict[str, Any]
    results: dict[str, Any] | None

    @property
    def store_dir(self) -> Path:
        return self.dir.path

    @property
    def faults(self) -> list[FaultOp]:
        """The executed faults of its schedule.json, typed (checked when it was loaded)."""
        return read_faults(self.schedule)

    @classmethod
    def load(
        cls, store_dir: Path, need_results: bool = False, need_schedule: bool = False
    ) -> StoredRun:
        """The run in `store_dir`, every file checked (run/stored_checks.py). `need_schedule`:
        replay and shrink act on the schedule, so a missing one is refused, not read as no
        faults."""
        check_run_folder(Path(store_dir))
        d = RunDir(Path(store_dir))
        if not os.path.lexists(d.test_json):
            raise BadInput(
                f"{store_dir} has no {d.test_json.name}; give a run directory from the store "
                "(e.g. store/<test>/latest)"
            )
        if need_results and not os.path.lexists(d.results):
            raise BadInput(
                f"{store_dir} has no {d.results.name} (the run did not finish); run "
                f"`zkjepsen analyze {store_dir}` first"
            )
        if need_schedule and not os.path.lexists(d.schedule):
            raise BadInput(
                f"{store_dir} has no {d.schedule.name}, so there is no fault schedule to replay "
                "(it is not read as no faults); give a run directory written by zkjepsen"
            )
        raw = read_json(d.test_json, d.test_json.name)
        check_stored_spec(raw, d.test_json)
        try:
            spec = spec_from_json(raw)
        except BadInput as e:
            raise BadInput(f"{d.test_json}: {e}") from None
        # Each file through its one schema (run/stored_files.py) before anything acts on it.
        has = os.path.lexists(d.schedule)  # none: no faults ran (`null` is no schedule)
        schedule = read_json(d.schedule, d.schedule.name) if has else {"faults": []}
        check_schedule(schedule, d.schedule, spec)
        results = read_json(d.results, d.results.name) if os.path.lexists(d.results) else None
        if results is not None:
            check_results(results, d.results)
        return cls(d, spec, schedule, results)

    def history(self) -> History:
        """The run's history: the merged file (read by the block-decoding stream reader), or
        merged from the clients' files as the runner merges them (run/accounting.py: each
        read inside the run's folder, up to where its records stop making sense)."""

        if os.path.lexists(self.dir.history):
            check_path(self.dir.history, "history")  # a pipe or a device is refused, not read
            try:
                h = read_jsonl_all(self.dir.history)
            except BadInput as e:  # "history line 4: ...": which history, too
                text = str(e)
                raise BadInput(
                    text if str(self.dir.history) in text else f"{self.dir.history}: {text}"
                ) from None
            check_history_records(h, self.dir.history)
            check_nemesis_records(h, self.dir.history, self.spec)
            return h
        sources = [p for p in self.dir.history_sources() if os.path.lexists(p)]
        if not sources:
            raise BadInput(
                f"{self.store_dir} has neither {self.dir.history.name} nor client histories; "
                "the run stopped before any client started"
            )
        if os.path.lexists(self.dir.nemesis_log):  # a pipe or a device is refused, not read
            check_path(self.dir.nemesis_log, "nemesis log", within=self.store_dir)
        h = checked_history(merged(self.dir, self.spec.clients or 0))
        check_history_records(h, self.dir.clients)
        check_nemesis_records(h, self.dir.clients, self.spec)
        return h
