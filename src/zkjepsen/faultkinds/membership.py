"""The membership fault kinds' declarations (issue 35): each goes through the service's own
reconfiguration (ZooKeeper 3.5+ `reconfig`, etcd `member add/remove`) and ends with the
cluster back at the run's size. Pure data, read by `faultkinds/__init__.py`: (name, default
target, description)."""

from __future__ import annotations

MEMBERSHIP = (
    (
        "member-remove",
        "one",
        "remove one follower (target leader: the leader) from the membership; its end adds a "
        "fresh server (empty data directory) back to the run's size",
    ),
    (
        "member-add",
        "all",
        "add a fresh server (empty data directory) to the membership; its end removes it again",
    ),
    (
        "member-replace",
        "one",
        "replace one follower (target leader: the leader): remove it, add a fresh server "
        "(empty data directory) in its place",
    ),
)
