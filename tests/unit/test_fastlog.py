"""The compiled Jepsen log reader (history/_fastlog.c) against the regular expression
(formats._read_by_regex): the same ops, fields and line numbers on random logs of usual lines
and near misses, and the same errors. It must also read an ordinary log's lines itself, or it
would be no fast path."""

from __future__ import annotations

import random
import shutil

import pytest

from zkjepsen.errors import BadInput
from zkjepsen.history import formats
from zkjepsen.history.formats import read_jepsen_log

if formats._scan_log is None:  # noqa: SLF001 - whether the module was built
    if shutil.which("gcc"):
        pytest.fail("history/_fastlog.c is not built though gcc is here: run ./run test")
    pytest.skip("no C compiler: the Jepsen log reader is pure Python here", allow_module_level=True)

PIECES = [
    "INFO  jepsen.util - 3\t:ok\t:cas\t[1 4]", "INFO  jepsen.util - 0\t:invoke\t:write\t-0",
    "INFO  jepsen.util - 12\t:ok\t:read\tnil", "INFO  jepsen.util - 1\t:ok\t:read\t007",
    "INFO  jepsen.util - 007\t:ok\t:read\t7", "INFO  jepsen.util - 1 :ok :read 5",
    "INFO  jepsen.util - 2\t:info\t:write\t:timed-out",
    "INFO  jepsen.util - 2\t:info\t:write\t:timed-outx", "jepsen.util - 2\t:fail\t:read\tnil",
    "INFO  jepsen.util - :nemesis\t:info\t:start\tnil",
    "INFO  jepsen.util - 4\t:ok\t:cas\t[1  4]", "INFO  jepsen.util - 4\t:ok\t:cas\t[1 4] ",
    "INFO  jepsen.util - 4\t:fail\t:cas\t[-1 20]", "INFO  jepsen.util - 5\t:ok\t:read\t3 ",
    "jj INFO  jepsen.util - 6\t:ok\t:read\t3", "INFO  jepsen.util - 7\t:ok\t:read\t3\r",
    "INFO  jepsen.util - 8\t:ok\t:read\t3\x85INFO  jepsen.util - 9\t:ok\t:read\t4",
    "INFO\x1c jepsen.util - 8\t:ok\t:read\t3", "INFO\x0b jepsen.util - 8\t:ok\t:read\t3",
    "2017-01-01 INFO some.other - thing", "", "   at trace", "\tat trace",
    "INFO  jepsen.util - 1\t:ok\t:w-x\t1", "INFO  jepsen.util - 1\t:ok\t:w_X9\t1",
    "INFO  jepsen.util - 1\t:ok\t:é\t1", "é INFO  jepsen.util - 1\t:ok\t:read\t1",
    "INFO  jepsen.util - 1\t:ok\t:read\t123456789012345678901234567890",
    "INFO  jepsen.util - 1\t:ok\t:cas\t[-123456789012345678901 99999999999999999999]",
    "INFO  jepsen.util - 1234567890123456789012\t:ok\t:read\t1",
    "INFO  jepsen.util - 1\t:ok\t:read\t-", "INFO  jepsen.util - 1\t:ok\t:read\t[1 2",
    "INFO  jepsen.util - 1\t:ok\t:read\t[01 2]", "INFO  jepsen.util - 1\t:okay\t:read\t1",
    "INFO  jepsen.util - 1\t:ok\t:\t1", "INFO  jepsen.util - 1\t:ok\t:read\t",
    "INFO  jepsen.util - 1\t:ok\t:read",
]  # fmt: skip


def _fields(ops: list) -> list[tuple]:
    return [
        (o.index, o.time, o.process, o.type, o.f, o.key, o.value, o.client, o.extra) for o in ops
    ]


def _either(text: str, fast: bool) -> tuple:
    try:
        h = read_jepsen_log(text, "x", fast=fast)
    except BadInput as e:
        return ("bad", str(e))
    return _fields(h.ops), h.lines


def test_the_compiled_reader_reads_what_the_regular_expression_reads():
    rng = random.Random("fastlog")
    for _ in range(3000):
        text = "\n".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 12)))
        text += rng.choice(["", "\n", "\r\n", "\n\n"])
        assert _either(text, True) == _either(text, False), repr(text)


def test_an_ordinary_log_is_read_by_the_compiled_reader_alone():
    text = "".join(
        f"INFO  jepsen.util - {k % 5}\t:{t}\t:cas\t[{k} {k + 1}]\n"
        for k in range(1000)
        for t in ("invoke", "fail")
    )
    ops: list = []
    lines: list = []
    assert formats._scan_log(text, 0, 0, ops, lines, formats.Op) == (len(text), 2000)  # noqa: SLF001
    assert _fields(ops) == _fields(read_jepsen_log(text, fast=False).ops)
    assert lines == list(range(1, 2001))
