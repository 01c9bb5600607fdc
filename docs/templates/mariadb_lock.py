#!/usr/bin/env python3
"""A client program for zkjepsen on MariaDB, written from docs/client-protocol.md alone: copy
it, put YOUR lock in `YourLock`, run

    zkjepsen client check --backend mariadb --in-image "python3 mariadb_lock.py" --client-dir .
    zkjepsen test --backend mariadb --client-cmd "python3 mariadb_lock.py" --client-dir . \
        --workload lock --param resource=fenced --nemesis isolate-client --clients 5

It needs only PyMySQL (the client image has it). As shipped the lock is `GET_LOCK(name,
timeout)` on a connection of its own, released by `RELEASE_LOCK`: the lock ends with that
connection, and nothing tells the holder when the server drops it.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid

import pymysql

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()
ACCOUNT = {"user": "zkjepsen", "password": "zkjepsen", "database": "zkjepsen"}

# The resource's fence (client-protocol.md, MariaDB): refuse a token below `top_token`. The new
# version comes back as the statement's LAST_INSERT_ID (MariaDB has no UPDATE ... RETURNING).
WRITE_SQL = """UPDATE zkjepsen_kv SET data = %(data)s, version = LAST_INSERT_ID(version + 1),
       top_token = IF(%(fenced)s, %(token)s, top_token)
 WHERE path = %(path)s AND (%(version)s = -1 OR version = %(version)s)
   AND (NOT %(fenced)s OR top_token <= %(token)s)"""
TOKEN_SQL = "UPDATE zkjepsen_fence SET n = LAST_INSERT_ID(n + 1) WHERE id = 1"


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


def connect(host: str, port: int, read_timeout: float = 5.0) -> pymysql.Connection:
    return pymysql.connect(
        host=host,
        port=port,
        connect_timeout=3,
        read_timeout=read_timeout,
        write_timeout=5,
        autocommit=True,
        **ACCOUNT,
    )


# ---- YOUR LOCK GOES HERE -------------------------------------------------------------------
class YourLock:
    """acquire(timeout_s) -> True/False; release(); holding() -> the application's belief."""

    def __init__(self, host: str, port: int, name: str) -> None:
        # The lock lives in its own connection; its answer may take the whole wait.
        self.conn = connect(host, port, read_timeout=3600)
        self.name = name
        self.held = False

    def acquire(self, timeout_s: float) -> bool:
        with self.conn.cursor() as cur:
            cur.execute("SELECT GET_LOCK(%s, %s)", (self.name, timeout_s))
            (got,) = cur.fetchone()
        self.held = got == 1
        return self.held

    def release(self) -> None:
        self.held = False
        with self.conn.cursor() as cur:
            cur.execute("SELECT RELEASE_LOCK(%s)", (self.name,))

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - gone already
            pass


# ---- the protocol ---------------------------------------------------------------------------
class Driver:
    def __init__(self) -> None:
        self.db: pymysql.Connection | None = None  # the resource's connection
        self.lock: YourLock | None = None
        self.token: int | None = None

    def _db(self) -> pymysql.Connection:
        if self.db is None or not self.db.open:
            self.db = connect(self.host, self.port)
        return self.db

    def _run(self, sql: str, args: object = None):
        try:
            cur = self._db().cursor()
            cur.execute(sql, args)
            return cur
        except pymysql.MySQLError:
            self.db = None  # its state is unknown: a new connection next time
            raise

    def init(self, req: dict) -> tuple[str, object, str | None]:
        host, _, port = req["servers"].split(",")[0].partition(":")
        self.host, self.port = host, int(port or 3306)
        self.lock_path = req["lock_path"]
        timeout_ms = int(req["session_timeout_ms"])  # no session here: the connection is it
        self._run("SELECT 1")
        session_id = f"mariadb-{uuid.uuid4().hex[:8]}"
        return "ok", {"session_id": session_id, "timeout_ms": timeout_ms}, None

    def acquire(self, req: dict) -> tuple[str, object, str | None]:
        try:
            if self.lock is None:
                self.lock = YourLock(self.host, self.port, self.lock_path)
            if not self.lock.acquire(req["timeout_ms"] / 1000):
                return "fail", None, "timeout"
            self.token = int(self._run(TOKEN_SQL).lastrowid)
        except pymysql.MySQLError as e:
            if self.lock is not None:
                self.lock.close()  # unknown: drop the lock and its connection
            self.lock, self.token = None, None
            return "info", None, type(e).__name__
        return "ok", {"token": self.token, "node": f"{self.lock_path}/{self.token:010d}"}, None

    def release(self, req: dict) -> tuple[str, object, str | None]:
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except pymysql.MySQLError as e:
            return "info", None, type(e).__name__
        finally:
            if lock is not None:
                lock.close()
        return "ok", None, None

    def holding(self, req: dict) -> tuple[str, object, str | None]:
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict) -> tuple[str, object, str | None]:
        try:
            row = self._run(
                "SELECT data, version FROM zkjepsen_kv WHERE path = %s", (req["path"],)
            ).fetchone()
        except pymysql.MySQLError as e:
            return "fail", None, type(e).__name__  # a read changes nothing: fail is safe
        if row is None:
            return "fail", None, "NoNode"
        return "ok", {"data": row[0], "version": int(row[1])}, None

    def write(self, req: dict) -> tuple[str, object, str | None]:
        fenced = bool(req.get("fenced"))
        if fenced and self.token is None:
            return "fail", None, "Fenced"
        args = {
            "path": req["path"],
            "data": req["data"],
            "version": int(req.get("version", -1)),
            "fenced": 1 if fenced else 0,
            "token": self.token or 0,
        }
        try:
            cur = self._run(WRITE_SQL, args)
            if cur.rowcount == 1:
                return "ok", {"version": int(cur.lastrowid)}, None
            row = self._run(
                "SELECT top_token FROM zkjepsen_kv WHERE path = %s", (req["path"],)
            ).fetchone()
        except pymysql.MySQLError as e:
            return "info", None, type(e).__name__  # the answer was lost: it may have landed
        if row is None:
            return "fail", None, "NoNode"
        if fenced and int(row[0]) > args["token"]:
            return "fail", None, "Fenced"
        return "fail", None, "BadVersion"

    def close(self, req: dict) -> tuple[str, object, str | None]:
        if self.lock is not None:
            self.lock.close()
        if self.db is not None:
            self.db.close()
        return "ok", None, None


def main() -> None:
    d = Driver()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            type_, value, error = getattr(d, req["op"])(req)
        except Exception as e:  # noqa: BLE001 - anything unclassified: it may have happened
            type_, value, error = "info", None, f"{type(e).__name__}: {e}"
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        send({**msg, "error": error} if error else msg)
        if req["op"] == "close":
            return


if __name__ == "__main__":
    main()
