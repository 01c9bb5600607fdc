"""Property (issue 48): `check` keeps integers exact, whatever their size, in every reader.

A history's integers (a value, a key, a token, a client, an extra field, an index, a time) may
be of any size: 2**70 written and 2**70 + 1 read is two values, never "valid". Generated
histories (integers of any size, near 2**63 and 2**64 above all, with floats now and then, which
send a block past the compiled scanner to the Python path) are read three ways: the compiled
scanner (history/_fastjsonl.c), the Python path alone (orjson where no number may pass 64 bits,
json where one may), and a plain `json.loads` per line (the reference). All three give the same
records, or the two readers refuse with the same sentence. Then the verdicts: a write of x and a
read of y by one process, in each format `check` reads (jsonl, json, edn, jepsen-log), is valid
exactly when y == x, the compiled scanner on or off.

The counts are printed; ZKJEPSEN_CHECK_INPUT_EXAMPLES (default 150) and ZKJEPSEN_CHECK_INPUT_SEED
explore further.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hostile import Tally, examples, run_bounded, seeded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkjepsen.errors import BadInput
from zkjepsen.history import check_record
from zkjepsen.history import stream as stream_mod
from zkjepsen.history.stream import Structure, iter_blocks

EXAMPLES = examples("ZKJEPSEN_CHECK_INPUT_EXAMPLES", 150)
SEEDED = os.environ.get("ZKJEPSEN_CHECK_INPUT_SEED")
EDGES = [
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    10**18 - 1,
    10**18,
    10**19,
    2**70,
    2**70 + 1,
    -(10**40),
]
INTS = st.one_of(st.sampled_from(EDGES), st.integers(), st.integers(-(2**200), 2**200))
SCALARS = st.one_of(INTS, st.sampled_from([0.5, -1.25e10, None, "x", True]))
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.fixed_dictionaries({"token": INTS}, optional={"seq": INTS, "node": st.just("n")}),
)


@st.composite
def histories(draw: Any) -> list[dict[str, Any]]:
    """Well-formed records (one process at a time, each op invoked then completed) whose every
    integer may be of any size."""
    base_index = draw(st.sampled_from([0, 2**63 - 2, 2**64, 2**70]))
    base_time = draw(st.sampled_from([0, 10**18, 2**63 - 2, 2**70]))
    n = draw(st.integers(1, 6))
    out = []
    for k in range(n):
        process = draw(INTS)
        for typ in ("invoke", draw(st.sampled_from(["ok", "fail", "info"]))):
            i = len(out)
            r: dict[str, Any] = {
                "index": base_index + i,
                "time": base_time + i,
                "process": process,
                "type": typ,
                "f": "write",
            }
            if draw(st.booleans()):
                r["value"] = draw(VALUES)
            if draw(st.booleans()):
                r["client"] = draw(INTS)
            if draw(st.booleans()):
                r["key"] = draw(INTS)
            if draw(st.booleans()):
                r["n"] = draw(VALUES)
            out.append(r)
        del k
    return out


def reference(lines: list[str]) -> list[Any] | str:
    """The records as json reads them, line by line (exact), checked as the readers check."""
    structure = Structure()
    out = []
    try:
        for n, line in enumerate(lines, 1):
            op = check_record(json.loads(line), n)
            structure.feed(op, n)
            out.append(op)
    except BadInput as e:
        return f"refused: {e}"
    return out


def read(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any] | str:
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(stream_mod, "_scan", None)
        try:
            return [op for ops, _ in iter_blocks(path) for op in ops]
        except BadInput as e:
            return f"refused: {e}"


def test_both_readers_read_every_integer_exactly(tmp_path, monkeypatch, request):
    tally = Tally()
    count = iter(range(10**9))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEEDED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(histories())
    def one(records: list[dict[str, Any]]) -> None:
        lines = [json.dumps(r) for r in records]
        path = tmp_path / f"h{next(count)}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        want = reference(lines)
        c, py = read(path, True, monkeypatch), read(path, False, monkeypatch)
        why = None
        if c != want or py != want:
            why = f"compiled {str(c)[:200]} / python {str(py)[:200]} / json {str(want)[:200]}"
        big = any(abs(v) >= 2**63 for v in _ints(records))
        tally.add("past 64 bits" if big else "within 64 bits", "\n".join(lines)[:400], why)

    seeded(one, "ZKJEPSEN_CHECK_INPUT_SEED")()
    summary = tally.report(request, "check: integers read")
    tally.assert_none_wrong(summary)
    assert tally.tried["past 64 bits"] > EXAMPLES // 4


def _ints(v: Any) -> list[int]:
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        return [v]
    if isinstance(v, dict):
        return [i for x in v.values() for i in _ints(x)]
    if isinstance(v, list):
        return [i for x in v for i in _ints(x)]
    return []


# ---- verdicts, in every format ----------------------------------------------------------------
def register_history(x: int, y: int, fmt: str) -> str:
    """Process 1 writes x, then reads y."""
    ops = [("invoke", "write", x), ("ok", "write", x), ("invoke", "read", None), ("ok", "read", y)]
    if fmt == "jsonl":
        return "".join(
            json.dumps({"index": i, "time": i, "process": 1, "type": t, "f": f, "value": v}) + "\n"
            for i, (t, f, v) in enumerate(ops)
        )
    if fmt == "json":
        return json.dumps([{"process": 1, "type": t, "f": f, "value": v} for t, f, v in ops])
    if fmt == "edn":
        return (
            "["
            + " ".join(
                f"{{:process 1 :type :{t} :f :{f} :value {'nil' if v is None else v}}}"
                for t, f, v in ops
            )
            + "]"
        )
    return "".join(
        f"INFO  jepsen.util - 1\t:{t}\t:{f}\t{'nil' if v is None else v}\n" for t, f, v in ops
    )


def test_a_read_of_another_integer_is_never_valid(tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    tally = Tally()
    count = iter(range(10**9))

    @settings(
        max_examples=max(20, EXAMPLES // 2),
        deadline=None,
        database=None,
        derandomize=SEEDED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        INTS,
        st.sampled_from([0, 0, 1, -1, 2**64, 2**53]),
        st.sampled_from(["jsonl", "json", "edn", "jepsen-log"]),
        st.booleans(),
    )
    def one(x: int, delta: int, fmt: str, compiled: bool) -> None:
        path = tmp_path / f"r{next(count)}.txt"
        path.write_text(register_history(x, x + delta, fmt))
        with monkeypatch.context() as m:
            if not compiled:
                m.setattr(stream_mod, "_scan", None)
            argv = ["check", str(path), "--model", "register", "--format", fmt]
            code, out, err = run_bounded([*argv, "--html", str(path) + ".html"])
        want = 0 if delta == 0 else 1
        why = None if code == want else f"exit {code}, expected {want}: {out} {err}"[:300]
        tally.add(f"{fmt} {'same' if delta == 0 else 'other'}", f"{fmt} x={x} y=x+{delta}", why)

    seeded(one, "ZKJEPSEN_CHECK_INPUT_SEED")()
    summary = tally.report(request, "check: write x, read y")
    tally.assert_none_wrong(summary)
