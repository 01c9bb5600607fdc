"""The ZooKeeper paper's scalable lock without herd effect (`paper`), as taught in (Chinese)
lecture notes on the paper.

Source: `CREATE(f, sequential, ephemeral)`; loop: `LIST(f*)`; if no lower node, return (held);
if `EXISTS(next lower, watch)`, wait; then LIST again (re-listing on every wake-up, because the
lower node may have died rather than released). Step for step this is the article's version 2,
so the port reuses `PredecessorLock`'s loop with the paper's node name `f-`.

Expected flaw (the notes stress it): the lock does **not** give atomicity. If the holder dies
half-way through a multi-step update, its ephemeral node goes, the next holder gets the lock and
sees the half-done state. Only idempotent work ("soft lock") or a ready-file protocol makes it
safe. The `lock` workload (`writes=2`, the default) writes a "half" then a "done" state, and
every holder first reads the resource (`f: "read"`, recorded with what it found); the
`atomicity` checker (checker/atomicity.py) reports a holder that read another holder's half-done
state. Scenario `holder-dies-mid-update` kills the holder between its writes; with the
workload's `ready_file` param (the ready-file protocol) the same kill leaves no such read
(`holder-dies-mid-update-ready`).
"""

from __future__ import annotations

from zkjepsen.recipes.predecessor import PredecessorLock


class PaperLock(PredecessorLock):
    PREFIX = "f-"
