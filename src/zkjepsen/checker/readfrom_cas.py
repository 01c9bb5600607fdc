"""The read-from path's etcd failed cas (readfrom.py): a failed cas(old, new) reads "anything
but old", so it goes into the path's linearization wherever the register holds another value
during its call, or, failing that, where a crashed write nothing read can make one (see
`place_failed_cas`). The linearization is then replayed (readfrom.py): a wrong placement cannot
make a wrong verdict, only leave the partition to the search.

Guesses (`candidates`, `guess`). The linearization readfrom.py builds orders the blocks that
overlap in real time one way of many, knowing nothing of the failed cas; a failed cas may be
the one op that says which came first (two overlapping blind writes of a and b, then a failed
cas(b) called after b's write returned: b was written first). Such a one has no place in it.
But in any linearization a failed cas reads some value u other than old, and as a read of u
it would be placed exactly where it can be in that linearization: so a valid partition stays
valid with each failed cas made a read of the value it saw there, and with those reads the
read-from path (complete for reads) finds a linearization, replayed with the failed cas as it
is. The value is guessed: those just before and after old in the linearization, then those
written last before the failed cas returned (a crashed write nobody read included: the read
then keeps it). readfrom.py decides again after each guess; a conflict refutes only when the
search confirms its core (with the failed cas as it is), otherwise the guesses in its core (or
all) move on. (Until 2026-11-26 the path gave up at the first such failed cas, about one per
150 k ops in 5-client histories with crashes: every long valid history fell to the search and
ended unknown; issue 39.)"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from typing import Any

INF = float("inf")
NO: Any = object()  # "writes nothing" / "reads nothing" (None is a register value)
CANDIDATES = 8  # values tried per failed cas
SCAN = 32  # writers called last before a failed cas returned, among its candidates


def place_failed_cas(facts: Any, seq: list[int]) -> tuple[list[int], list[int]]:
    """`seq` with each failed cas(old, ...) placed where the value is not old: at the first
    such gap after every op that ended before it started (and before every op that starts
    after it ended). Where the value is old throughout, a crashed write nothing read may make
    a gap: placed at the end of that epoch (just before a blind write, or at the end), it
    changes what only the failed cas sees. Returns the linearization and the failed cas that
    neither places in this one (left out of it; readfrom.py then fixes what each reads)."""
    rv, wv, m = facts.rv, facts.wv, len(seq)
    win = _Windows(facts, seq)
    value = [facts.init]  # value[g]: the register's value at gap g (before seq[g])
    for i in seq:
        value.append(value[-1] if wv[i] is NO else wv[i])
    next_w = [m] * (m + 1)  # next_w[g]: position of the first write at or after g
    for g in range(m - 1, -1, -1):
        next_w[g] = g if wv[seq[g]] is not NO else next_w[g + 1]
    inserts: list[tuple[int, int, Any, int]] = []
    # In call order, each no earlier than those that returned before it was called (so the
    # failed cas keep their real-time order among themselves too).
    starts, ends = facts.starts, facts.ends
    returned: list[tuple[Any, int]] = []  # (end, gap) of those placed, a heap
    floor = 0
    unplaced: list[int] = []
    for r in sorted(facts.nots, key=starts.__getitem__):
        while returned and returned[0][0] < starts[r]:
            floor = max(floor, heappop(returned)[1])
        old = facts.ops[r].action[1]
        a, b = max(floor, win.earliest(starts[r])), win.latest(ends[r])
        g = a if value[a] != old else next_w[a] + 1
        if g > b:
            g = next_w[a]
            w = None if g > b or (g < m and rv[seq[g]] is not NO) else win.spare(g, value[g])
            if w is None:
                unplaced.append(r)
                continue
            if w >= 0:
                inserts.append((g, 0, -INF, w))
        inserts.append((g, 1, starts[r], r))
        heappush(returned, (ends[r], g))
    inserts.sort()
    out: list[int] = []
    k = 0
    for g, *_, r in inserts:
        out.extend(seq[k:g])
        k = g
        out.append(r)
    out.extend(seq[k:])
    return out, unplaced


def guess(facts: Any, guesses: dict[int, list[Any]], which: list[int]) -> bool:
    """Each failed cas in `which` reads its next candidate value; False when one has none."""
    for r in which:
        left = guesses[r]
        if not left:
            return False
        facts.rv[r] = left.pop(0)
    gone = set(which)
    facts.nots = [r for r in facts.nots if r not in gone]
    return True


def candidates(facts: Any, seq: list[int], unplaced: list[int]) -> dict[int, list[Any]]:
    """Per failed cas the linearization `seq` has no place for, the values it may have read,
    likeliest first: those just before and just after its `old` in `seq`, then those written
    by the ops called last before it returned, latest ending first."""
    wv, ends, starts = facts.wv, facts.ends, facts.starts
    if not facts.by_start:
        facts.by_start = sorted(
            (i for i in range(facts.n) if wv[i] is not NO), key=starts.__getitem__
        )
    by_start = facts.by_start
    keys = [starts[i] for i in by_start]
    pos = {i: k for k, i in enumerate(seq)}
    out: dict[int, list[Any]] = {}
    for r in unplaced:
        old = facts.ops[r].action[1]
        near: list[Any] = []
        p = pos.get(facts.writer.get(old, -1))
        if p is not None:
            back = next((seq[k] for k in range(p - 1, -1, -1) if wv[seq[k]] is not NO), None)
            near.append(facts.init if back is None else wv[back])
            ahead = next((seq[k] for k in range(p + 1, len(seq)) if wv[seq[k]] is not NO), None)
            if ahead is not None:
                near.append(wv[ahead])
        k = bisect_right(keys, ends[r])
        recent = sorted(by_start[max(0, k - SCAN) : k], key=lambda i: -min(ends[i], ends[r]))
        near.extend(wv[i] for i in recent)
        near.append(facts.init)
        values: list[Any] = []
        for v in near:
            if v != old and v not in values and (v == facts.init or v in facts.writer):
                values.append(v)
        out[r] = values[:CANDIDATES]
    return out


class _Windows:
    """Where in a linearization `seq` an op may go by real time alone, and the crashed writes
    nothing read, to make gaps with."""

    def __init__(self, facts: Any, seq: list[int]) -> None:
        starts, ends, m = facts.starts, facts.ends, len(seq)
        self.starts = starts
        by_end = sorted(range(m), key=lambda p: ends[seq[p]])
        self.end_keys = [ends[seq[p]] for p in by_end]
        self.after = after = [0]  # after[k]: 1 + the last position of the k ops ending first
        for p in by_end:
            after.append(max(after[-1], p + 1))
        by_start = sorted(range(m), key=lambda p: starts[seq[p]])
        self.start_keys = [starts[seq[p]] for p in by_start]
        before = [m]  # before[k]: the first position of the ops from the k-th start on
        for p in reversed(by_start):
            before.append(min(before[-1], p))
        before.reverse()
        self.before = before
        kept = set(seq)
        spare = [i for i, op in enumerate(facts.ops) if op.end is None and i not in kept]
        spare.sort(key=starts.__getitem__)
        self.blind = [i for i in spare if facts.rv[i] is NO and facts.wv[i] is not NO]
        self.cas: dict[Any, list[int]] = {}
        for i in spare:
            if facts.rv[i] is not NO and facts.wv[i] is not NO:
                self.cas.setdefault(facts.rv[i], []).append(i)
        self.used: dict[int, int] = {}

    def earliest(self, start: Any) -> int:
        """The first gap after every op that ended before `start`."""
        return self.after[bisect_left(self.end_keys, start)]

    def latest(self, end: Any) -> int:
        """The last gap before every op that starts after `end`."""
        return self.before[bisect_right(self.start_keys, end)]

    def spare(self, g: int, value: Any) -> int | None:
        """A crashed write nothing read that may go at gap g (where the register holds
        `value`): -1 if one is there already, None if none may."""
        if g in self.used:
            return -1
        for pool in (self.blind, self.cas.get(value, [])):  # each in call order
            if pool and self.earliest(self.starts[pool[0]]) <= g:
                self.used[g] = w = pool.pop(0)
                return w
        return None
