"""A stored run is evidence handed back to the tool: it is checked as hard as a command line.

`analyze`, `replay` and `shrink` act on a run folder that may have been copied, hand-edited or
made up. What they read is checked here, field by field, before they act:

- `test.json` must carry every field that changes what would run (`STORED_SPEC_FIELDS`): a
  missing one is refused with one sentence naming the file and the field, never filled in with
  the default of today's `TestSpec` (a 3-server run replayed on 5 servers reproduces nothing).
  This works on the raw table, before `read_spec`, so it stays a list of names.
- the history's records: indexes non-negative and strictly increasing (so unique), and the
  values each op allows (`VALUE_SHAPES`): an `ok` acquire that grants the string "tok" is not a
  grant any checker can reason about.
- the folder itself: a directory (not a file, not a symlink loop).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from zkjepsen.backends.registry import service_of, settings_from_table
from zkjepsen.client.protocol import session_problem
from zkjepsen.errors import BadInput

# Every field of a stored spec that changes what a replay would run. A stored test.json written
# by zkjepsen has them all (TestSpec.to_json writes every field, null included); `name` and
# `engine` are records, not settings of the run, and may be absent. So may `generator` (a
# schedule given as Python, unrolled): a replay runs schedule.json's executed faults, and a
# run stored before the field existed recorded such a schedule nowhere else.
STORED_SPEC_FIELDS = (
    "recipe",
    "workload",
    "backend",
    "nemesis",
    "nodes",
    "clients",
    "time_limit_s",
    "recovery_s",
    "session_timeout_s",
    "seed",
    "image",
    "pin_clients",
    "interval_s",
    "fault_duration_s",
    "params",
    "max_faults",
    "fault_target",
    "client_cmd",
    "client_dir",
    "client_mode",
    "proxy",
    "stop_on_violation",
    "until_power",
    "fault_trigger",
)
# Of those, the ones a run records as settled values: null would mean "the default", which is
# today's default, not necessarily the run's.
STORED_NOT_NULL = ("recipe", "clients", "backend")
# The service's own settings (versions, tick, the clients' suite) are checked by
# `check_stored_service`: from the fields its settings type declares, not from a list here.


def check_stored_spec(raw: Any, path: Path) -> None:
    """A stored test.json's table carries every field that changes what would run."""
    if not isinstance(raw, dict):
        raise BadInput(
            f"{path} is not a test spec (a table of settings, not {type(raw).__name__}); "
            "give a run directory written by zkjepsen"
        )
    for name in STORED_SPEC_FIELDS:
        if name not in raw:
            raise _missing(path, name)
    for name in STORED_NOT_NULL:
        if raw[name] is None:
            raise _null(path, name)
    check_stored_service(raw, path)


def _null(path: Path, name: str) -> BadInput:
    return BadInput(
        f"{path}: field {name!r} is null, but a run records the value it ran with; "
        f"give a {path.name} written by zkjepsen"
    )


def _missing(path: Path, name: str) -> BadInput:
    return BadInput(
        f"{path} has no field {name!r}, which changes what would run; a reproduction uses "
        f"exactly the recorded spec, so give a {path.name} written by zkjepsen"
    )


def check_stored_service(raw: dict[str, Any], path: Path) -> None:
    """The run's service settings, recorded whole: test.json's `service` table has every field
    its settings type declares, none left null for a default to fill in; a run stored before
    each service owned its settings has a flat key (`Service.legacy`) for each setting a
    default would otherwise fill in."""

    try:
        svc = service_of(raw["backend"])
    except BadInput as e:
        raise BadInput(f"{path}: {e}") from None
    except (TypeError, AttributeError):  # not a name: TestSpec says so in its own words
        return
    if "service" not in raw:  # stored flat: each setting a default would fill is there
        for name, value in svc.settings().settled().to_json().items():
            keys = [k for k, f in svc.legacy.items() if f == name]
            if value is not None and keys and not any(k in raw for k in keys):
                raise _missing(path, keys[0])
        return
    table = raw["service"]
    if table is None:
        raise _null(path, "service")
    if not isinstance(table, dict):
        return  # TestSpec refuses it in its own words
    names: list[str] = [f.name for f in fields(svc.settings)] if is_dataclass(svc.settings) else []
    later = getattr(svc.settings, "absent_means_default", ())
    for name in names:
        if name not in table and name not in later:
            raise _missing(path, f"service.{name}")
    try:
        settled = settings_from_table(table, f"{path}: service").settled().to_json()
    except BadInput as e:
        raise BadInput(f"{path}: {e}") from None
    for name, value in settled.items():
        if name in later and name not in table:
            continue  # stored before the field existed: it ran with the default settled() fills
        if table.get(name) is None and value is not None:
            raise _null(path, f"service.{name}")


def check_run_folder(path: Path) -> None:
    """A run folder: an existing directory (a symlink loop or a file is one sentence)."""
    try:
        st = os.stat(path)
    except OSError as e:
        why = "a symbolic link loop" if e.errno == errno.ELOOP else e.strerror
        raise BadInput(
            f"{path} is not a run directory ({why}); give a run directory from the store "
            "(e.g. store/<test>/latest)"
        ) from None
    except ValueError as e:
        raise BadInput(f"{path} is not a run directory ({e})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise BadInput(
            f"{path} is not a run directory (not a directory); give a run directory from the "
            "store (e.g. store/<test>/latest)"
        )


def _opt(v: Any, kind: type) -> bool:
    return v is None or (type(v) is kind)


def _grant(value: Any) -> bool:
    """What an `ok` acquire grants (workloads/common.py): null, or a table whose token and
    sequence number are whole numbers (or null) and whose node is a name (or null)."""
    if value is None:
        return True
    if type(value) is not dict:
        return False
    return (
        _opt(value.get("token"), int)
        and _opt(value.get("seq"), int)
        and _opt(value.get("node"), str)
        and (value.get("mode") is None or value.get("mode") in ("read", "write"))
    )


def _session(value: Any) -> bool:
    """What a client's `session` event says (client/loop.py): null, or a table whose
    `timeout_ms` (the session's length, which the power line and fairness divide) is a number
    >= 0 or null, and whose `renew_ms`, if it has one, is a number > 0 and no more than its
    timeout_ms (client/protocol.py `session_problem`)."""
    if value is None:
        return True
    if type(value) is not dict:
        return False
    t = value.get("timeout_ms")
    if not (t is None or (type(t) in (int, float) and t >= 0 and t != float("inf"))):
        return False
    return not session_problem(value)  # its renew_ms, if any: the recorder's own rule


# (f, type) -> (what the value must be, the test). The lock-shaped workloads' grants
# (client/loop.py WORKLOADS: acquire, elected).
VALUE_SHAPES = {
    ("acquire", "ok"): ("null or a table with a whole-number token", _grant),
    ("elected", "ok"): ("null or a table with a whole-number token", _grant),
    ("session", "event"): (
        "null or a table whose timeout_ms is a number >= 0 or null (and renew_ms, if any, a "
        "number > 0 and no more than its timeout_ms)",
        _session,
    ),
}


def check_history_records(history: Any, path: Path) -> None:
    """Indexes non-negative and strictly increasing; each value of the shape its op allows.
    BadInput names the file and the line."""
    last = -1
    lines = history.lines
    for k, op in enumerate(history.ops):
        line = lines[k] if k < len(lines) else k + 1
        i = op.index
        if i < 0:
            raise BadInput(f"{path} line {line}: index {i} is negative")
        if i <= last:
            raise BadInput(
                f"{path} line {line}: index {i} does not follow index {last} (indexes are "
                "unique and strictly increasing)"
            )
        last = i
        shape = VALUE_SHAPES.get((op.f, op.type))
        if shape is not None and not shape[1](op.value):
            raise BadInput(
                f"{path} line {line}: an {op.type} {op.f} has value "
                f"{repr(op.value)[:60]}; it must be {shape[0]}"
            )
