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
then keeps it), those the last round's blocks have room for by real time first (`_Fit`).
readfrom.py decides again after each guess. A core with a guessed failed cas in it proves
nothing: restricted to the core, a linearization loses the write that failed cas really saw
(the guess may be wrong), so it may look stuck where the partition is not; one without is
made of the history's own facts and refutes (the search confirms it, with each failed cas as
it is). Otherwise one guess of the core moves on to its next value: the one moved least, the
earliest guessed of those (moving them all at once dropped right guesses with the wrong).
(Until 2026-11-26 the path gave up at the first such failed cas, about one per 150 k ops in
5-client histories with crashes: every long valid history fell to the search and ended
unknown; issue 39. Until the guesses were ranked by `_Fit` and moved on one at a time, those
whose crashed ops are all cas and reads still did: benchmarks/crash_cliff.py's "-nocw".)"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from itertools import accumulate, repeat
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
    next_w = [m] * (m + 1)  # next_w[g]: position of the first write at or after g
    last, prev = facts.init, 0
    for g, w in enumerate([wv[i] for i in seq]):
        if w is not NO:
            last = w
            next_w[prev : g + 1] = repeat(g, g + 1 - prev)  # (the gaps since the last write)
            prev = g + 1
        value.append(last)
    inserts: list[tuple[int, int, Any, int]] = []
    # In call order, each no earlier than those that returned before it was called (so the
    # failed cas keep their real-time order among themselves too).
    starts, ends = facts.starts, facts.ends
    returned: list[tuple[Any, int]] = []  # (end, gap) of those placed, a heap
    floor = 0
    unplaced: list[int] = []
    after, end_keys, before, start_keys = win.after, win.end_keys, win.before, win.start_keys
    for r in sorted(facts.nots, key=starts.__getitem__):
        while returned and returned[0][0] < starts[r]:
            floor = max(floor, heappop(returned)[1])
        old = facts.ops[r][1][1]  # (its action's argument)
        # (win.earliest and win.latest inlined: this runs once per failed cas)
        a = max(floor, after[bisect_left(end_keys, starts[r])])
        b = before[bisect_right(start_keys, ends[r])]
        g = a if value[a] != old else next_w[a] + 1
        if g in win.used and wv[win.used[g]] == old:  # a crashed write made it old here
            g = next_w[g] + 1
        if g > b:
            g = next_w[a]
            w = None
            if g <= b and (g == m or rv[seq[g]] is NO):
                w = win.spare(g, value[g], ends[r])
            if w is None:
                unplaced.append(r)
                continue
            if w >= 0:
                inserts.append((g, 0, -INF, w))
        inserts.append((g, 1, starts[r], r))
        heappush(returned, (ends[r], g))
    # At a gap given a crashed write, a failed cas that does not need it (its old is not the
    # value there) goes before it if called before the first that does, or if it returned
    # before the crashed write was called.
    need: dict[int, Any] = {}
    for g, one, start, r in inserts:
        if one and g in win.used and value[g] == facts.ops[r].action[1]:
            need[g] = min(need.get(g, INF), start)
    for k, (g, one, start, r) in enumerate(inserts):
        w = win.used.get(g)
        if one and w is not None and value[g] != facts.ops[r].action[1]:
            if start < need.get(g, INF) or ends[r] < starts[w]:
                inserts[k] = (g, -1, start, r)
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
        facts.tried[r] = facts.tried.get(r, 0) + 1
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
    fit = _Fit(facts)
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
        # Those the last round's blocks have room for first (a stable sort: likeliest first
        # within each kind): a guess the real-time bounds rule out only costs a round.
        values.sort(key=lambda v: fit.fits(v, r))
        out[r] = values[:CANDIDATES]
    return out


class _Fit:
    """Whether a failed cas r, made a read of u, fits the last round's blocks by real time
    alone (readfrom.py's _conflict on one epoch): u's epoch, with r's interval in it, must not
    end before an earlier epoch of its chain started nor start after a later one ended, and its
    block must not then make a two-cycle with another block. Only an order for guesses: a
    guess that fits may still conflict with another, one that does not is tried last.
    `fits` says 0 (fits), 1 (not judged) or 2 (does not fit)."""

    def __init__(self, facts: Any) -> None:
        self.facts = facts
        ef, es, self.bf, self.bs, chains = facts.bounds
        self.at: dict[int, tuple[int, Any, Any]] = {}  # epoch -> block, top before, low after
        self.top: list[Any] = []  # per block: the latest start of its ops
        for b, chain in enumerate(chains):
            low = INF
            after = []
            for e in reversed(chain):
                after.append(low)
                low = min(low, ef[e])
            top = -INF
            for e, lo in zip(chain, reversed(after), strict=True):
                self.at[e] = (b, top, lo)
                top = max(top, es[e])
            self.top.append(top)
        self.last = {chain[-1] for chain in chains}
        self.ef, self.es = ef, es
        self.order = sorted(range(len(self.bf)), key=self.bf.__getitem__)
        self.fs = [self.bf[b] for b in self.order]
        self.best: list[tuple[int, int]] = [(-1, -1)]  # two blocks of largest s, by f
        bs = self.bs
        for b in self.order:
            b1, b2 = self.best[-1]
            if b1 < 0 or bs[b] > bs[b1]:
                b1, b2 = b, b1
            elif b2 < 0 or bs[b] > bs[b2]:
                b2 = b
            self.best.append((b1, b2))

    def fits(self, u: Any, r: int) -> int:
        facts = self.facts
        start, end = facts.starts[r], facts.ends[r]
        e = facts.writer.get(u, facts.n)
        if facts.starts[e] > end:
            return 2
        start = max(start, facts.starts[e])
        where = self.at.get(e)
        if where is not None:
            b, top, low = where
            if end < top or start > low:
                return 2
            return self._alone(b, min(self.bf[b], end), max(self.bs[b], start))
        if facts.rv[e] is NO:  # a crashed blind write nobody read: a block of its own
            return self._alone(-1, end, start)
        # A crashed cas nobody read: its epoch would end the chain of the value it reads.
        v = facts.rv[e]
        w = facts.writer.get(v, facts.n if v == facts.init else -1)
        if w not in self.at:
            return 1
        if w not in self.last:
            return 2  # (two cas would read one value)
        b = self.at[w][0]
        if end < self.top[b]:
            return 2
        return self._alone(b, min(self.bf[b], end), max(self.bs[b], start))

    def _alone(self, b: int, f: Any, s: Any) -> int:
        """Whether a block b with f and s makes no two-cycle with another block."""
        b1, b2 = self.best[bisect_left(self.fs, s)]
        y = b2 if b1 == b else b1
        return 0 if y < 0 or not self.bs[y] > f else 2


class _Windows:
    """Where in a linearization `seq` an op may go by real time alone, and the crashed writes
    nothing read, to make gaps with."""

    def __init__(self, facts: Any, seq: list[int]) -> None:
        starts, ends, m = facts.starts, facts.ends, len(seq)
        self.starts = starts
        # (C-level loops: sorts by a list's __getitem__, running max/min by accumulate; this
        # runs once per round over every kept op)
        at_end = [ends[i] for i in seq]
        by_end = sorted(range(m), key=at_end.__getitem__)
        self.end_keys = [at_end[p] for p in by_end]
        # after[k]: 1 + the last position of the k ops ending first
        self.after = [0, *accumulate([p + 1 for p in by_end], max)]
        at_start = [starts[i] for i in seq]
        by_start = sorted(range(m), key=at_start.__getitem__)
        self.start_keys = [at_start[p] for p in by_start]
        # before[k]: the first position of the ops from the k-th start on
        before = [*accumulate(reversed(by_start), min, initial=m)]
        before.reverse()
        self.before = before
        kept = set(seq)
        spare = [i for i, e in enumerate(ends) if e == INF and i not in kept]  # crashed
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

    def spare(self, g: int, value: Any, end: Any) -> int | None:
        """A crashed write nothing read, called before `end`, that may go at gap g (where the
        register holds `value`): -1 if one is there already, None if none may."""
        if g in self.used:
            return -1 if self.starts[self.used[g]] < end else None
        for pool in (self.blind, self.cas.get(value, [])):  # each in call order
            if pool and self.starts[pool[0]] < end and self.earliest(self.starts[pool[0]]) <= g:
                self.used[g] = w = pool.pop(0)
                return w
        return None
