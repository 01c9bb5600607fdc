"""Synthetic histories for the checker benchmark: a long valid CAS-register history and a long
lock history, in memory or written to a file another checker can read.

    .venv/bin/python benchmarks/histories.py cas 100000 /tmp/cas100k.log   # a Jepsen log
    .venv/bin/python benchmarks/histories.py lock 1000000 /tmp/lock1m.jsonl
"""

from __future__ import annotations

import json
import random
import sys

from zkjepsen.history import History, Op


def call_spans(n: int, clients: int, rng: random.Random) -> list[tuple[float, int, int, int, int]]:
    """`n` calls by `clients` clients in turn, each called 1..9 after its client's previous
    returned and lasting 1..59: (linearization point, call, client, start, end)."""
    spans = []
    free = [0] * clients
    for k in range(n):
        c = k % clients
        start = free[c] + rng.randrange(1, 10)
        end = start + rng.randrange(1, 60)
        free[c] = end
        spans.append((rng.uniform(start, end), k, c, start, end))
    return spans


def cas_history(
    n: int, clients: int = 5, seed: int = 1, crash: float = 0.0, unique: bool = False
) -> History:
    """A valid history of `n` read/write/cas calls on one register by `clients` clients: each
    call gets a random interval and a linearization point inside it, and its outcome is what
    the register gives when the calls run in point order. A `crash` fraction of the writes and
    cas that took effect end `info` (the client then continues as a new process, as Jepsen's
    do). Values 0..4, nil at first: the etcd model's conventions; with `unique`, every write
    and cas writes a fresh number (a cas names the current value or one of 0..4)."""
    rng = random.Random(seed)
    spans = call_spans(n, clients, rng)
    reg = None
    outcome: list[tuple[str, object, object, str]] = [("", None, None, "")] * n
    for _, k, _, _, _ in sorted(spans):
        f = rng.choice(("read", "write", "cas"))
        if f == "read":
            outcome[k] = ("read", None, reg, "ok")
        elif f == "write":
            reg = n + k if unique else rng.randrange(5)
            outcome[k] = ("write", reg, reg, "ok")
        else:
            old, new = rng.randrange(5), n + k if unique else rng.randrange(5)
            if unique and reg is not None and rng.random() < 0.5:
                old = reg
            ok = reg == old
            reg = new if ok else reg
            outcome[k] = ("cas", [old, new], [old, new], "ok" if ok else "fail")
    events = []
    process = list(range(clients))
    for _, k, c, start, end in spans:
        f, arg, out, typ = outcome[k]
        p = process[c]
        if typ == "ok" and f != "read" and rng.random() < crash:
            typ, out = "info", arg
            process[c] += clients  # an info op retires its process
        events.append((start, 0, Op(0, start, p, "invoke", f, None, arg, c)))
        events.append((end, 1, Op(0, end, p, typ, f, None, out, c)))
    events.sort(key=lambda e: (e[0], e[1]))
    ops = [e[2] for e in events]
    for i, op in enumerate(ops):
        op.index = i
    return History(ops)


def _edn(v: object) -> str:
    if v is None:
        return "nil"
    if isinstance(v, list):
        return "[" + " ".join(_edn(x) for x in v) + "]"
    return str(v)


def write_jepsen_log(history: History, path: str) -> None:
    """The history as a Jepsen log (porcupine's etcd format): readable by `--format jepsen-log`
    and by Porcupine's own etcd parser."""
    with open(path, "w", encoding="utf-8") as fh:
        for op in history:
            value = ":timed-out" if op.type == "info" else _edn(op.value)
            fh.write(f"INFO  jepsen.util - {op.process}\t:{op.type}\t:{op.f}\t{value}\n")


def lock_history(records: int, clients: int = 10) -> list[Op]:
    """A lock history of `records` records: clients take turns at acquire, write, release
    (6 records a turn); every 1000th turn one client is 'paused' and overlaps the next."""
    ops: list[Op] = []
    t = 0
    token = 0
    turn = 0
    while len(ops) < records:
        c = turn % clients
        token += 1
        late = 5 if turn % 1000 == 999 else 0  # a split holder now and then
        grant = {"token": token, "seq": token, "node": f"/l/n{token}"}
        for typ, f, val, dt in (
            ("invoke", "acquire", None, 1),
            ("ok", "acquire", grant, 1),
            ("invoke", "write", {"token": token}, 1 + late),
            ("ok", "write", None, 1),
            ("invoke", "release", None, 1),
            ("ok", "release", None, 1),
        ):
            ops.append(Op(len(ops), t, c, typ, f, "/l" if f != "write" else "/r", val, c))
            t += dt
        if late:
            t -= late + 3
        turn += 1
    ops.sort(key=lambda o: o.time)
    ops = ops[:records]
    for i, op in enumerate(ops):
        op.index = i
    return ops


def write_jsonl(ops: list[Op], path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for op in ops:
            fh.write(json.dumps(op.to_dict(), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("cas", "lock") or not sys.argv[2].isdigit():
        sys.exit("usage: histories.py cas|lock N OUT   (a CAS Jepsen log or a lock JSONL history)")
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if kind == "cas":
        write_jepsen_log(cas_history(n), out)
    else:
        write_jsonl(lock_history(n), out)
