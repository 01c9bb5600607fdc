"""The op a linearizability refutation blames: the one op whose removal makes the refuted
partition linearizable, where there is one (docs/checker.md, "Which op is named").

The search's counterexample names the op that cannot follow its longest linearizable prefix,
and which op that is depends on the order the search happened to try: in a conflict between a
stale read and a correct read of the newer value, it may be either. A user debugs the op
named, so the verdict names the op that alone breaks linearizability where one does:

- Candidates. An op whose removal makes the partition linearizable belongs to every subset of
  it that is not linearizable, the counterexample's ops included: for a refutation by the
  read-from path that is its core (a few ops), which is then the complete list. For one by
  the sweep or the search the counterexample is the whole partition: the candidates are the
  op that cannot be placed and the last TAIL ops of the longest prefix. Crashed ops are never
  candidates (each is optional already: removing one cannot help).
- Order. Ops that change nothing (reads, etcd's failed cas) before the others, as a wrong
  observation is the likeliest bug and a read is what a client acts on; then the op that
  returned last (of a stale read and the write it missed, the read returned after the write).
  The first candidate whose removal leaves the partition linearizable is named.
- Deciding "linearizable without it" uses the fast paths only (the sweep, then the read-from
  path), each certified as in a check: a removal they cannot decide does not explain. Where
  no candidate explains (two independent stale reads, say), the op that cannot be placed
  after the longest prefix is named, as before.
"""

from __future__ import annotations

import time
from typing import Any

from zkjepsen.checker.readfrom import decide as from_reads
from zkjepsen.checker.sweep import decide
from zkjepsen.checker.wgl import LinOp, Outcome

TAIL = 8  # ops at the end of the longest prefix that are candidates, besides the stuck op


def candidates(out: Outcome, core: bool) -> list[LinOp]:
    """The completed ops that may alone break linearizability, in the order they are tried."""
    if core:
        ops = list(out.ops)
    else:
        ops = [out.ops[i] for i in out.best[-TAIL:]]
        if out.stuck is not None:
            ops.append(out.ops[out.stuck])
    seen: set[int] = set()
    picked = []
    for op in ops:
        if op.end is not None and id(op) not in seen:
            seen.add(id(op))
            picked.append(op)
    picked.sort(key=lambda op: (not op.action[2], -op.end))
    return picked


def blame(
    part: list[LinOp], out: Outcome, model: Any, core: bool, deadline: float | None
) -> LinOp | None:
    """The first candidate whose removal makes `part` linearizable, or None (none does, as far
    as the fast paths decide, or the deadline passed)."""
    for op in candidates(out, core):
        if deadline is not None and time.monotonic() > deadline:
            return None
        rest = [o for o in part if o is not op]
        if _linearizable(rest, model, deadline):
            return op
    return None


def _linearizable(ops: list[LinOp], model: Any, deadline: float | None) -> bool:
    verdict, _ = decide(ops, model.init(), deadline)
    if verdict is not None:
        return verdict
    fast = from_reads(ops, model.init())
    return fast is not None and fast[0]
