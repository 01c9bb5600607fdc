#!/usr/bin/env python3
"""BUG: the children are sorted by their whole name, not by their sequence suffix. The
names start with a random guid (to find our node after a lost create reply), so a node
created later can sort first: a newcomer believes it holds while the holder still does."""

from zk_base import run
from zk_seqlock import MARK, SeqLock


class SortByNameLock(SeqLock):
    def order(self, children):
        return sorted(c for c in children if MARK in c)  # the bug: name order, not sequence


if __name__ == "__main__":
    run(SortByNameLock)
