"""Master election from a (Chinese) article on ZooKeeper scenarios (`election`).

Source: all candidates create the same ephemeral node (the article: `/master_election/<date>/
binding`; here `<path>/binding`); the one whose create succeeds is master; the others watch the
node and run the election again when it disappears. As a Recipe: `acquire` = stand until elected
(or `timeout`), `release` = resign (delete the node).

Expected flaw: at most one *node* exists at a time, but belief is another matter: a master whose
session expired (pause, partition) still believes it is master while another is elected, since
the recipe has no session-loss handling; and its resignation deletes `binding` whoever created
it, so a stale master can depose the real one. Without faults: at most one master at a time.
"""

from __future__ import annotations

from zkjepsen.recipes.watching import FixedNodeRecipe


class Election(FixedNodeRecipe):
    NAME = "binding"

    def _watch(self) -> bool:
        return self.zk.exists(self.node, watch=self._woken) is not None
