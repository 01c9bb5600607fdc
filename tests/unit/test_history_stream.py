"""The streaming JSONL reader: the same records and the same errors (naming the same line) as
reading line by line, whatever the block boundaries; one pass for the lock checker."""

from __future__ import annotations

import json

import pytest

from zkjepsen.checker.lock import LockChecker
from zkjepsen.errors import BadInput
from zkjepsen.history import parse_jsonl_lines
from zkjepsen.history import stream as stream_mod
from zkjepsen.history.formats import read_history
from zkjepsen.history.stream import StreamedHistory, iter_blocks


def rec(i, p=0, typ="invoke", **kw):
    return json.dumps({"index": i, "time": i, "process": p, "type": typ, "f": "write", **kw})


def lines(n):
    out = []
    for i in range(n):
        out.append(rec(2 * i, p=i % 3, value=i, extra_field="x" if i % 5 == 0 else None))
        out.append(rec(2 * i + 1, p=i % 3, typ="ok", value=i))
    return out


@pytest.mark.parametrize("block", [16, 100, 1 << 22])
def test_same_records_as_line_by_line(tmp_path, monkeypatch, block):
    monkeypatch.setattr(stream_mod, "BLOCK", block)
    text = lines(50)
    text.insert(7, "")  # a blank line: skipped, later line numbers unchanged
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(text))  # no newline after the last line
    want = parse_jsonl_lines(text)
    got = StreamedHistory(path)
    assert [o.to_dict() for o in got] == [o.to_dict() for o in want]
    assert got.lines == want.lines


@pytest.mark.parametrize("block", [16, 1 << 22])
@pytest.mark.parametrize(
    "bad,reason",
    [
        ('{"index": 1', "line 31: not valid JSON"),
        (rec(60) + " " + rec(61), "line 31: not valid JSON \\(more than one JSON value"),
        ("[1, 2]", "line 31: expected a JSON object"),
        (rec(60, typ="ok", p=7), "line 31: ok of process 7 without a pending invoke"),
    ],
)
def test_errors_name_the_line(tmp_path, monkeypatch, block, bad, reason):
    monkeypatch.setattr(stream_mod, "BLOCK", block)
    text = lines(15) + [bad] + lines(3)
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(BadInput, match=reason):
        list(StreamedHistory(path))
    with pytest.raises(BadInput, match=reason):
        read_history(path).ops  # noqa: B018


def test_lines_split_across_records_are_not_glued_together(tmp_path):
    # Each line alone is invalid; joined with a comma they would make valid JSON.
    path = tmp_path / "h.jsonl"
    path.write_text('{"index": 0, "time": 0, "process": 0, "type": "invoke",\n"f": "w"}\n')
    with pytest.raises(BadInput, match="line 1: not valid JSON"):
        list(iter_blocks(path))


def test_lock_checker_reads_a_streamed_history_once(tmp_path, monkeypatch):
    recs = [
        {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "acquire", "key": "/l"},
        {
            "index": 1,
            "time": 1,
            "process": 0,
            "type": "ok",
            "f": "acquire",
            "key": "/l",
            "value": {"token": 1},
        },
        {"index": 2, "time": 2, "process": "nemesis", "type": "info", "f": "kill"},
        {"index": 3, "time": 3, "process": 0, "type": "invoke", "f": "release", "key": "/l"},
        {"index": 4, "time": 4, "process": 0, "type": "ok", "f": "release", "key": "/l"},
    ]
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    passes = []
    real = stream_mod.iter_records
    monkeypatch.setattr(stream_mod, "iter_records", lambda p: passes.append(p) or real(p))
    h = read_history(path)
    r = LockChecker().check(h)
    assert r.valid is True and r.details["holds"] == 1
    assert len(passes) == 1
