"""The disk faults' declarations (family `disk`; implemented in nemesis/disk.py): a power loss
drops what the servers had not fsynced (the runs that ask for one boot their servers under the
power-loss layer, docker/powerfs.py), a corrupt file is one of the newest data files changed
while its server is down. Pure data: (name, default target, description, extra abilities, how
it is seen to land: a key of faultkinds/landing.py's OBSERVERS)."""

from __future__ import annotations

from zkjepsen.faultkinds.abilities import LEADER

POWER_LOSS = ("power-loss-one", "power-loss-majority", "power-loss-all", "power-loss-leader")
DISK_KINDS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    (
        "power-loss-one",
        "one",
        "power loss of one random server: what it had not fsynced is "
        "gone; it boots again at the end",
        (),
        "power-loss",
    ),
    (
        "power-loss-majority",
        "majority",
        "power loss of a majority of servers at once",
        (),
        "power-loss",
    ),
    (
        "power-loss-all",
        "all",
        "power loss of every server at once (a data centre's)",
        (),
        "power-loss",
    ),
    ("power-loss-leader", "leader", "power loss of the leader", (LEADER,), "power-loss"),
    (
        "torn-write",
        "one",
        "power loss of one server whose newest un-fsynced write survives in part (its first half)",
        (),
        "power-loss",
    ),
    (
        "corrupt-file",
        "one",
        "stop one server, flip bits in (or truncate: params mode=truncate) "
        "its newest log/WAL/snapshot/AOF, boot it at the end",
        (),
        "corrupted",
    ),
)
