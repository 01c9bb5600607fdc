"""The compiled history reader (history/_fastjsonl.c) against the pure-Python one: the same
records, extras, line numbers, errors and lock verdicts on random histories, whatever the
values (nested, unicode, escapes, big ints, floats, extra and repeated fields) and the block
boundaries. The compiled path may give up on a block (the Python path then reads it); these
tests also check that it does NOT give up on ordinary histories, or it would be no fast path."""

from __future__ import annotations

import json
import random
import shutil
from typing import Any

import pytest

from zkjepsen.checker.lock import LockChecker
from zkjepsen.errors import BadInput
from zkjepsen.history import stream as stream_mod
from zkjepsen.history.stream import StreamedHistory, iter_records

if stream_mod._scan is None:  # noqa: SLF001 - whether the module was built
    if shutil.which("gcc"):
        pytest.fail("history/_fastjsonl.c is not built though gcc is here: run ./run test")
    pytest.skip("no C compiler: the reader is pure Python here", allow_module_level=True)


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 3 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 7, 2**31, -(2**40), 10**17, 10**18, 2**63, -(10**25)])
    if kind == 3:
        return rng.choice([0.5, -1.25e10, 1e-7, 3.0])
    if kind in (4, 5, 6, 7):
        alphabet = 'ab/"\\\n\t\x01é€😀 {}[],:'
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind in (8, 9):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{rng.randrange(5)}": _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _history(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Well-formed records (pairing kept), with random optional fields and values."""
    out: list[dict[str, Any]] = []
    busy: dict[int, str] = {}
    next_proc = 4
    procs = list(range(4))
    for i in range(n):
        if rng.random() < 0.05:
            d = {"process": "nemesis", "type": rng.choice(["info", "invoke"]), "f": "kill"}
        elif rng.random() < 0.05:
            d = {"process": rng.choice(procs), "type": "event", "f": "session-state"}
        else:
            p = rng.choice(procs)
            if p in busy:
                typ = rng.choice(["ok", "ok", "fail", "info"])
                d = {"process": p, "type": typ, "f": busy.pop(p)}
                if typ == "info":  # the process is retired: a new one takes its place
                    procs[procs.index(p)] = next_proc
                    next_proc += 1
            else:
                busy[p] = rng.choice(["acquire", "release", "write", "é"])
                d = {"process": p, "type": "invoke", "f": busy[p]}
        d = {"index": i, "time": i * 10 + rng.randrange(3), **d}
        for name in ("key", "value", "client", "error", "node"):
            if rng.random() < 0.4:
                d[name] = rng.randrange(9) if name == "client" else _value(rng)
        out.append(d)
    return out


def _text(rng: random.Random, recs: list[dict[str, Any]]) -> str:
    lines = []
    for d in recs:
        style = rng.randrange(4)
        if style == 0:
            lines.append(json.dumps(d))
        elif style == 1:
            lines.append(json.dumps(d, separators=(",", ":"), ensure_ascii=False))
        elif style == 2:  # keys out of order, a repeated field (the last one counts)
            items = list(d.items())
            rng.shuffle(items)
            body = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in items)
            lines.append(" {" + body + ', "f": ' + json.dumps(d["f"]) + "} \r")
        else:
            lines.append(json.dumps(d, indent=None, separators=(" , ", " : ")))
    return "\n".join(lines) + ("\n" if rng.random() < 0.5 else "")


def _read(path, fast: bool) -> tuple[list, list, list, int]:
    recs, extras, nums, fast_blocks = [], [], [], 0
    for block, values, lines, are_extras in iter_records(path, fast=fast):
        recs += block
        nums += lines
        fast_blocks += are_extras
        if are_extras:
            extras += [{} if e is None else e for e in values]
        else:
            known = stream_mod._KNOWN  # noqa: SLF001
            extras += [{k: v for k, v in d.items() if k not in known} for d in values]
    return recs, extras, nums, fast_blocks


@pytest.mark.parametrize("block", [64, 4096, 1 << 22])
def test_compiled_and_python_readers_agree_on_random_histories(tmp_path, monkeypatch, block):
    monkeypatch.setattr(stream_mod, "BLOCK", block)
    rng = random.Random(f"fastjsonl-{block}")
    fast_blocks = 0
    for case in range(60):
        path = tmp_path / f"h{case}.jsonl"
        path.write_text(_text(rng, _history(rng, rng.randrange(1, 120))), encoding="utf-8")
        slow = _read(path, fast=False)
        fast = _read(path, fast=True)
        assert fast[:3] == slow[:3], case
        assert slow[3] == 0
        fast_blocks += fast[3]
    assert fast_blocks > 20  # ordinary blocks do take the compiled path


def _lock_history(rng: random.Random, n: int) -> str:
    lines, t = [], 0
    for i in range(n):
        c = rng.randrange(3)
        token = {"token": i}
        for f, inv, out in (("acquire", None, token), ("write", token, None), ("release", 0, 0)):
            for typ, v in (("invoke", inv), (rng.choice(["ok", "ok", "fail"]), out)):
                d = {"index": t, "time": t, "process": c, "type": typ, "f": f, "client": c}
                d.update({"key": "/r" if f == "write" else "/l", "value": v})
                lines.append(json.dumps(d))
                t += rng.choice([1, 1, 1, -1])  # times out of order now and then: overlaps
                t = max(t, 0)
    return "\n".join(lines) + "\n"


def test_lock_verdicts_are_the_same_either_way(tmp_path, monkeypatch):
    rng = random.Random("fastjsonl-lock")
    for case in range(20):
        path = tmp_path / f"l{case}.jsonl"
        path.write_text(_lock_history(rng, 200))
        fast = LockChecker().check(StreamedHistory(path))
        with monkeypatch.context() as m:
            m.setattr(stream_mod, "_scan", None)
            slow = LockChecker().check(StreamedHistory(path))
        assert (fast.valid, repr(fast.details)) == (slow.valid, repr(slow.details)), case


@pytest.mark.parametrize(
    "bad",
    [
        '{"index": 1, "time": 1, "process": 0, "type": "invoke", "f": "write"} {"a": 1}',
        '{"index": 1, "time": -1, "process": 0, "type": "invoke", "f": "write"}',
        '{"index": true, "time": 1, "process": 0, "type": "invoke", "f": "write"}',
        '{"index": 1, "time": 1, "process": 0, "type": "nope", "f": "write"}',
        '{"index": 1, "time": 1, "process": 0, "type": "ok", "f": "write"}',
        '{"index": 1, "time": 1, "process": 0.5, "type": "invoke", "f": "write"}',
        '{"index": 1, "time": 1, "process": 0, "type": "invoke", "f": "write", "client": "x"}',
        '{"index": 1, "time": 1, "process": 0, "type": "invoke", "f": "write", "value": [1,}',
        "[1, 2]",
        "not json",
    ],
)
def test_the_same_error_either_way(tmp_path, monkeypatch, bad):
    ok = '{"index": 0, "time": 0, "process": 5, "type": "invoke", "f": "write"}'
    path = tmp_path / "bad.jsonl"
    path.write_text(ok + "\n" + bad + "\n")
    errors = []
    for fast in (True, False):
        with pytest.raises(BadInput) as e:
            _read(path, fast=fast)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "line 2" in errors[0]
