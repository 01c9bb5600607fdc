#!/usr/bin/env python3
"""CORRECT: the careful sequential-ephemeral lock of zk_seqlock.py as it is (fenced run)."""

from zk_base import run
from zk_seqlock import SeqLock

if __name__ == "__main__":
    run(SeqLock)
