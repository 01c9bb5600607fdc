"""`ping`: each client writes and reads its own znode; plumbing smoke test, checks nothing."""

from __future__ import annotations

from typing import Any


class Ping:
    name = "ping"
    description = "each client writes and reads its own znode (plumbing smoke test; no checker)"

    def setup(self, ctx: Any) -> None:
        ctx.session.ensure_path("/ping")

    def run_client(self, ctx: Any) -> None:
        path = f"/ping/c{ctx.client}"
        ctx.session.ensure_path(path)
        i = 0
        while ctx.running():
            i += 1
            op = ctx.invoke("write", key=path, value=i)
            try:
                ctx.session.set(path, str(i).encode())
                op.ok(i)
            except Exception as e:  # noqa: BLE001 - any failure: outcome unknown
                op.info(error=type(e).__name__)
            ctx.sleep(ctx.params.get("think_s", 0.05))

    def final(self, ctx: Any) -> None:
        pass

    def checkers(self, params: dict) -> dict[str, Any]:
        return {}


PING = Ping()
