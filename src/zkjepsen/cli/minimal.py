"""The reproducer `zkjepsen shrink` writes: the shrunk run's schedule and spec in `<run>/minimal/`,
and a standalone pytest file that names only the settings that differ from the defaults and
spells the schedule as the generator calls that make it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from zkjepsen.reproduce.replay import violation_kinds
from zkjepsen.run.stored import StoredRun
from zkjepsen.store import RunDir


def write_minimal(store_dir: Path, res, run: StoredRun) -> tuple[RunDir, Path]:
    """The shrunk run in `<run>/minimal/`: its schedule (replayable), its spec, and the
    standalone pytest reproducer; returns the folder's files and the reproducer's path."""
    out = RunDir(store_dir).minimal
    out.mkdir(exist_ok=True)
    files = RunDir(out)
    schedule = {
        "faults": [f.to_json() for f in res.best.faults],
        "source": str(store_dir.resolve()),
        "reproduced": f"{res.hits}/{res.tries}",
        "search": res.log,
    }
    files.schedule.write_text(json.dumps(schedule, indent=1))
    files.test_json.write_text(json.dumps(res.best.spec.to_json(), indent=1))
    name = re.sub(r"[^a-z0-9]+", "_", res.best.spec.test_name.lower()).strip("_")
    test_file = out / f"test_reproduce_{name}.py"
    test_file.write_text(emit_pytest(res, run, name))
    return files, test_file


SCHEDULE_REPLACES = ("fault_target", "fault_trigger", "max_faults")


def spec_changes(spec: dict) -> dict:
    """The settings of a spec's table that differ from `TestSpec()`'s: what a person would
    write (no `image=None`, `pin_clients=False`, ...)."""
    from zkjepsen.spec import TestSpec

    defaults = TestSpec().to_json()
    return {k: v for k, v in spec.items() if k not in defaults or v != defaults[k]}


def emit_pytest(res, run: StoredRun, name: str) -> str:
    """A standalone pytest file (needs only zkjepsen installed) that fails while the bug exists.
    The schedule is written as the generator calls that make it (`steps(sleep(4),
    on(on_acquire(delay_s=0.1), fault("pause-client", ...)))`), not as data."""
    from zkjepsen.nemesis.generator import TARGET_DETAIL, Fault, executed_items, items_text
    from zkjepsen.nemesis.triggers import Trigger

    spec = {**res.best.spec.to_json(), "name": f"reproduce-{name}"}
    # The SCHEDULE replaces the standard one these steer (each of its faults names its own
    # target and trigger): a spec giving them with gen= is refused as read by nothing.
    for key in SCHEDULE_REPLACES:
        spec.pop(key, None)
    kinds = ", ".join(sorted(res.kinds or violation_kinds(run.results)))
    items = executed_items(res.best.faults, int(run.schedule.get("origin_ns") or 0))
    triggers = sorted(
        {
            Trigger.from_json(dict(i.trigger)).describe().split("(")[0]
            for i in items
            if isinstance(i, Fault) and i.trigger is not None
        }
    )
    redrawn = sorted({f.f for f in res.best.faults if set(f.detail or {}) - TARGET_DETAIL})
    note = (
        f"\nThe details of {', '.join(redrawn)} (sides, offsets) are drawn again from the "
        "seed, not copied."
        if redrawn
        else ""
    )
    schedule = items_text(items)  # a `steps` per lane when the faults ran in lanes
    spec_args = "".join(f"    {k}={v!r},\n" for k, v in spec_changes(spec).items())
    used = [
        "fault",
        *(["lanes"] if schedule.startswith("lanes(") else []),
        *(["on"] if triggers else []),
        *(["sleep"] if "sleep(" in schedule else []),
        "steps",
    ]
    imports = f"from zkjepsen.nemesis.generator import {', '.join(used)}\n"
    if triggers:
        imports += f"from zkjepsen.nemesis.triggers import {', '.join(triggers)}\n"
    return f'''"""Reproduces {kinds} of recipe {spec["recipe"]!r} ({spec["workload"]} workload):
{res.best.summary()}.

Shrunk by `zkjepsen shrink` on {time.strftime("%Y-%m-%d")} from {run.store_dir}; the violation
recurred in {res.hits} of {res.tries} replays. This test FAILS while the bug exists (replays are
not deterministic, so it may occasionally pass; triggered faults repeat best). Times are seconds
after the clients start.{note} Run: pytest test_reproduce_{name}.py
"""

{imports}from zkjepsen.run.spec import read_spec

SPEC = read_spec(dict(
{spec_args}))

SCHEDULE = {schedule}


def test_reproduce_{name}(zkjepsen_run):
    result = zkjepsen_run(SPEC, gen=SCHEDULE)
    result.assert_valid()
'''
