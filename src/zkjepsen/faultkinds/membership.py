"""The membership fault kinds' declarations (issue 35): each goes through the service's own
reconfiguration (ZooKeeper 3.5+ `reconfig`, etcd `member add/remove`) and ends with the
cluster back at the run's size. Pure data, read by `faultkinds/__init__.py`: (name, default
target, description)."""

from __future__ import annotations

from zkjepsen.faultkinds.abilities import RESTART_SERVERS, UPGRADE

MEMBERSHIP = (
    (
        "member-remove",
        "one",
        "remove one follower (target leader: the leader) from the membership; its end adds a "
        "fresh server (empty data directory) back to the run's size",
    ),
    (
        "member-remove-leader",
        "leader",
        "member-remove aimed at the leader (a name of its own, so that a matrix column or a "
        "nemesis list can combine it with faults aimed elsewhere, e.g. pause-client)",
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

# One server at a time, each step waiting for every server to serve and one to lead: (name,
# default target, description, what it needs besides peers and a leader).
ROLLING: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "rolling-restart",
        "all",
        "restart every server in turn (followers first, the leader last) on its own data",
        (RESTART_SERVERS,),
    ),
    (
        "rolling-upgrade",
        "all",
        "restart every server in turn on the next version's image (ZooKeeper 3.8 -> 3.9, etcd "
        "3.4 -> 3.5), followers first, the leader last; it stays upgraded",
        (RESTART_SERVERS, UPGRADE),
    ),
)
