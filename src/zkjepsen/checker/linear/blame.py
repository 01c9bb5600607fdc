"""The op a linearizability refutation blames: the one op whose removal makes the refuted
partition linearizable, where there is one (docs/checker.md, "Which op is named").

The search's counterexample names the op that cannot follow its longest linearizable prefix,
and which op that is depends on the order the search happened to try: in a conflict between a
stale read and a correct read of the newer value, it may be either. A user debugs the op
named, so the verdict names the op that alone breaks linearizability where one does:

- Candidates. An op whose removal makes the partition linearizable belongs to every subset of
  it that is not linearizable, the counterexample's ops included. For a refutation by the
  read-from path those are its core (a few ops): the complete list of candidates, each tried
  with one O(n log n) decision. Crashed ops are never candidates (each is optional already:
  removing one cannot help). A refutation by the sweep or the search (values written more
  than once) has the whole partition as its counterexample, and a try there is a check of
  the partition that may need the search: it names the op that cannot be placed, as before
  (trying even the last few ops of the prefix cost 10-20 % on Porcupine's invalid histories).
- Order. Ops that change nothing (reads, etcd's failed cas) before the others, as a wrong
  observation is the likeliest bug and a read is what a client acts on; then the op that
  returned last (of a stale read and the write it missed, the read returned after the write).
  The first candidate whose removal leaves the partition linearizable is named.
- Deciding "linearizable without it" uses the read-from path, certified as in a check: a
  removal it cannot decide does not explain. Where no candidate explains (two independent
  stale reads, say), the op that cannot be placed after the longest prefix is named.
"""

from __future__ import annotations

import time
from typing import Any

from zkjepsen.checker.linear.pinned import pinned_by, unpinned
from zkjepsen.checker.linear.readfrom import decide as from_reads
from zkjepsen.checker.linear.wgl import LinOp, Outcome, is_pinned


def candidates(out: Outcome, part: list[LinOp] | None = None) -> list[LinOp]:
    """The core's completed ops, in the order they are tried; with the partition, also the
    reads that pinned a crashed write of the core (pinned.py: a pinned write is crashed, so
    no candidate, but the read that pinned it may be the op to blame)."""
    picked = [op for op in out.ops if op.end is not None and not is_pinned(op)]
    if part is not None:
        picked += pinned_by([op for op in out.ops if is_pinned(op)], part)
    picked.sort(key=lambda op: (not op.action[2], -(op.end or 0)))  # (all completed)
    return picked


def blame(part: list[LinOp], out: Outcome, model: Any, deadline: float | None) -> LinOp | None:
    """The first of the core's ops whose removal makes `part` linearizable, or None (none does,
    as far as the read-from path decides, or the deadline passed)."""
    for op in candidates(out, part):
        if deadline is not None and time.monotonic() > deadline:
            return None
        rest = unpinned([o for o in part if o is not op])  # (op may be what pinned one)
        fast = from_reads(rest, model.init())
        if fast is not None and fast[0]:
            return op
    return None
