#!/usr/bin/env python3
"""BUG: the lock node is created PERSISTENT sequential (the `ephemeral=True` forgotten). A
holder that dies or is killed leaves its node first in line forever: nobody is granted again."""

from zk_base import run
from zk_seqlock import SeqLock


class PersistentNodeLock(SeqLock):
    ephemeral = False  # the bug


if __name__ == "__main__":
    run(PersistentNodeLock)
