"""Freezing a container (`docker pause`), the way a pause fault needs it to happen.

The engine freezes a container through its cgroup freezer, and runc gives up when the cgroup
has not reached FROZEN after its own tries: "OCI runtime pause failed: unable to freeze". That
happens on a loaded machine while the container's threads are busy in the kernel (seen in the
suite at load 8-24 on a Go client), and it leaves the container running. The freeze is asked
again, a few times; a container that still will not freeze is an error of the run's
environment, raised as the engine said it.
"""

from __future__ import annotations

import time
from typing import Any

import docker.errors

TRIES = 5
BACKOFF_S = 0.2  # between tries: long enough for the busy threads to leave the kernel


def pause(container: Any) -> None:
    """`container.pause()`, asked again while the engine reports a failed freeze."""
    for attempt in range(TRIES):
        try:
            container.pause()
            return
        except docker.errors.APIError as e:
            if "unable to freeze" not in str(e) or attempt == TRIES - 1:
                raise
            time.sleep(BACKOFF_S * (attempt + 1))
