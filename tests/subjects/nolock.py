"""A "lock" that excludes nobody: every acquire succeeds at once. It exists so the end-to-end
tests can show that a broken user recipe makes `zkjepsen test` exit 1 with the violations named
(what a CI gate relies on). The fencing token is the czxid of a fresh node, so tokens still grow."""

from __future__ import annotations

from zkjepsen.recipes.base import Token


class NoLock:
    def __init__(self, zk, path, **_):
        self.zk, self.path, self.node = zk, path, None

    def acquire(self, timeout):
        self.node = self.zk.create(
            self.path + "/nolock-", ephemeral=True, sequence=True, makepath=True
        )
        return Token(self.zk.exists(self.node).czxid, int(self.node[-10:]), self.node)

    def release(self):
        if self.node:
            self.zk.delete(self.node)
            self.node = None

    def holding(self):
        return self.node is not None
