"""Catalogue scenarios for disk faults (issue 34): a power loss of every ZooKeeper server, with
and without forceSync, when a client acquires after 4 s and its increment is acknowledged
(nemesis/disk.py, the power-loss layer of docker/powerfs.py). docs/findings.md ("Power loss")
has the runs behind them."""

from __future__ import annotations

from typing import Any

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.reproduce.scenario import Scenario
from zkjepsen.reproduce.scenario import expect as _x

POWER_LOSS_ON_ACQUIRE = steps(
    sleep(4), on(on_acquire(retries=10), fault("power-loss-all", duration=8.0))
)


def counter_settings(fsync: str, **service: Any) -> dict[str, Any]:
    """A counter under power-loss-all; `service`: the settings table's other fields (its
    name: ZooKeeper's unless given)."""
    return {
        "workload": "counter",
        "nemesis": ["power-loss-all"],
        "time_limit_s": 30.0,
        "session_timeout_s": 4.0,
        "service": {"name": "zookeeper", **service, "fsync": fsync},
    }


DISK = [
    Scenario(
        "power-loss-relaxed",
        "every ZooKeeper server loses power; forceSync=no acked what it had not fsynced",
        "With forceSync=no a server acks a txn once it is written, not fsynced: a power loss "
        "of every server, right after the acquirer's increment was acknowledged, takes the "
        "txns since the last fsync from all of them, and the ensemble comes back with an "
        "older counter (acknowledged increments lost).",
        counter_settings("relaxed"),
        {"kazoo-careful": _x(("counter:lost",))},
        source="ZooKeeper's forceSync; Jepsen's LazyFS power-loss faults (NATS 2.12.1, 2025)",
        schedule=POWER_LOSS_ON_ACQUIRE,
    ),
    Scenario(
        "power-loss-strict",
        "every ZooKeeper server loses power with forceSync=yes (ZooKeeper's default)",
        "Each txn is fsynced before its ack: a power loss of every server, when a client "
        "acquires, drops what was written and not yet fsynced (its lost_bytes) "
        "but nothing acknowledged: the counter never goes back.",
        counter_settings("strict"),
        {"kazoo-careful": _x(absent=("counter:lost",))},
        source="ZooKeeper's forceSync; Jepsen's LazyFS power-loss faults (NATS 2.12.1, 2025)",
        schedule=POWER_LOSS_ON_ACQUIRE,
    ),
]
