"""The tables the PostgreSQL locks and the protected resource live in. Created once by the
backend when the server is ready (harness/postgres/cluster.py), before any client starts, so 10
clients never race on `CREATE TABLE IF NOT EXISTS` (which is not safe under concurrency).

- `zkjepsen_kv`: the protected resource and the counter, one row per workload "path" (the
  ZooKeeper workloads name znodes; here a path is a key). `version` counts accepted writes, as a
  znode's version does; `top_token` is the highest fencing token the resource has accepted.
- `zkjepsen_lock_rows`: one row per lock name, the row `SELECT ... FOR UPDATE` locks.
- `zkjepsen_lock_claims`: the unique-row insert lock (a row exists = the lock is taken).
- `zkjepsen_fence`: the sequence fencing tokens come from (`nextval`, never rolled back, so a
  later acquisition always draws a larger token).

Stdlib only: imported on the host and inside the client containers.
"""

SETUP_SQL = """
CREATE TABLE IF NOT EXISTS zkjepsen_kv (
    path text PRIMARY KEY,
    data text,
    version integer NOT NULL DEFAULT 0,
    top_token bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS zkjepsen_lock_rows (name text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS zkjepsen_lock_claims (
    name text PRIMARY KEY,
    owner text NOT NULL,
    token bigint NOT NULL,
    taken_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE SEQUENCE IF NOT EXISTS zkjepsen_fence;
"""

TABLES = ("zkjepsen_kv", "zkjepsen_lock_rows", "zkjepsen_lock_claims")
