"""The read-from path: registers (read, write, cas, and etcd's failed cas) whose written values
are unique, decided in polynomial time, valid or not, crashed writes included (FIFO queues with
unique values: readfrom_queue.py).

With every written value unique (checked here: no two writes or successful cas write the same
value, none writes the initial value), each read names the write it read from: the read-from
relation is given, and linearizability is a question about the order of the writes only
(Gibbons & Korach, "Testing shared memories", SIAM J. Comput. 1997, with the read mapping
given). The argument, in the terms the code uses:

- Epochs. In any linearization, the value v stays from its write until the next write: v's
  epoch is its writer followed by the ops that read v (reads of v, cas(v, v), and the read half
  of every cas(v, x)). A successful cas(v, x) is x's writer and reads v, so x's epoch comes
  right after v's. The initial value has an epoch with a virtual writer at time -inf.
- Crashed ops (`info`). A crashed write or cas whose value nothing kept reads drops out: in any
  linearization, the last write before each kept read is that read's own writer, so removing
  the unread write leaves every kept op legal (and a crashed op is optional anyway). One whose
  value a kept op reads must have happened: it is kept, with its end at +inf (it precedes no
  op in real time). Kept is a fixpoint from the completed ops: a kept crashed cas reads too.
- Blocks. A cas links two epochs; following the links from the initial value and from each
  blind write gives chains of epochs (blocks) that every linearization must place
  contiguously, in chain order. Two cas that read the same value, a read of a value nobody
  wrote, and a cas cycle that no write starts cannot be placed at all.
- Real time. Write f(X) for the earliest end of an op of X and s(X) for the latest start: some
  op of X precedes some op of Y in real time iff f(X) < s(Y). Inside a block that must never
  point backwards (an epoch's op ending before an earlier epoch's op started, or a read ending
  before its writer started). Between blocks, X must precede Y iff f(X) < s(Y); a cycle of
  such constraints implies one of two blocks (take the block of least f on the cycle and its
  predecessor), so the history is linearizable iff no two blocks X, Y have both f(X) < s(Y)
  and f(Y) < s(X). With none, ordering the blocks by (min(f, s), max(f, s)) respects every
  constraint (if f(X) < s(Y) and not f(Y) < s(X), X's key is the smaller), and so does each
  epoch's writer followed by its reads in call order: that is a linearization.
- etcd's failed cas(old, new) reads "anything but old". Dropping read-only ops keeps a
  linearizable history linearizable, so a refutation found without them stands. For a valid
  verdict each is placed where the linearization above holds another value during its
  interval (ops get the earliest linearization points their order allows).
- Guesses. That linearization is one of many: where blocks overlap in real time their order
  is free, and a failed cas may be the one op that says which came first. One it has no
  place for is made a read of a guessed value, and the partition decided again, ROUNDS times
  at most (readfrom_cas.py argues why that finds the valid ones).

Both answers are certified, so a flaw in this reasoning cannot turn into a wrong verdict. A
valid verdict comes with its linearization, replayed through the model's transitions and
checked against real time. A refutation comes with its core: the ops of the conflict, the
writers linking them, the writer of every value they read and, for a kept crashed op, the op
that read it. Those ops alone are not linearizable (the same conflict is there), and the search
confirms it on the core in a few steps; its longest prefix and stuck op are the counterexample.
The core stands for the whole partition because values are unique (checked over the whole
partition before anything is refuted): restrict any linearization of the partition to the
core's ops, and each read still follows its own writer, which is in the core, with no write
between; so were the partition linearizable, its core would be too.
Where values repeat, an op is of another kind, a failed cas runs out of guesses, or a
certificate fails, the answer is None and the search decides.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress
from typing import Any

from zkjepsen.checker.linear import readfrom_queue as queue
from zkjepsen.checker.linear.model_base import ILLEGAL, cas_value, read_not, read_value, write_value
from zkjepsen.checker.linear.readfrom_cas import INF, NO, candidates, guess, place_failed_cas
from zkjepsen.checker.linear.wgl import Outcome, run

ROUNDS = 12  # decisions per partition, each after guessing what unplaced failed cas read
# Conflicts looked for per round: each with a guess in it moves that guess on, so one round
# fixes as many wrong guesses as the history has apart (one a round made a 1 M-op history
# need a round per ~70 k ops, ran out of rounds, and fell to the search: issue 54).
CORES = 16


class _Facts:
    """One partition's ops as read-from facts. Epochs are named by their writer's op index;
    the initial value's epoch is `n` (no op has that index)."""

    def __init__(self, ops: list[Any], init: Any) -> None:
        self.ops, self.init, self.n = ops, init, len(ops)
        self.rv: list[Any] = []  # value each op reads, or NO
        self.wv: list[Any] = []  # value each op writes, or NO
        self.starts: list[Any] = []
        self.ends: list[Any] = []  # +inf for crashed ops
        self.nots: list[int] = []  # etcd's failed cas: reads anything but `old`
        self.writer: dict[Any, int] = {}
        self.forced_by: dict[int, int] = {}  # kept crashed op -> the op that read its value
        self.reads: dict[int, list[int]] = {}  # epoch -> its pure reads
        self.block_keys: list[tuple[Any, Any]] = []  # per block: its place in a valid order
        self.bounds: tuple[Any, ...] = ()  # the last round's (ef, es, bf, bs, chains), for guesses
        self.tried: dict[int, int] = {}  # guessed failed cas -> values it was given
        self.by_start: list[int] = []  # the writers (kept or not) in call order, once needed

    def load(self) -> bool:
        """Classify every op; False when the path does not apply (a value written twice, or
        an op that is not a register's)."""
        rv, wv, writer, init = self.rv, self.wv, self.writer, self.init
        for i, (_, action, start, end) in enumerate(self.ops):
            fn, arg = action[0], action[1]
            r = w = NO
            if fn is read_value:
                r = arg
            elif fn is write_value:
                w = arg
            elif fn is cas_value:
                r = arg[0]
                if not action[2]:  # cas(v, v) only reads
                    w = arg[1]
            elif fn is read_not:
                self.nots.append(i)
            else:
                return False
            if w is not NO:
                if w == init or w in writer:
                    return False
                writer[w] = i
            rv.append(r)
            wv.append(w)
            self.starts.append(start)
            self.ends.append(INF if end is None else end)
        self.starts.append(-INF)  # the initial value's virtual writer, at index n
        self.ends.append(-INF)
        return True

    def epoch_read(self, i: int) -> int | None:
        """The epoch whose value op i reads (None: nobody wrote it)."""
        v = self.rv[i]
        w = self.writer.get(v)
        if w is not None:
            return w
        return self.n if v == self.init else None

    def closure(self, seed: set[int]) -> list[int]:
        """The core around `seed`: with the writer of every value read and, for each kept
        crashed op, the op that read it (which forces it), in op order."""
        core: set[int] = set()
        todo = list(seed)
        n = self.n
        while todo:
            i = todo.pop()
            if i == n or i in core:
                continue
            core.add(i)
            if self.rv[i] is not NO:
                w = self.writer.get(self.rv[i])
                if w is not None:
                    todo.append(w)
            if self.ops[i].end is None:
                todo.append(self.forced_by[i])
        return sorted(core)


def decide(ops: list[Any], init: Any) -> tuple[bool, Outcome] | None:
    """(verdict, outcome) for one partition's LinOps, or None: not this path's case (or a
    certificate failed), the search decides. A refutation's outcome is the search's on the
    core (its ops are the core's); a valid one's has an empty prefix, as the sweep's does."""
    if queue.applies(ops):
        return queue.decide(ops, init)
    facts = _Facts(ops, init)
    try:
        if not facts.load():
            return None
        return _rounds(facts)
    except TypeError:  # a value that does not hash: not this path's case
        return None


def _rounds(facts: _Facts) -> tuple[bool, Outcome] | None:
    """Decide, giving each failed cas the linearization cannot place a value to read (see
    "Guesses" in the module's docstring) and deciding again, for at most ROUNDS rounds."""
    guesses: dict[int, list[Any]] = {}  # guessed failed cas -> the values left to try
    for _ in range(ROUNDS):
        kept = _keep(facts)
        chains: list[list[int]] = []
        bads: list[set[int]] = [kept] if isinstance(kept, set) else []
        if not isinstance(kept, set):
            found = _chains(facts, kept)
            bads = [found] if isinstance(found, set) else _conflict(facts, found, kept)
            chains = [] if isinstance(found, set) else found
        if bads:
            # A core with a guess in it proves nothing (readfrom_cas.py): one guess of each
            # such core moves on; a core without one refutes.
            moved: list[int] = []
            for bad in bads:
                core = set(facts.closure(bad))
                wrong = [r for r in guesses if r in core]
                if not wrong:
                    return _refute(facts, bad)
                least = min(wrong, key=facts.tried.__getitem__)
                if least not in moved:
                    moved.append(least)
            if not guess(facts, guesses, moved):
                return None
            continue
        seq, unplaced = _certify(facts, chains)
        if not unplaced:
            if not _replay(facts, seq):
                return None
            return True, Outcome(True, facts.ops, [], [], None, len(facts.ops))
        guesses.update(candidates(facts, seq, unplaced))
        if not guess(facts, guesses, unplaced):
            return None
    return None


def _keep(facts: _Facts) -> list[int] | set[int]:
    """The kept ops (completed ones but etcd's failed cas, and crashed ones whose value a kept
    op reads), or a core: an op reading a value nobody wrote."""
    rv, nots = facts.rv, set(facts.nots)  # (ends[n]: the initial value's virtual writer)
    keep = [e != INF and i not in nots for i, e in enumerate(facts.ends[: facts.n])]
    stack = [i for i, k in enumerate(keep) if k and rv[i] is not NO]
    while stack:
        i = stack.pop()
        w = facts.epoch_read(i)
        if w is None:
            return {i}
        if w != facts.n and not keep[w]:
            keep[w] = True
            facts.forced_by[w] = i
            if rv[w] is not NO:
                stack.append(w)
    return list(compress(range(facts.n), keep))


def _chains(facts: _Facts, kept: list[int]) -> list[list[int]] | set[int]:
    """Blocks as lists of epochs in chain order (the initial value's first), or a core: two
    cas reading one value, or a cas cycle no write starts."""
    rv, wv, n = facts.rv, facts.wv, facts.n
    succ: dict[int, int] = {}
    heads = [n]
    for i in kept:
        if wv[i] is NO:
            continue
        if rv[i] is NO:
            heads.append(i)
            continue
        e = facts.epoch_read(i)
        assert e is not None  # (_keep checked every kept op's read)
        other = succ.get(e)
        if other is not None:
            return {other, i}
        succ[e] = i
    chains = []
    linked = 0
    for h in heads:
        chain = [h]
        e = succ.get(h)
        while e is not None:
            chain.append(e)
            e = succ.get(e)
        linked += len(chain) - 1
        chains.append(chain)
    if linked < len(succ):  # a cycle of cas: every value in it is written by a cas of it
        on_chain = {e for c in chains for e in c}
        start = next(e for e in succ.values() if e not in on_chain)
        cycle, e = {start}, succ.get(start)
        while e is not None and e not in cycle:
            cycle.add(e)
            e = succ.get(e)
        return cycle
    return chains


def _epochs(
    facts: _Facts, kept: list[int]
) -> tuple[list[Any], list[Any], list[int], list[int], dict[int, list[int]], list[set[int]]]:
    """Per epoch: earliest end and its op, latest start and its op, and its reads (pure
    readers, in call order). A read ending before its writer started is returned as the core
    instead, in the last slot."""
    n, ends, starts, wv, rv = facts.n, facts.ends, facts.starts, facts.wv, facts.rv
    writer = facts.writer
    ef: list[Any] = [INF] * (n + 1)
    es: list[Any] = [-INF] * (n + 1)
    efi, esi = [n] * (n + 1), [n] * (n + 1)
    ef[n] = es[n] = -INF
    reads: dict[int, list[int]] = {}
    for i in kept:
        if wv[i] is NO:
            e = writer.get(rv[i], n)  # (epoch_read inlined; _keep checked every kept read)
            if e != n and ends[i] < starts[e]:
                return ef, es, efi, esi, reads, [{e, i}]
            reads.setdefault(e, []).append(i)
        else:
            e = i
        if ends[i] < ef[e]:
            ef[e], efi[e] = ends[i], i
        if starts[i] > es[e]:
            es[e], esi[e] = starts[i], i
    return ef, es, efi, esi, reads, []


def _conflict(facts: _Facts, chains: list[list[int]], kept: list[int]) -> list[set[int]]:
    """Cores of real-time constraints no order of the blocks meets (CORES at most; none when
    the blocks can be ordered)."""
    ef, es, efi, esi, reads, bad = _epochs(facts, kept)
    if bad:
        return bad
    facts.reads = reads
    bf, bs = [], []  # per block: f and s
    cores: list[set[int]] = []
    for chain in chains:
        top = -INF
        lo = INF
        for k, e in enumerate(chain):
            if ef[e] < top:  # a later epoch's op ended before an earlier one's started
                j = k - 1
                while not es[chain[j]] > ef[e]:
                    j -= 1
                cores.append({efi[e], esi[chain[j]], *chain[j : k + 1]})
                break  # (one per chain: the next round sees the rest)
            top = max(top, es[e])
            lo = min(lo, ef[e])
        if len(cores) >= CORES:
            return cores
        bf.append(lo)
        bs.append(top)
    if cores:
        return cores
    facts.block_keys = [(min(f, s), max(f, s)) for f, s in zip(bf, bs, strict=True)]
    facts.bounds = (ef, es, bf, bs, chains)
    return [_narrow(facts, chains, pair, bf, bs) for pair in _two_cycles(bf, bs, CORES)]


def _two_cycles(bf: list[Any], bs: list[Any], most: int) -> list[tuple[int, int]]:
    """Pairs of blocks X, Y with f(X) < s(Y) and f(Y) < s(X), `most` of them at most, each
    block in one pair at most."""
    order = sorted(range(len(bf)), key=bf.__getitem__)
    fs = [bf[b] for b in order]
    # best1[k], best2[k]: the two blocks of largest s among order[:k]
    best1: list[int] = [-1]
    best2: list[int] = [-1]
    for b in order:
        b1, b2 = best1[-1], best2[-1]
        if b1 < 0 or bs[b] > bs[b1]:
            b1, b2 = b, b1
        elif b2 < 0 or bs[b] > bs[b2]:
            b2 = b
        best1.append(b1)
        best2.append(b2)
    pairs: list[tuple[int, int]] = []
    paired: set[int] = set()
    for x in range(len(bf)):
        k = bisect_left(fs, bs[x])  # blocks with f < s(x)
        y = best1[k]
        if y == x:
            y = best2[k]
        if y >= 0 and bs[y] > bf[x] and x not in paired and y not in paired:
            pairs.append((x, y))
            paired.update((x, y))
            if len(pairs) >= most:
                break
    return pairs


def _narrow(
    facts: _Facts, chains: list[list[int]], pair: tuple[int, int], bf: list[Any], bs: list[Any]
) -> set[int]:
    """The two blocks' conflict on as few epochs as can be: x in X ends before y in Y starts
    and x' in Y ends before y' in X starts, each pair as close in its chain as can be."""
    p, q = pair
    starts, ends = facts.starts, facts.ends
    x, y1, seg_p = _segment(
        facts, chains[p], lambda i: ends[i] < bs[q], lambda i: starts[i] > bf[q]
    )
    x1, y, seg_q = _segment(
        facts, chains[q], lambda i: ends[i] < starts[y1], lambda i: starts[i] > ends[x]
    )
    return {x, y1, x1, y, *seg_p, *seg_q}


def _segment(facts: _Facts, chain: list[int], x_ok: Any, y_ok: Any) -> tuple[int, int, list[int]]:
    """Ops x (x_ok) and y (y_ok) of the chain's epochs, as few epochs apart as can be, and the
    epochs from one to the other."""
    reads = facts.reads
    best: tuple[int, int, int, int, int] | None = None
    last_x = last_y = None
    for k, e in enumerate(chain):
        mine = [e, *reads.get(e, ())]  # (e == n: the initial value's virtual writer)
        xk = next((i for i in mine if x_ok(i)), None)
        yk = next((i for i in mine if y_ok(i)), None)
        if xk is not None:
            last_x = (k, xk)
        if yk is not None:
            last_y = (k, yk)
        if (xk is not None or yk is not None) and last_x and last_y:
            lo = min(last_x[0], last_y[0])
            if best is None or k - lo < best[0]:
                best = (k - lo, lo, k, last_x[1], last_y[1])
    assert best is not None  # (the blocks' extremes are such ops)
    _, lo, hi, x, y = best
    return x, y, chain[lo : hi + 1]


def _refute(facts: _Facts, seed: set[int]) -> tuple[bool, Outcome] | None:
    """The search's outcome on the core around `seed`; None if the core is linearizable after
    all (then this path's reasoning was wrong here, and the search decides the partition)."""
    core = [facts.ops[i] for i in facts.closure(seed)]
    out = run(core, facts.init)
    return None if out.valid else (False, out)


def _certify(facts: _Facts, chains: list[list[int]]) -> tuple[list[int], list[int]]:
    """Build the linearization the docstring describes and place the failed cas ops in it:
    the linearization, and the failed cas it has no place for (the caller replays it)."""
    keys, reads = facts.block_keys, facts.reads
    starts, n = facts.starts, facts.n
    seq: list[int] = []
    for b in sorted(range(len(chains)), key=keys.__getitem__):
        for e in chains[b]:
            if e != n:
                seq.append(e)
            r = reads.get(e)
            if r:
                r.sort(key=starts.__getitem__)
                seq.extend(r)
    if not facts.nots:
        return seq, []
    return place_failed_cas(facts, seq)


def _replay(facts: _Facts, seq: list[int]) -> bool:
    """Whether `seq` is a linearization: every completed op exactly once, each legal where it
    stands, and no op ending before an op placed ahead of it started."""
    ops, starts, ends = facts.ops, facts.starts, facts.ends
    if len(set(seq)) != len(seq) or (  # twice, or not every completed op
        len(seq) - [ends[i] for i in seq].count(INF) != facts.n - ends.count(INF)
    ):
        return False
    s = facts.init
    for i in seq:
        action = ops[i][1]  # (LinOp.action by index: this runs once per op)
        s = action[0](s, action[1])
        if s is ILLEGAL:
            return False
    low = INF
    for i in reversed(seq):
        if starts[i] > low:
            return False
        if ends[i] < low:
            low = ends[i]
    return True
