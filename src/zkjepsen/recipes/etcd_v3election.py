"""`etcd-v3election` and `etcd-v3election-nolease`: etcd's server-side election service
(`v3election`'s Campaign/Resign RPCs) through etcd's JSON gateway (`POST /v3/election/...`),
for the `election` workload (at most one leader).

Source: etcd `server/etcdserver/api/v3election/election.go` (3.5.16; 3.4.23 the same): every
RPC runs `concurrency.NewSession(c, WithLease(req.Lease))`, then `s.Orphan()`;
`Campaign` is `concurrency.NewElection(s, name).Campaign(ctx, value)` and answers with the
leader key (name, key, rev, lease); `Resign` resumes the election from that key and deletes it.

- `etcd-v3election`: the client's own lease (`lock_ttl_s`, default the session timeout), kept
  alive from a thread (recipes/etcd_v3lock.py `GatewayLease`). Expected flaw: a leader paused
  or cut off past its lease still believes it leads while another is elected.
- `etcd-v3election-nolease`: Campaign without a lease: the server's session has the default
  60 s TTL and is orphaned at once, so leadership silently ends 60 s after the election and a
  second candidate is elected while the first still leads (no fault needed, a term > 60 s).

Without faults and with terms shorter than the lease: one leader at a time. The token is the
leader key's create revision (`rev` in Campaign's answer), which the fence compares.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.backends.etcd.gateway import b64, unb64
from zkjepsen.backends.session import lock_node
from zkjepsen.recipes.base import Token
from zkjepsen.recipes.etcd_v3lock import V3Lock, call, wait_s


class V3Election(V3Lock):
    def setup(self) -> None:
        super().setup()
        self.leader: dict[str, Any] | None = None  # Campaign's LeaderKey while we lead

    def acquire(self, timeout: float | None) -> Token | None:
        body: dict[str, Any] = {"name": b64(self.name), "value": b64(self.identifier or "x")}
        if self.lease is not None:
            body["lease"] = str(self.lease_id())
        out = call(self.session, "v3/election/campaign", body, wait_s(timeout))
        leader = out.get("leader") or {}
        key = unb64(leader.get("key"))
        if not key:
            raise RuntimeError(f"Campaign answered without a leader key: {out}")
        self.leader, self.key = leader, key
        self.session.fence_key = key
        rev = int(leader.get("rev") or 0)
        return Token(rev or None, rev or None, lock_node(self.path, rev))

    def release(self) -> None:
        leader, self.leader, self.key = self.leader, None, None
        if leader is not None:
            call(self.session, "v3/election/resign", {"leader": leader}, 2.0)


class V3ElectionNoLease(V3Election):
    LEASE = False
