"""History records: JSONL round trip, validation with line numbers, pairing, fault windows."""

from __future__ import annotations

import json

import pytest

from zkjepsen.errors import BadInput
from zkjepsen.history import (
    History,
    HistoryWriter,
    Op,
    fault_windows,
    faults_during,
    parse_jsonl_lines,
    read_jsonl,
)


def _line(**kw):
    base = {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "read"}
    base.update(kw)
    return json.dumps(base)


def test_round_trip_keeps_extra_fields(tmp_path):
    ops = [
        Op(0, 10, 3, "invoke", "acquire", key="/locks/a", client=1),
        Op(
            1,
            20,
            3,
            "ok",
            "acquire",
            key="/locks/a",
            client=1,
            value={"token": 42, "seq": 7, "node": "/locks/a/n7"},
            extra={"node_name": "n1"},
        ),
        Op(
            2,
            25,
            "nemesis",
            "info",
            "pause-client",
            value={"fault_id": 1, "phase": "start", "targets": [3]},
        ),
    ]
    path = tmp_path / "h.jsonl"
    History(ops).to_jsonl(path)
    back = read_jsonl(path)
    assert back.ops == ops
    assert back.ops[1].extra == {"node_name": "n1"}
    assert back.ops[1].actor == 1


def test_writer_appends_and_flushes_each_record(tmp_path):
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as w:
        w.write({"time": 1, "process": 0, "type": "invoke", "f": "read"})
        # flushed already: another reader sees the line while the writer is open
        assert json.loads(path.read_text().splitlines()[0])["index"] == 0
        w.write(Op(5, 2, 0, "ok", "read", value=3))
        w.write({"time": 3, "process": 1, "type": "invoke", "f": "read"})
    idx = [json.loads(x)["index"] for x in path.read_text().splitlines()]
    assert idx == [0, 5, 6]


@pytest.mark.parametrize(
    "text,reason",
    [
        ("{not json", "line 2: not valid JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ('{"index": 1, "time": 5, "process": 0, "type": "ok"}', "line 2: missing field 'f'"),
        (_line(type="okay"), "line 2: unknown type 'okay'"),
        (_line(type=["ok"]), "line 2: unknown type \\['ok'\\]"),
        (_line(time=-1), "line 2: 'time' must be a non-negative integer"),
        (_line(process=1.5), "line 2: 'process' must be an integer or a name"),
        (_line(index="x"), "line 2: 'index' must be an integer"),
    ],
)
def test_malformed_line_names_line_and_reason(text, reason):
    with pytest.raises(BadInput, match=reason):
        parse_jsonl_lines([_line(), text])


def test_structural_errors_name_the_line(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join([_line(), _line(index=1, time=1)]) + "\n")
    with pytest.raises(BadInput, match="line 2: process 0 invokes again"):
        read_jsonl(path)
    path.write_text(_line(type="ok") + "\n")
    with pytest.raises(BadInput, match="line 1: ok of process 0 without a pending invoke"):
        read_jsonl(path)
    path.write_text(
        "\n".join([_line(), _line(index=1, time=1, type="info"), _line(index=2, time=2)]) + "\n"
    )
    with pytest.raises(BadInput, match="line 3: process 0 invokes again after an op with unknown"):
        read_jsonl(path)


def test_missing_file_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="cannot read history"):
        read_jsonl(tmp_path / "nope.jsonl")


def test_pairing_interleaves_processes_and_skips_events_and_nemesis():
    ops = [
        Op(0, 0, 1, "invoke", "write", value=1),
        Op(1, 1, 2, "invoke", "read"),
        Op(2, 2, "nemesis", "info", "kill", value=None),
        Op(3, 3, 2, "event", "session-state", value="SUSPENDED"),
        Op(4, 4, 2, "ok", "read", value=1),
        Op(5, 5, 1, "info", "write", value=1),
        Op(6, 6, 3, "invoke", "read"),
    ]
    calls = History(ops).calls()
    assert [(c.invoke.index, c.complete and c.complete.index, c.status) for c in calls] == [
        (0, 5, "info"),
        (1, 4, "ok"),
        (6, None, "info"),
    ]
    assert calls[0].end is None and calls[1].end == 4


def test_fault_windows_and_active_faults():
    def nem(i, t, f, fid, phase):
        return Op(
            i, t, "nemesis", "info", f, value={"fault_id": fid, "phase": phase, "targets": ["n1"]}
        )

    ops = [
        nem(0, 10, "partition-halves", 1, "start"),
        nem(1, 20, "pause-client", 2, "start"),
        nem(2, 30, "partition-halves", 1, "end"),
        Op(3, 40, "nemesis", "info", "kill"),
    ]
    ws = fault_windows(ops)
    assert [(w.fault_id, w.f, w.start, w.end) for w in ws] == [
        (1, "partition-halves", 10, 30),
        (2, "pause-client", 20, None),
        (None, "kill", 40, 40),
    ]
    assert [d["f"] for d in faults_during(ws, 0, 5)] == []
    assert [d["f"] for d in faults_during(ws, 25, 35)] == ["partition-halves", "pause-client"]
    assert [d["f"] for d in faults_during(ws, 35, None)] == ["pause-client", "kill"]
