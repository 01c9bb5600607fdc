"""The clients' account and the tables the protected resource and the fencing tokens live in,
created in the image at build time (image.py), so every container starts with them.

- `zkjepsen_kv`: the protected resource and the counter, one row per workload "path" (the
  ZooKeeper workloads name znodes; here a path is a key). `version` counts its accepted writes,
  as a znode's version does; `top_token` is the highest fencing token the resource accepted.
- `zkjepsen_fence`: one row, the counter fencing tokens come from
  (`UPDATE ... SET n = LAST_INSERT_ID(n + 1)`: the row's new version, returned to the
  connection that made it, in one statement; MariaDB has no UPDATE ... RETURNING).

Both InnoDB: a commit is as durable as `innodb_flush_log_at_trx_commit` says (`--fsync`).
Stdlib only: imported on the host and inside the client containers.
"""

USER = "zkjepsen"
PASSWORD = "zkjepsen"
DATABASE = "zkjepsen"
PORT = 3306

SETUP_SQL = """CREATE TABLE zkjepsen_kv (
    path VARCHAR(255) NOT NULL PRIMARY KEY,
    data LONGTEXT,
    version INT NOT NULL DEFAULT 0,
    top_token BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE zkjepsen_fence (
    id TINYINT NOT NULL PRIMARY KEY,
    n BIGINT NOT NULL
) ENGINE=InnoDB;
INSERT INTO zkjepsen_fence (id, n) VALUES (1, 0);"""

TABLES = ("zkjepsen_kv", "zkjepsen_fence")
