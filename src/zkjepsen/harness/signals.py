"""Signals during a run: SIGTERM/SIGHUP become an exception so `finally` blocks tear down, and
teardown itself runs with signals held back."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM/SIGHUP so `finally` blocks tear everything down."""


@contextmanager
def teardown_on_signals() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into an exception (Ctrl-C already is one) for the duration."""

    def raise_terminated(signum, frame):
        raise Terminated(f"received signal {signum}")

    old = {s: signal.signal(s, raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Block SIGINT/SIGTERM while tearing down so a second Ctrl-C cannot leave things behind."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
