#!/usr/bin/env python3
"""CORRECT: the careful lease lock of etcd_leaselock.py as it is (fenced run)."""

from etcd_base import run
from etcd_leaselock import LeaseLock

if __name__ == "__main__":
    run(LeaseLock)
