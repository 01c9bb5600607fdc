"""What an in-process workload's client loop sees: the recording context (client/recorder.py)
plus its own session with the service and its recipe. The workloads reach the service only
through `session` (kazoo's client for ZooKeeper, a backends/session.py session otherwise) and,
for the lock-shaped ones, through the LockClient seam (client/lockclient.py).

This module runs inside the client containers, so it imports only the standard library and kazoo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkjepsen.client.recorder import RecordingContext
from zkjepsen.recipes import make_recipe


@dataclass(kw_only=True)
class ClientContext(RecordingContext):
    session: Any  # this client's own session, started (kazoo's KazooClient for ZooKeeper)
    hosts: str  # the connect string this client uses (recipes that open their own session)
    recipe: str  # registry name or "package.module:Name"

    def make_recipe(self, path: str, session: Any = None) -> Any:

        return make_recipe(
            self.recipe,
            session or self.session,
            path,
            hosts=self.hosts,
            identifier=f"client-{self.client}",
            params=self.params,
        )
