"""A fault generator as a run records it: unrolled into its items, each a JSON table.

A schedule given as Python (the pytest plugin's `gen=`, a scenario's triggered `steps(...)`, a
shrink's emitted test) is code: test.json cannot hold it, and a run that did not record it was
named `...-none`, had no power line, and its folder replayed no fault. So `run/resolve.py`
unrolls every generator it is given, once, with the run's seed and settings, into the items it
yields (`record`), and test.json's `generator` holds them; from then on the run's generator is
`replayed(tables)`, which yields the same items, so `generator.plan` walks it into the same plan
(fault ids, times, targets, triggers, lanes, params), whoever reads the spec back: the runner,
a worker process, `replay`, `shrink`, a `--config` file.

Tables: `{"sleep": s}`, `{"fault": name, "target": ..., "duration": ..., "params": {...},
"trigger": {...}}` (only what is set), `{"heal": true}`; any of them with `"lane": i` when not 0.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterator
from typing import Any, cast

from zkjepsen.nemesis.generator import Env, Fault, Gen, Heal, Item, Sleep, resolve_duration
from zkjepsen.nemesis.triggers import Trigger

MAX_ITEMS = 100_000  # as generator.plan: an unbounded generator is refused, not recorded
_FAULT_KEYS = {"fault", "target", "duration", "params", "trigger", "lane"}


class NotAnItem(ValueError):
    """A table that is not a recorded item (the reader names where it is)."""


def item_table(item: Item) -> dict[str, Any]:
    """One item as the JSON table test.json holds (it reads back as the same item)."""
    if isinstance(item, Heal):
        return {"heal": True}
    if isinstance(item, Sleep):
        table: dict[str, Any] = {"sleep": item.seconds}
    else:
        table = {"fault": item.f}
        if item.target is not None:
            table["target"] = item.target
        if item.duration is not None:
            table["duration"] = item.duration
        if item.params:
            table["params"] = _json_value(dict(item.params), f"fault {item.f}'s params")
        if item.trigger is not None:
            table["trigger"] = dict(item.trigger)
    if item.lane:
        table["lane"] = item.lane
    return table


def _json_value(value: Any, what: str) -> Any:
    """`value` if JSON gives it back unchanged (a tuple would come back a list, a NaN not at
    all): the record must read back as what ran."""
    try:
        ok = json.loads(json.dumps(value, allow_nan=False)) == value
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise NotAnItem(f"{what} {value!r} do not read back from JSON as they are")
    return value


def _seconds(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise NotAnItem(f"{what} must be a finite number of seconds >= 0, not {v!r}")
    return v


def _duration(v: Any) -> float | str | None:
    """None (the fault's default), seconds, or session timeouts ("1.5x"), as `Fault` takes."""
    try:
        ok = v is None or (
            not isinstance(v, bool)
            and isinstance(v, (int, float, str))
            and math.isfinite(resolve_duration(v, 1.0))
        )
    except ValueError:
        ok = False
    if not ok:
        raise NotAnItem(f"a fault's duration is seconds or session timeouts ('1.5x'), not {v!r}")
    return cast("float | str | None", v)  # (checked above: None, a number or a string)


def item_from_table(t: Any) -> Item:
    """The item a table records; NotAnItem (one phrase) for anything else."""
    if not isinstance(t, dict):
        raise NotAnItem(f"an item is a table, not {type(t).__name__}")
    lane = t.get("lane", 0)
    if isinstance(lane, bool) or not isinstance(lane, int) or lane < 0:
        raise NotAnItem(f"lane must be a whole number >= 0, not {lane!r}")
    if set(t) <= {"sleep", "lane"} and "sleep" in t:
        return Sleep(_seconds(t["sleep"], "sleep"), lane)
    if set(t) <= {"heal", "lane"} and t.get("heal") is True:
        return Heal()
    if "fault" not in t or not set(t) <= _FAULT_KEYS:
        raise NotAnItem(
            f"{sorted(t)} is not an item: give sleep (seconds), fault (a name, with target, "
            "duration, params, trigger, lane) or heal (true)"
        )
    f, target, params = t["fault"], t.get("target"), t.get("params", {})
    if not isinstance(f, str) or not (target is None or isinstance(target, str)):
        raise NotAnItem(f"a fault's name and target are strings, not {f!r} and {target!r}")
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise NotAnItem(f"fault {f}'s params are a table of name = value, not {params!r}")
    trigger = None
    if t.get("trigger") is not None:
        if not isinstance(t["trigger"], dict):
            raise NotAnItem(f"fault {f}'s trigger is a table, not {t['trigger']!r}")
        try:
            trigger = Trigger.from_json(t["trigger"])
        except (TypeError, ValueError) as e:
            raise NotAnItem(f"fault {f}'s trigger: {e}") from None
    duration, table = _duration(t.get("duration")), trigger.to_json() if trigger else None
    return Fault(f, target=target, duration=duration, params=dict(params), trigger=table, lane=lane)


def unroll(gen: Gen, seed: int, env: Env | None = None) -> list[Item]:
    """The items `gen` yields with the seed's RNG (as `generator.plan` draws them)."""
    items = list(itertools.islice(gen(random.Random(seed), env or Env()), MAX_ITEMS + 1))
    if len(items) > MAX_ITEMS:
        raise ValueError("generator produced too many items; bound it with time_limit")
    return items


def record(gen: Gen, seed: int, env: Env | None = None) -> list[dict[str, Any]]:
    """`gen` unrolled with the seed's RNG and `env`, as test.json's `generator` tables."""
    return [item_table(i) for i in unroll(gen, seed, env)]


def read_items(tables: Any) -> list[Item]:
    """The items of recorded tables; NotAnItem names the position of a bad one."""
    if not isinstance(tables, list):
        raise NotAnItem(f"a recorded generator is a list of items, not {type(tables).__name__}")
    out = []
    for i, t in enumerate(tables, 1):
        try:
            out.append(item_from_table(t))
        except NotAnItem as e:
            raise NotAnItem(f"item {i}: {e}") from None
    return out


def replayed(tables: Any) -> Gen:
    """The generator that yields the recorded items again (checked now, not when it runs)."""
    items = read_items(tables)

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        yield from items

    return gen


def fault_names(tables: Any) -> list[str]:
    """The faults a recorded generator runs, each once, in the order they first come."""
    names = [i.f for i in read_items(tables) if isinstance(i, Fault) and i.f != "none"]
    return list(dict.fromkeys(names))
