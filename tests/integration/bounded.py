"""Waiting for something a test needs, without hanging and without timing it.

`until` polls a condition. Its bound only keeps a broken run from hanging the suite: it is set
several times above what the wait takes on a busy machine, and running out of it fails the test
as "never happened", not as "too slow". How long a wait takes is a benchmark's figure."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def until(
    condition: Callable[[], object], *, what: str, bound_s: float, poll_s: float = 0.5
) -> object:
    """condition()'s first true value; fails the test with `what` once `bound_s` has passed."""
    deadline = time.monotonic() + bound_s
    while not (value := condition()):
        if time.monotonic() >= deadline:
            pytest.fail(f"{what} (waited {bound_s:g} s, a bound against hanging)")
        time.sleep(poll_s)
    return value
