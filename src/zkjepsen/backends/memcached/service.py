"""memcached as a lock service: one server, no settings of its own (backends/plugin.py).

memcached keeps everything in memory and writes nothing to disk, so its backend declares no
data files: the disk faults (power loss, a torn or corrupt file) are refused for it by the
faults' one predicate over the declared abilities (faultkinds), as for any service lacking
DATA_FILES. A killed server comes back empty: every lock and the token counter are gone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, NoSettings, Service
from zkjepsen.faultkinds.abilities import LEADER


@dataclass(frozen=True)
class MemcachedSettings(NoSettings):
    name = "memcached"


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.memcached.cluster import memcached_image

    return memcached_image()


SERVICE = Service(
    name="memcached",
    label="memcached",
    settings=MemcachedSettings,
    backends=(
        BackendInfo(
            "memcached",
            "memcached",
            "one memcached 1.6 server (Debian bookworm; memory only: no persistence, so no "
            "disk faults)",
            "zkjepsen.backends.memcached.cluster:memcached_backend",
            nodes=1,
            ready_timeout_s=30.0,
            service="memcached 1.6",
            # One server (it leads, as Redis's one master does); no clock faults on it (its
            # expiry clock is not under libfaketime or zkj-timewarp here); no data files.
            abilities=frozenset({LEADER}),
        ),
    ),
    server_recipe=_server_recipe,
)
