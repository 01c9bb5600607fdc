"""Readers for external formats: EDN, Jepsen log lines, porcupine kv lines, JSON arrays."""

from __future__ import annotations

import random

import pytest

from zkjepsen.errors import BadInput
from zkjepsen.history import formats
from zkjepsen.history.formats import (
    detect_format,
    parse_edn,
    read_edn,
    read_history,
    read_jepsen_log,
    read_json_array,
    read_porcupine_kv,
)


def test_edn_values():
    forms = parse_edn(
        '; comment\n[1 -2 3.5 nil true :kw "s\\"q" {:a [1 2]} #{1} #_ 9 (x) #inst "t"]'
    )
    assert forms == [[1, -2, 3.5, None, True, "kw", 's"q', {"a": [1, 2]}, [1], ["x"], "t"]]


@pytest.mark.parametrize(
    "text,msg",
    [
        ("[1 2\n 3", "line 1: '\\[' is never closed"),
        ("[1]\n]", "line 2: unexpected '\\]'"),
        ("{:a}", "odd number"),
    ],
)
def test_edn_errors_name_the_line(text, msg):
    with pytest.raises(BadInput, match=msg):
        parse_edn(text)


def test_knossos_edn_ops_keep_file_order_and_extra_fields():
    h = read_edn(
        "[{:process 0, :type :invoke, :f :cas, :value [1 2], :time 99}\n"
        " {:process :nemesis, :type :info, :f :start}\n"
        " {:process 0, :type :fail, :f :cas, :value [1 2], :error :mismatch, :time 5}]"
    )
    assert [(o.index, o.time, o.process, o.type, o.f, o.value) for o in h] == [
        (0, 0, 0, "invoke", "cas", [1, 2]),
        (1, 1, "nemesis", "info", "start", None),
        (2, 2, 0, "fail", "cas", [1, 2]),
    ]
    assert h.ops[2].extra == {"error": "mismatch", "source_time": 5}


def test_edn_missing_field_is_bad_input():
    with pytest.raises(BadInput, match="line 2 \\(op 2\\): missing :type"):
        read_edn("[{:process 0, :type :invoke :f :read}\n {:process 0, :f :read}]")
    with pytest.raises(BadInput, match="op 1: missing :f"):
        read_json_array('[{"process": 0, "type": "ok"}]')


def test_jepsen_log_lines():
    text = (
        "INFO  jepsen.util - 0\t:invoke\t:cas\t[1 4]\n"
        "INFO  jepsen.core - Run complete, writing\n"
        "INFO  jepsen.util - 0\t:fail\t:read\t:timed-out\n"
        "INFO  jepsen.util - 12\t:ok\t:read\tnil\n"
    )
    h = read_jepsen_log(text)
    assert [(o.process, o.type, o.f, o.value) for o in h] == [
        (0, "invoke", "cas", [1, 4]),
        (0, "fail", "read", "timed-out"),
        (12, "ok", "read", None),
    ]
    assert h.lines == [1, 3, 4]
    with pytest.raises(BadInput, match="line 2: unknown type :bogus"):
        read_jepsen_log("\nINFO jepsen.util - 1 :bogus :read nil\n")


def test_jepsen_log_skips_other_log_lines_and_rejects_junk():
    ok = (
        "2017-03-17 01:43:54,146 INFO jepsen.core - starting\n"
        "WARN  jepsen.db - retrying\n"
        "java.net.SocketTimeoutException: Read timed out\n"
        "\tat clojure.core$eval.invoke(core.clj:1)\n"
        "Caused by: java.io.IOException\n"
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
    )
    assert len(read_jepsen_log(ok)) == 1
    with pytest.raises(BadInput, match="line 1: not a Jepsen log line"):
        read_jepsen_log("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(BadInput, match="no 'jepsen.util"):
        read_jepsen_log("INFO  jepsen.core - nothing else\n")
    assert len(read_jepsen_log("")) == 0  # empty: the checkers say unknown


def test_porcupine_kv_lines():
    h = read_porcupine_kv(
        '{:process 9, :type :invoke, :f :append, :key "0", :value "x 9 0 y"}\n'
        '{:process 9, :type :ok, :f :get, :key "1", :value nil}\n'
    )
    assert [(o.process, o.f, o.key, o.value) for o in h] == [
        (9, "append", "0", "x 9 0 y"),
        (9, "get", "1", None),
    ]
    with pytest.raises(BadInput, match="line 2: .*never closed"):
        read_porcupine_kv("{:process 1, :type :ok, :f :get}\n{:process 1\n")


def test_json_array_and_detection(tmp_path):
    text = '[{"type":"invoke","f":"acquire","process":3,"time":5,"index":0}]'
    h = read_json_array(text)
    assert (h.ops[0].f, h.ops[0].process, h.ops[0].extra["source_time"]) == ("acquire", 3, 5)
    assert detect_format(text) == "json"
    assert detect_format('{"index": 0}\n') == "jsonl"
    assert detect_format("INFO jepsen.util - 1 :invoke :read nil") == "jepsen-log"
    assert detect_format("[{:process 1}]") == "edn"
    p = tmp_path / "h.json"
    p.write_text(text)
    assert read_history(p).ops[0].f == "acquire"
    with pytest.raises(BadInput, match="unknown format"):
        read_history(p, "yaml")


def test_jepsen_log_usual_lines_read_as_every_other_line():
    """The one-regex path for usual lines (formats._USUAL_LINE) gives the ops and line
    numbers that reading each line on its own gives, on random mixes of usual lines and
    near misses (spacing, leading zeros, other separators, other loggers' lines)."""
    pieces = [
        "INFO  jepsen.util - 3\t:ok\t:cas\t[1 4]", "INFO  jepsen.util - 0\t:invoke\t:write\t-0",
        "INFO  jepsen.util - 12\t:ok\t:read\tnil", "INFO  jepsen.util - 1\t:ok\t:read\t007",
        "INFO  jepsen.util - 1 :ok :read 5", "INFO  jepsen.util - 2\t:info\t:write\t:timed-out",
        "INFO  jepsen.util - 2\t:info\t:write\t:timed-outx",
        "INFO  jepsen.util - :nemesis\t:info\t:start\tnil",
        "INFO  jepsen.util - 4\t:ok\t:cas\t[1  4]",
        "INFO  jepsen.util - 4\t:fail\t:cas\t[-1 20]", "INFO  jepsen.util - 5\t:ok\t:read\t3 ",
        "jj INFO  jepsen.util - 6\t:ok\t:read\t3", "INFO  jepsen.util - 7\t:ok\t:read\t3\r",
        "INFO  jepsen.util - 8\t:ok\t:read\t3\x85INFO  jepsen.util - 9\t:ok\t:read\t4",
        "2017-01-01 INFO some.other - thing", "", "   at trace",
        "INFO  jepsen.util - 1\t:ok\t:w-x\t1",
    ]  # fmt: skip
    rng = random.Random("jepsen-usual")
    for _ in range(300):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))
        text += rng.choice(["", "\n", "\r\n"])
        ops: list = []
        lines: list = []
        for n, line in enumerate(text.splitlines(), 1):
            formats._other_line(line, n, "x", ops, lines, {})
        want = [(o.process, o.type, o.f, o.value) for o in ops]
        if not ops:
            continue
        got = read_jepsen_log(text)
        assert [(o.process, o.type, o.f, o.value) for o in got.ops] == want, text
        assert got.lines == lines, text
