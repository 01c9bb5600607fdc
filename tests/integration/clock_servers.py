"""What the server-clock integration tests share: a service's servers started the way a run
with a server clock fault planned starts them, and the nemesis's end record of one fault."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from zkjepsen.backends.registry import backend_info, make_backend
from zkjepsen.docker import resources


def end_record(node: str, detail: dict) -> dict:
    """The end record the nemesis writes for a fault on `node`, as `landing` reads it."""
    return {"fault_id": 1, "phase": "end", "targets": [node], "detail": detail}


def under_clock_faults(backend: str, docker_client, server_image: str, client_image: str,
                       tmp_path) -> Any:  # fmt: skip
    """`backend`'s servers (not started: a context manager) with its declared node count, under
    zkj-timewarp or libfaketime as a run with a server clock fault planned has them."""
    info = backend_info(backend)
    servers = make_backend(
        backend,
        SimpleNamespace(nodes=info.nodes, tick_ms=500, params={}, service=None),
        tmp_path,
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=server_image,
        client_image=client_image,
    )
    servers.server_clock = True  # what run/resolve.py sets when a server clock fault is planned
    return servers
