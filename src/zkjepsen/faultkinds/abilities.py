"""The abilities a service (and a run's clients) can have, that a fault kind may need: one name
each, and the reason a fault needing it exercises nothing where it is lacking. A service lists
its own in `BackendInfo.abilities` (its `backends/<service>/service.py`)."""

from __future__ import annotations

# What a service can do. Each: what a fault needing it exercises nothing without, the reason
# a refusal and an n/a cell give ("kill-leader does not apply to backend redlock: <reason>").
PEERS = "peers"  # several servers that replicate to each other
LEADER = "leader"  # one server leads (the others follow, or there are none)
SERVER_CLOCK = "server-clock"  # the servers' clocks can be skewed (libfaketime or zkj-timewarp)
ZK_WIRE = "zk-wire"  # speaks ZooKeeper's wire protocol (the clients' proxy understands it)
TERMINATE_SESSION = "terminate-session"  # the server can end one holder's session
INDEPENDENT_MASTERS = "independent-masters"  # Redlock's 5 masters, each on its own
# The disk faults' and the membership faults' needs; `server-process` for a fault to come.
DATA_FILES = "data-files"  # the servers say where their data lives
RECONFIGURE = "reconfigure"  # the membership can change while it runs
SERVER_PROCESS = "server-process"  # the servers say which process is the server
# The rolling faults' needs (nemesis/membership.py): a backend that restarts one server at a time
# on its own data, and a version with a next one to roll to (ZooKeeper 3.8, etcd 3.4).
RESTART_SERVERS = "restart-servers"
UPGRADE = "upgrade"

ABILITIES: dict[str, str] = {
    PEERS: "its servers do not talk to each other",
    LEADER: "it has no leader",
    SERVER_CLOCK: "its servers run under neither libfaketime nor zkj-timewarp",
    ZK_WIRE: "the wire proxy speaks ZooKeeper's protocol",
    TERMINATE_SESSION: "its server cannot end a holder's session (no PostgreSQL)",
    INDEPENDENT_MASTERS: "not Redlock's 5 masters",
    DATA_FILES: "its servers name no data files",
    RECONFIGURE: "its membership cannot change while it runs",
    SERVER_PROCESS: "its servers name no server process",
    RESTART_SERVERS: "its servers cannot be restarted one at a time on their own data",
    UPGRADE: "its version has no next version to roll to",
}

# What the run's clients can offer (run/resolve.py refuses a lack with the setting to change).
WIRE_PROXY = "wire-proxy"  # every client talks to the servers through its own wire proxy
CLIENT_CLOCK = "client-clock"  # a program of its own (libfaketime or zkj-timewarp): not in-process
CLIENT_ABILITIES = (WIRE_PROXY, CLIENT_CLOCK)
# Why a run's clients lack one, unless the run says more precisely (RunFacts.why_not).
CLIENT_LACKS: dict[str, str] = {
    WIRE_PROXY: "its clients talk to the servers directly (set proxy = true in the test spec "
    "for the clients' wire proxy)",
    CLIENT_CLOCK: "it skews the program under test, never the recorder, and these clients run "
    "in-process (run the recipe through the wire protocol, not --client-mode in-process)",
}
