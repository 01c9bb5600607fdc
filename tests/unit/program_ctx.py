"""A client's context for the wire protocol's tests: its recorder writing `path`, no session,
a deadline `seconds` away and its own stop event (client/program_client.py takes it)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from zkjepsen.client.recorder import Recorder
from zkjepsen.workloads.context import ClientContext


def program_ctx(
    path: Path, nclients: int = 3, params: dict | None = None, seconds: float = 60.0
) -> tuple[ClientContext, Recorder]:
    rec = Recorder(str(path), time.monotonic_ns(), 1, nclients)
    ctx = ClientContext(
        client=1,
        nclients=nclients,
        session=None,
        hosts="",
        recipe="fake",
        params=params if params is not None else {},
        recorder=rec,
        deadline=time.monotonic() + seconds,
        rng=random.Random(1),
        stop_event=threading.Event(),
    )
    return ctx, rec
