"""Imported at start-up by every Python program that a client clock fault runs under
libfaketime (client/main.py puts this folder first on the program's PYTHONPATH): the drivers,
and a user's `--client-cmd` program alike.

Why: Python gets the preload with `FAKETIME_DONT_FAKE_MONOTONIC=1` (its wall clock only:
nemesis/client_clock.py), and in that mode libfaketime 0.9.10 refuses the
`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` that Python 3.11's `time.sleep` makes:
every sleep raised `OSError: [Errno 22]`, so a lock that retries after a sleep (redis-setnx,
etcd3's tenacity) failed each contended acquire, before any fault, which is not the fault
under test. `select`'s timeout is untouched by the preload and is real time, as a sleep under
this fault should be (only the wall clock is faked). The sleep is replaced only where it is
broken, so a program whose sleep works keeps it.
"""

import select
import time
from typing import SupportsIndex


def _select_sleep(seconds: float | SupportsIndex) -> None:
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    select.select([], [], [], seconds)  # retried with the time left on EINTR (PEP 475)


try:
    time.sleep(0)
except OSError:
    time.sleep = _select_sleep
