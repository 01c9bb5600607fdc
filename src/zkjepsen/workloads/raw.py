"""`raw`: no lock at all - each client creates and deletes its own ephemeral node in a loop.

The ceiling the lock benchmarks compare against (`benchmarks/recipes.py`): one create plus one
delete per "acquisition", recorded as `acquire`/`release` so the same statistics apply. Keys are
per client, so no checker has anything to judge.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import error_name


class RawWorkload:
    name = "raw"
    description = "benchmark ceiling: create/delete an ephemeral node in a loop (no lock)"

    def setup(self, ctx: Any) -> None:
        ctx.session.ensure_path(param(ctx.params, "lock_path", "/zkjepsen/raw"))

    def run_client(self, ctx: Any) -> None:
        path = param(ctx.params, "lock_path", "/zkjepsen/raw")
        key = f"{path}/c{ctx.client}"
        while ctx.running():
            op = ctx.invoke("acquire", key=key)
            try:
                node, stat = ctx.session.create(
                    f"{key}-", ephemeral=True, sequence=True, include_data=True
                )
            except Exception as e:  # noqa: BLE001
                op.info(error=error_name(e))
                continue
            op.ok({"token": stat.czxid, "seq": None, "node": node})
            op = ctx.invoke("release", key=key)
            try:
                ctx.session.delete(node)
            except Exception as e:  # noqa: BLE001
                op.info(error=error_name(e))
                continue
            op.ok()

    def final(self, ctx: Any) -> None:
        pass

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}


RAW = RawWorkload()
