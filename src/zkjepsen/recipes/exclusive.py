"""The exclusive lock of a (Chinese) article on ZooKeeper scenarios (`exclusive`).

Source: every client tries to create the ephemeral node `<lock>/lock`; the one that succeeds
holds the lock; the others watch the children of `<lock>` and retry when they change. Release:
delete the node (or the session ends and ZooKeeper deletes it).

Expected flaw: safe without faults, but unfair and herd-prone (every release wakes every waiter,
who all race to create), and no session-loss handling: a holder whose session expired still
believes it holds while the node (gone with the session) is created by another client - and
its `release` then deletes *that client's* node (release deletes `<lock>/lock` whoever made it).
The article does not say what to do if the node vanished before the watch was set; the port
retries the create when the listing it set the watch with no longer shows the node, which is the
reading under which the recipe works at all (else a waiter sleeps until an unrelated change).
"""

from __future__ import annotations

from zkjepsen.recipes.watching import FixedNodeRecipe


class ExclusiveLock(FixedNodeRecipe):
    NAME = "lock"

    def _watch(self) -> bool:
        return self.NAME in self.zk.get_children(self.path, watch=self._woken)
