"""Property: a stored run folder with any one file corrupted is refused by `analyze`, `replay` and
`shrink`: exit 254, exactly one line on stderr, no traceback, nothing written outside the
folder, and no hang (hostile.hang_guard cuts the command; a cut is a failure).

A corruption that changes content is wrong, so 254 is the only right answer for it (2 would be
a judgement of evidence that should have been refused, 255 a reader meeting what no schema let
through). One that keeps the content (schedule.json's keys reordered, re-indented) must get
the uncorrupted folder's own answer.
The corruptions are generated (Hypothesis) per file, in the spirit of test_bad_input_properties:
test.json (a field missing, of the wrong type or out of range, an unknown field, not a table,
cut short), history.jsonl (a record's field of the wrong type or an impossible value, an index
repeated or going back, an ok acquire granting no token, a record missing a field, an invoke
dropped, lines swapped, a line cut short or not JSON; a nemesis record's every field of the
wrong type or range, a fault the service cannot run or targets the run lacks, a field missing,
an end with no start, a start twice), schedule.json (every field of an executed fault and of
the schedule: wrong type or range, missing, unknown, a fault the service cannot run, targets and
aims the run lacks, triggers that cannot arm, a fault listed twice, wrong shapes, cut short),
results.json (verdicts, violations and parts of the wrong shape, cut short), and any of them as
a named pipe, a directory, a symlink loop, a device or bytes that are not UTF-8. The base folder
(two executed faults, one triggered in a lane) is well-formed: `analyze` judges it, and
`replay` and `shrink` get past every check to the dead Docker engine (255), so a corruption they
do not refuse shows as 255.

The figures (corruptions tried, refused right, unchanged contents answered as the base folder)
are printed at the end; ZKJEPSEN_STORED_EXAMPLES (default 150) and ZKJEPSEN_STORED_SEED
(default: fixed) explore further.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hostile
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from stored_folder import jsonl, lock_records, make_run, stored_spec

from zkjepsen.run.stored_checks import STORED_SPEC_FIELDS

DEAD_ENGINE = "unix:///nonexistent/zkjepsen-stored-property.sock"
BOUND_S = 20  # CPU seconds (hostile.hang_guard): a refusal takes well under one
EXAMPLES = int(os.environ.get("ZKJEPSEN_STORED_EXAMPLES", "150"))
SEED = os.environ.get("ZKJEPSEN_STORED_SEED")
COMMANDS = ("analyze", "replay", "shrink")
FAILING_RESULTS = {"valid": False, "lock": {"valid": False}}  # so `shrink` has a violation


@dataclass(frozen=True)
class Corruption:
    file: str
    what: str
    apply: Callable[[Path], None]
    harmless: bool = False  # the same content: judged as the base folder is

    def __repr__(self) -> str:
        return f"{self.file}: {self.what}"


# ---- test.json ----------------------------------------------------------------------------------
NOT_INT = ["x", 1.5, True, [1], {}]
NOT_SECONDS = ["x", True, None, -1, 0 - 1e-9, [], 1e12]
NOT_STR = [3, [], {}, ""]
NOT_BOOL = [2, "yes", None, 0.5]
BAD_FIELD: dict[str, list[Any]] = {
    "recipe": [*NOT_STR, None],
    "workload": [*NOT_STR, None],
    "backend": [*NOT_STR, None],
    "nemesis": [[], 3, [""], "", [1], None],
    "nodes": [*NOT_INT, 0, 10, None],
    "clients": [*NOT_INT, 0, 101, None],
    "time_limit_s": [*NOT_SECONDS, 0],
    "recovery_s": NOT_SECONDS,
    "session_timeout_s": [*NOT_SECONDS, 0],
    "seed": [*NOT_INT, None],
    "image": [3, "Not Valid", "", []],
    "pin_clients": NOT_BOOL,
    "interval_s": [*NOT_SECONDS, 0],
    "fault_duration_s": [*NOT_SECONDS, 0],
    "params": [[], "x", 3, None],
    "max_faults": [*NOT_INT, -1],
    "fault_target": ["moon", 3, "", "client:x"],
    "client_cmd": [3, "", [], "true"],  # "true" with recipe kazoo: both given
    "client_dir": [3, "", []],
    "client_mode": ["x", 3, None],
    "proxy": NOT_BOOL,
    "service": [
        None,
        3,
        [],
        "zookeeper",
        {"name": "zookeeper"},
        {"name": "moon"},
        {"name": "etcd", "version": "3.4"},
        {"name": "zookeeper", "version": None, "tick_ms": 500, "client_suite": None},
        {"name": "zookeeper", "version": "3.8", "tick_ms": None, "client_suite": None},
        {"name": "zookeeper", "version": "9.9", "tick_ms": 500, "client_suite": None},
        {"name": "zookeeper", "version": "3.8", "tick_ms": 10, "client_suite": None},
        {"name": "zookeeper", "version": "3.8", "tick_ms": 500},
        {"name": "zookeeper", "version": "3.8", "tick_ms": 500, "client_suite": 3},
    ],
    "stop_on_violation": NOT_BOOL,
    "until_power": ["x", 0, 1, 2, True],
    "fault_trigger": ["x", 3, ""],
}


def _spec_with(change: Callable[[dict], Any]) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        doc = stored_spec()
        doc = change(doc) or doc
        (run / "test.json").write_text(json.dumps(doc))

    return apply


def spec_corruptions() -> st.SearchStrategy[Corruption]:
    missing = st.sampled_from(STORED_SPEC_FIELDS).map(
        lambda f: Corruption("test.json", f"no {f}", _spec_with(lambda d, f=f: d.pop(f)))
    )
    wrong = st.sampled_from(sorted(BAD_FIELD)).flatmap(
        lambda f: st.sampled_from(BAD_FIELD[f]).map(
            lambda v, f=f: Corruption(
                "test.json", f"{f} = {v!r}", _spec_with(lambda d: d.__setitem__(f, v))
            )
        )
    )
    extra = st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(lambda k: k not in BAD_FIELD)
    unknown = extra.map(
        lambda k: Corruption("test.json", f"unknown {k}", _spec_with(lambda d: {**d, k: 1}))
    )
    shapes = st.sampled_from(["[]", "3", '"x"', "null", "{}"]).map(
        lambda t: Corruption("test.json", f"is {t}", _write("test.json", t))
    )
    return st.one_of(missing, wrong, unknown, shapes, _cut("test.json", _spec_text()))


def _spec_text() -> str:
    return json.dumps(stored_spec(), indent=2)


# ---- history.jsonl ------------------------------------------------------------------------------
RECORDS = lock_records()
GRANTS = [k for k, r in enumerate(RECORDS) if r["f"] == "acquire" and r["type"] == "ok"]
INVOKES = [k for k, r in enumerate(RECORDS) if r["type"] == "invoke"]
BAD_RECORD: dict[str, list[Any]] = {
    "index": [-1, "abc", 1.5, None, True, "dup", "back"],
    "time": [-1, "x", 1.5, None, True],
    "process": [1.5, None, True, [1], {}],
    "type": ["begin", 3, None, ""],
    "f": [3, None, [], True],
    "client": ["c1", 1.5, True, []],
}
BAD_GRANTS = ["tok", 3, [1], True, {"token": "tok"}, {"token": 1.5}, {"token": [1]}]


def _history(records: list[dict]) -> Callable[[Path], None]:
    return _write("history.jsonl", jsonl(records))


def _with_field(k: int, name: str, v: Any) -> list[dict]:
    out = [dict(r) for r in RECORDS]
    if v == "dup" and name == "index":
        v = out[k - 1]["index"]
    elif v == "back" and name == "index":
        v = max(0, out[k - 1]["index"] - 1)
    out[k][name] = v
    return out


def history_corruptions() -> st.SearchStrategy[Corruption]:
    at = st.integers(1, len(RECORDS) - 1)
    field = st.tuples(at, st.sampled_from(sorted(BAD_RECORD))).flatmap(
        lambda kf: st.sampled_from(BAD_RECORD[kf[1]]).map(
            lambda v, k=kf[0], f=kf[1]: Corruption(
                "history.jsonl", f"line {k + 1} {f} = {v!r}", _history(_with_field(k, f, v))
            )
        )
    )
    grant = st.tuples(st.sampled_from(GRANTS), st.sampled_from(BAD_GRANTS)).map(
        lambda kv: Corruption(
            "history.jsonl",
            f"line {kv[0] + 1} grants {kv[1]!r}",
            _history(_with_field(kv[0], "value", kv[1])),
        )
    )
    gone = st.tuples(at, st.sampled_from(["index", "time", "process", "type", "f"])).map(
        lambda kf: Corruption(
            "history.jsonl",
            f"line {kf[0] + 1} without {kf[1]}",
            _history([r if i != kf[0] else _without(r, kf[1]) for i, r in enumerate(RECORDS)]),
        )
    )
    dropped = st.sampled_from(INVOKES).map(
        lambda k: Corruption(
            "history.jsonl", f"invoke on line {k + 1} dropped", _history(_drop(RECORDS, k))
        )
    )
    swapped = at.map(
        lambda k: Corruption(
            "history.jsonl", f"lines {k} and {k + 1} swapped", _history(_swap(RECORDS, k))
        )
    )
    junk = st.tuples(at, st.sampled_from(["garbage", "[1, 2]", '"x"', "3", "{", "{} {}"])).map(
        lambda kt: Corruption(
            "history.jsonl",
            f"line {kt[0] + 1} is {kt[1]}",
            _write("history.jsonl", _replace_line(jsonl(RECORDS), kt[0], kt[1])),
        )
    )
    session = st.sampled_from(BAD_SESSIONS).map(
        lambda v: Corruption("history.jsonl", f"a session event of {v!r}", _history(_session(v)))
    )
    return st.one_of(
        field, grant, gone, dropped, swapped, junk, _cut_line(), nemesis_corruptions(), session
    )


# What a client's session event must not say: its length is divided by (power line, fairness).
BAD_SESSIONS = [3, "x", [], {"timeout_ms": "x"}, {"timeout_ms": -1}, {"timeout_ms": [1]}]


def _session(value: Any) -> list[dict]:
    event = {"time": RECORDS[0]["time"] - 1, "process": 1, "client": 1, "type": "event"}
    out = [{**event, "f": "session", "value": value}, *(dict(r) for r in RECORDS)]
    return [{**r, "index": i} for i, r in enumerate(out)]


# The nemesis's records of one fault (nemesis/schedule.py `_record`), between the clients' ones.
NEMESIS_START = {"fault_id": 1, "phase": "start", "targets": ["n2"], "detail": {}}
NEMESIS_END = {**NEMESIS_START, "phase": "end", "observed": {"landed": True, "why": "killed"}}
BAD_NEMESIS: dict[str, list[Any]] = {
    "type": ["ok", "invoke", "event", 3],
    "f": ["moon", "PAUSE-CLIENT", "pg-terminate-holder", 3, None],
    "value": [3, None, [], "x"],
    "value.fault_id": [[1], "x", -1, 1.5],
    "value.phase": ["middle", 3, None],
    "value.targets": [3, None, ["n9"], ["c99"], [1], ["n2", "n2"], "n2"],
    "value.observed": [3, {"landed": "yes", "why": ""}, {"why": "x"}],
    "value.detail": [3, []],
    "value.trigger": [3, {"kind": "moon"}, {"kind": "acquired", "k": "x"}],
    "value.attempt": [0, "x"],
    "value.bogus": [1],
}


def _with_nemesis(start: dict, end: dict | None, which: int = 0, name: str = "", v: Any = None):
    """The base records with a fault's start and end record after lines 3 and 6; `name` set to
    `v` in the start (`which` 0) or end (1) record (`value.x`: inside its value; v DROP: gone)."""
    recs = [dict(r) for r in RECORDS]
    pair = [
        {"time": recs[2]["time"] + 1, "process": "nemesis", "type": "info", "f": "kill-one",
         "value": json.loads(json.dumps(start))},
        {"time": recs[5]["time"] + 1, "process": "nemesis", "type": "info", "f": "kill-one",
         "value": json.loads(json.dumps(end))},
    ]  # fmt: skip
    if name:
        table, key = (
            (pair[which]["value"], name[6:]) if name.startswith("value.") else (pair[which], name)
        )
        if v is DROP:
            table.pop(key, None)
        else:
            table[key] = v
    out = [*recs[:3], pair[0], *recs[3:6]] + ([pair[1]] if end is not None else []) + recs[6:]
    return [{**r, "index": i} for i, r in enumerate(out)]


DROP = object()


def nemesis_corruptions() -> st.SearchStrategy[Corruption]:
    which = st.sampled_from([0, 1])
    field = st.tuples(which, st.sampled_from(sorted(BAD_NEMESIS))).flatmap(
        lambda wf: st.sampled_from(BAD_NEMESIS[wf[1]]).map(
            lambda v, w=wf[0], f=wf[1]: Corruption(
                "history.jsonl",
                f"nemesis {('start', 'end')[w]} {f} = {v!r}",
                _history(_with_nemesis(NEMESIS_START, NEMESIS_END, w, f, v)),
            )
        )
    )
    gone = st.tuples(which, st.sampled_from(["value.fault_id", "value.phase", "value.targets"]))
    missing = gone.map(
        lambda wf: Corruption(
            "history.jsonl",
            f"nemesis {('start', 'end')[wf[0]]} without {wf[1]}",
            _history(_with_nemesis(NEMESIS_START, NEMESIS_END, wf[0], wf[1], DROP)),
        )
    )
    order = st.sampled_from(
        [
            ("an end with no start", NEMESIS_END, NEMESIS_END),
            ("started twice", NEMESIS_START, NEMESIS_START),
        ]
    ).map(lambda t: Corruption("history.jsonl", t[0], _history(_with_nemesis(t[1], t[2]))))
    return st.one_of(field, missing, order)


def _without(r: dict, name: str) -> dict:
    return {k: v for k, v in r.items() if k != name}


def _drop(records: list[dict], k: int) -> list[dict]:
    return records[:k] + records[k + 1 :]


def _swap(records: list[dict], k: int) -> list[dict]:
    out = list(records)
    out[k - 1], out[k] = out[k], out[k - 1]
    return out


def _replace_line(text: str, k: int, line: str) -> str:
    lines = text.splitlines()
    lines[k] = line
    return "\n".join(lines) + "\n"


def _cut_line() -> st.SearchStrategy[Corruption]:
    """The file cut inside a line (not at its end): that line is no longer JSON."""
    text = jsonl(RECORDS)
    starts = {i + 1 for i, c in enumerate(text) if c == "\n"}  # whole lines before: still JSON
    cuts = [i for i in range(1, len(text)) if i not in starts and text[i - 1] != "}"]
    return st.sampled_from(cuts).map(
        lambda i: Corruption("history.jsonl", f"cut at byte {i}", _write("history.jsonl", text[:i]))
    )


# ---- schedule.json and results.json -------------------------------------------------------------
# The base schedule: executed faults as nemesis/schedule.py writes them (a timed server kill, a
# triggered client pause in lane 1), so every field a replay reads is there to corrupt.
GOOD_FAULT = {"fault_id": 1, "f": "kill", "start_ns": 1, "end_ns": 2}
KILL = {
    "fault_id": 1, "f": "kill-one", "target": None, "targets": ["n2"], "detail": {},
    "params": {}, "duration": 2.0, "at_s": 1.0, "start_ns": 1_000_000_000,
    "applied_ns": 1_100_000_000, "end_ns": 3_000_000_000, "duration_s": 2.0,
    "observed": {"landed": True, "why": "killed n2"},
}  # fmt: skip
PAUSE = {
    "fault_id": 2, "f": "pause-client", "target": "trigger", "aim": "client:2",
    "targets": ["c2"], "detail": {"chosen": "trigger"}, "params": {}, "duration": "1.5x",
    "start_ns": 5_000_000_000, "end_ns": 9_000_000_000, "armed_ns": 4_000_000_000,
    "trigger": {"kind": "acquired", "client": 2, "delay_s": 0.0, "retries": 3},
    "fired": {"armed_ns": 4_000_000_000, "event_ns": 4_900_000_000, "client": 2},
    "attempt": 1, "landed": True, "lane": 1, "missed": [],
}  # fmt: skip
GOOD_SCHEDULE = {"seed": 7, "names": ["kill-one", "pause-client"], "replay": False,
                 "time_limit_s": 20.0, "faults": [KILL, PAUSE]}  # fmt: skip
# field -> values no stored run could hold (type, range, a name or target that does not exist in
# this 3-server, 5-client ZooKeeper run, a fault it cannot run, a trigger that cannot arm).
BAD_FAULT_FIELD: dict[str, list[Any]] = {
    "f": ["PAUSE-CLIENT", "pg-terminate-holder", "proxy-lose-create", "none", "heal", 3, None],
    "fault_id": ["x", -1, 1.5, []],
    "start_ns": [-1, "x", 1.5, None, True, 2**70],
    "end_ns": [-1, 0, "x", None, [1]],
    "target": ["client:99", "n9", 3, []],
    "aim": ["client:6", 3],
    "targets": [["n9"], ["c99"], ["moon"], "n1", [1], ["n1", "n1"], {}],
    "trigger": [3, [], {"kind": "moon"}, {"kind": "acquired", "k": 0}, {"kind": "session"},
                {"kind": "acquired", "client": 99}, {"kind": "acquired", "retries": "x"},
                {"kind": "released", "retries": 2}, {"kind": "acquired", "delay_s": -1},
                {"kind": "acquired", "bogus": 1}],
    "lane": [-1, "1", 1.5, True],
    "armed_ns": [-1, "x"],
    "duration": [-1, "x", "1.5y", []],
    "params": [3, [], "x"],
    "detail": [3, [], "x"],
    "observed": [3, {"landed": "yes", "why": ""}, {"why": "x"}],
    "landed": ["yes", 1],
    "missed": [3, [3]],
    "bogus": [1],  # no such field: zkjepsen writes none
}  # fmt: skip
BAD_TOP_FIELD: dict[str, list[Any]] = {
    "faults": [3, None, {}, [3], "x"],
    "seed": ["x", 1.5, None],
    "names": [3, [1]],
    "replay": ["yes", 1],
    "time_limit_s": [-1, "x"],
    "bogus": [1],
}
BAD_SCHEDULES = ["[]", "3", "{}", '"x"', "null"]
BAD_RESULTS = [
    "[]",
    "3",
    "{}",
    '{"valid": "maybe"}',
    '{"valid": null}',
    '{"valid": 1}',
    '{"valid": false, "lock": {"valid": "yes"}}',
    '{"valid": false, "lock": {"valid": false, "violations": 3}}',
    '{"valid": false, "lock": {"valid": false, "violations": [3]}}',
    '{"valid": false, "lock": {"valid": false, "violations": [{"start": 1}]}}',
    '{"valid": false, "lock": {"valid": false, "violations": [{"kind": "belief", "clients": 5}]}}',
    '{"valid": false, "lock": {"valid": false, "violations": [{"kind": "b", "evidence": "x"}]}}',
    '{"valid": false, "lock": {"valid": false, "violations": [{"kind": "b", "faults": 3}]}}',
    '{"valid": false, "lock": {"valid": false, "violations": [], "violation_counts": {"b": -1}}}',
    '{"valid": false, "lock": {"valid": false, "belief_overlaps": 3}}',
    '{"valid": false, "lock": {"valid": false, "belief_overlaps": [{"clients": 5}]}}',
    '{"valid": false, "lock": {"valid": false, "x": {"valid": 2}}}',
]


def _schedule(doc: Any) -> Callable[[Path], None]:
    return _write("schedule.json", json.dumps(doc))


def _fault_with(k: int, name: str, v: Any) -> dict:
    doc = json.loads(json.dumps(GOOD_SCHEDULE))
    doc["faults"][k][name] = v
    return doc


def _fault_without(k: int, name: str) -> dict:
    doc = json.loads(json.dumps(GOOD_SCHEDULE))
    del doc["faults"][k][name]
    return doc


def _twice(k: int) -> dict:
    doc = json.loads(json.dumps(GOOD_SCHEDULE))
    doc["faults"].append(doc["faults"][k])
    return doc


def schedule_corruptions() -> st.SearchStrategy[Corruption]:
    which = st.sampled_from([0, 1])
    field = st.tuples(which, st.sampled_from(sorted(BAD_FAULT_FIELD))).flatmap(
        lambda kf: st.sampled_from(BAD_FAULT_FIELD[kf[1]]).map(
            lambda v, k=kf[0], f=kf[1]: Corruption(
                "schedule.json", f"faults[{k}].{f} = {v!r}", _schedule(_fault_with(k, f, v))
            )
        )
    )
    gone = st.tuples(which, st.sampled_from(["f", "start_ns", "end_ns"])).map(
        lambda kf: Corruption(
            "schedule.json", f"faults[{kf[0]}] without {kf[1]}", _schedule(_fault_without(*kf))
        )
    )
    twice = which.map(
        lambda k: Corruption("schedule.json", f"faults[{k}] listed twice", _schedule(_twice(k)))
    )
    top = st.sampled_from(sorted(BAD_TOP_FIELD)).flatmap(
        lambda f: st.sampled_from(BAD_TOP_FIELD[f]).map(
            lambda v, f=f: Corruption(
                "schedule.json", f"{f} = {v!r}", _schedule({**GOOD_SCHEDULE, f: v})
            )
        )
    )
    shapes = st.sampled_from(BAD_SCHEDULES).map(
        lambda t: Corruption("schedule.json", t, _write("schedule.json", t))
    )
    cut = _cut("schedule.json", json.dumps(GOOD_SCHEDULE))
    return st.one_of(field, gone, twice, top, shapes, cut)


def harmless_corruptions() -> st.SearchStrategy[Corruption]:
    """Changes that keep the same content: the verdict (and exit) must be the base folder's."""
    reordered = {k: GOOD_SCHEDULE[k] for k in reversed(list(GOOD_SCHEDULE))}
    texts = [json.dumps(reordered), json.dumps(GOOD_SCHEDULE, indent=4) + "\n\n"]
    return st.sampled_from(texts).map(
        lambda t: Corruption("schedule.json", "same, rewritten", _write("schedule.json", t), True)
    )


def table_corruptions() -> st.SearchStrategy[Corruption]:
    results = st.sampled_from(BAD_RESULTS).map(
        lambda t: Corruption("results.json", t, _write("results.json", t))
    )
    cut_r = _cut("results.json", json.dumps(FAILING_RESULTS))
    return st.one_of(schedule_corruptions(), results, cut_r)


# ---- any file: not a regular file, not text -----------------------------------------------------
def _kind(name: str, kind: str) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        p = run / name
        p.unlink()
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dir":
            p.mkdir()
        elif kind == "loop":
            p.symlink_to(name)
        elif kind == "device":
            p.symlink_to("/dev/zero")
        elif kind == "dangling":
            p.symlink_to("nowhere")
        elif kind == "binary":
            p.write_bytes(b"\xff\xfe\x00garbage\xc3")

    return apply


def kind_corruptions() -> st.SearchStrategy[Corruption]:
    files = st.sampled_from(["test.json", "history.jsonl", "schedule.json", "results.json"])
    kinds = st.sampled_from(["fifo", "dir", "loop", "device", "dangling", "binary"])
    return st.tuples(files, kinds).map(lambda fk: Corruption(fk[0], fk[1], _kind(*fk)))


def _write(name: str, text: str) -> Callable[[Path], None]:
    return lambda run: (run / name).write_text(text)


def _cut(name: str, text: str) -> st.SearchStrategy[Corruption]:
    body = text.rstrip()
    return st.integers(0, len(body) - 1).map(
        lambda i: Corruption(name, f"cut at byte {i}", _write(name, body[:i]))
    )


CORRUPTIONS = st.one_of(
    spec_corruptions(),
    history_corruptions(),
    table_corruptions(),
    kind_corruptions(),
    harmless_corruptions(),
)


# ---- running one --------------------------------------------------------------------------------
def run_bounded(argv: list[str]) -> tuple[int | str, str]:
    """(exit code, or what went wrong instead; stderr): hostile.py's guard, one for all."""
    code, _, err = hostile.run_bounded(argv, BOUND_S)
    return code, err


def snapshot(root: Path, skip: Path) -> set[str]:
    return {str(q) for q in root.rglob("*") if skip not in q.parents and q != skip}


def judge(
    c: Corruption, command: str, code: int | str, err: str, created: set[str], base: int | str
) -> str | None:
    lines = [x for x in err.splitlines() if x.strip()]
    if not isinstance(code, int):
        return code
    if c.harmless:  # the same content: the base folder's answer, whatever it was
        return None if code == base else f"exit {code}, the base folder's {base}: {err[-300:]}"
    if code != 254:  # every corruption here is wrong: none may be judged (0, 1, 2) or run
        return f"exit {code}: {' | '.join(lines)[-300:]}"
    if code == 254 and ("Traceback" in err or len(lines) != 1):
        return f"{len(lines)} lines on stderr: {' | '.join(lines)[:300]}"
    if created:
        return f"wrote outside the folder: {sorted(created)[:5]}"
    return None


def test_the_base_folder_gets_past_every_check(tmp_path, monkeypatch):
    """Without this, a refusal of the corrupted folder could be a refusal of the base one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    run = make_run(tmp_path)
    (run / "results.json").write_text(json.dumps(FAILING_RESULTS))
    (run / "schedule.json").write_text(json.dumps(GOOD_SCHEDULE))
    assert run_bounded(["analyze", str(run)])[0] in (0, 1, 2)
    for command in ("replay", "shrink"):
        code, err = run_bounded([command, str(run)])
        assert code == 255 and "cannot reach" in err, (command, code, err)
    # the nemesis's records of a fault, retried once (a missed attempt), are read, not refused
    twice = _with_nemesis(NEMESIS_START, NEMESIS_END)
    again = [dict(r, time=r["time"] + 10**9) for r in twice if r["process"] == "nemesis"]
    _history(twice + [{**r, "index": len(twice) + i} for i, r in enumerate(again)])(run)
    assert run_bounded(["analyze", str(run)])[0] in (0, 1, 2)
    _history(_session({"session_id": "0x1", "timeout_ms": 4000}))(run)  # as a client says it
    assert run_bounded(["analyze", str(run)])[0] in (0, 1, 2)


def test_corrupted_stored_runs_are_refused(tmp_path, monkeypatch, request):
    from zkjepsen import store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    for name in ("DOCKER_CONTEXT", "ZKJEPSEN_STORE", "ZKJEPSEN_FILES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(store, "DEFAULT_ROOT", Path("store"))
    tried: Counter = Counter()
    right: Counter = Counter()
    failures: dict[str, str] = {}
    same: Counter = Counter()  # harmless changes answered as the base folder
    count = iter(range(10**9))
    base: dict[str, int | str] = {}
    for command in COMMANDS:  # the uncorrupted folder's answers, for the harmless changes
        run = make_run(tmp_path / "base", command)
        (run / "results.json").write_text(json.dumps(FAILING_RESULTS))
        (run / "schedule.json").write_text(json.dumps(GOOD_SCHEDULE))
        base[command] = run_bounded([command, str(run)])[0]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(CORRUPTIONS, st.sampled_from(COMMANDS))
    def one(c: Corruption, command: str) -> None:
        run = make_run(tmp_path / "runs", f"r{next(count)}")
        (run / "results.json").write_text(json.dumps(FAILING_RESULTS))
        (run / "schedule.json").write_text(json.dumps(GOOD_SCHEDULE))
        c.apply(run)
        before = snapshot(tmp_path, run)
        code, err = run_bounded([command, str(run)])
        why = judge(c, command, code, err, snapshot(tmp_path, run) - before, base[command])
        tried[c.file] += 1
        same["same"] += c.harmless and why is None
        if why is None:
            right[c.file] += 1
        else:
            failures.setdefault(f"zkjepsen {command} with {c!r}", why)

    (seed(int(SEED))(one) if SEED is not None else one)()
    total, ok = sum(tried.values()), sum(right.values())
    per_file = ", ".join(f"{f} {right[f]}/{n}" for f, n in sorted(tried.items()))
    summary = (
        f"stored-run corruptions: {total} tried, {ok} right ({ok - same['same']} refused, "
        f"{same['same']} unchanged contents answered as the base folder), {total - ok} not "
        f"({per_file})"
    )
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\n{summary}", flush=True)
    assert not failures, (
        summary + "\n" + "\n".join(f"{k}\n    -> {v}" for k, v in list(failures.items())[:60])
    )
    assert len(tried) == 4 and total >= EXAMPLES // 2
