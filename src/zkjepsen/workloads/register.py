"""`register`: Jepsen's ZooKeeper test - read / write / cas on versioned znodes, several keys.

Source: Jepsen's `jepsen.zookeeper` test (Kyle Kingsbury): each key is a znode holding a small
int; `write v` sets it blindly, `cas [old new]` reads it with its version and sets new only if
the value was old and the version is unchanged, `read` gets it - after a `sync()` of the path
when `sync_reads` is on. ZooKeeper serves reads from the server the session is connected to, so
reads without sync() may be stale: linearizable writes, sequentially consistent reads.

Outcomes: a read or a cas that fails before its set certainly did nothing (`fail`); a write or a
cas whose set hit ConnectionLoss/timeout/expiry is `info`; BadVersion on the cas set is `fail`.
Params: keys (3), values (5), sync_reads (true), think_s, read_frac.
Checker: linearizability with a register per key (absent = never; every key starts at 0).
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.linear import Linearizable
from zkjepsen.checker.linear.models import Register
from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import ensure, error_name, is_definite

ROOT = "/zkjepsen/register"


def _keys(params: dict[str, Any]) -> list[str]:
    return [f"{ROOT}/k{i}" for i in range(param(params, "keys", 3))]


class RegisterWorkload:
    name = "register"
    description = "Jepsen's ZooKeeper test: read/write/cas per znode (sync_reads on/off)"

    def setup(self, ctx: Any) -> None:
        for k in _keys(ctx.params):
            ensure(ctx.session, k, b"0")

    def run_client(self, ctx: Any) -> None:
        p = ctx.params
        keys, nvals = _keys(p), param(p, "values", 5)
        sync_reads = param(p, "sync_reads", True)
        think_s, read_frac = param(p, "think_s", 0.01), param(p, "read_frac", 0.4)
        zk = ctx.session
        while ctx.running():
            key = ctx.rng.choice(keys)
            r = ctx.rng.random()
            if r < read_frac:
                op = ctx.invoke("read", key=key, sync=sync_reads)
                try:
                    if sync_reads:
                        zk.sync(key)
                    data, _ = zk.get(key)
                except Exception as e:  # noqa: BLE001 - a read has no effect
                    op.fail(error=error_name(e))
                else:
                    op.ok(int(data))
            elif r < read_frac + (1 - read_frac) / 2:
                v = ctx.rng.randrange(nvals)
                op = ctx.invoke("write", key=key, value=v)
                try:
                    zk.set(key, str(v).encode())
                except Exception as e:  # noqa: BLE001
                    (op.fail if is_definite(e) else op.info)(v, error=error_name(e))
                else:
                    op.ok(v)
            else:
                old, new = ctx.rng.randrange(nvals), ctx.rng.randrange(nvals)
                op = ctx.invoke("cas", key=key, value=[old, new])
                try:
                    data, stat = zk.get(key)
                except Exception as e:  # noqa: BLE001 - nothing written
                    op.fail([old, new], error=error_name(e))
                    ctx.sleep(think_s)
                    continue
                if int(data) != old:
                    op.fail([old, new], error="mismatch")
                else:
                    try:
                        zk.set(key, str(new).encode(), version=stat.version)
                    except Exception as e:  # noqa: BLE001
                        (op.fail if is_definite(e) else op.info)([old, new], error=error_name(e))
                    else:
                        op.ok([old, new])
            ctx.sleep(ctx.rng.uniform(0, 2 * think_s))

    def final(self, ctx: Any) -> None:
        pass

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:

        return {
            "linearizable": Linearizable(
                Register(initial=0), time_limit=param(params, "check_time_s", 120.0)
            ),
            "exercised": Exercised(need=("write", "read")),
        }


REGISTER = RegisterWorkload()
