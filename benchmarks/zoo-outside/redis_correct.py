#!/usr/bin/env python3
"""CORRECT: the careful renewed SET NX PX lock of redis_renewlock.py as it is (unfenced run:
a frozen holder still splits with the next one, which is a lease's nature)."""

from redis_base import run
from redis_renewlock import RenewLock

if __name__ == "__main__":
    run(RenewLock)
