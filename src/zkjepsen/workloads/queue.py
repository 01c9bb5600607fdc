"""`queue`: producers and consumers on a ZooKeeper FIFO queue; a final drain takes the rest.

Each client loops: `enqueue v` (v unique: process id * 10^6 + counter, so a restarted client
never repeats one) or `dequeue` (ok with the value taken, fail when empty). `final` drains what
is left (client 0) so the checker can decide loss. The queue object comes from the recipe when it
has `put`/`get`/`drain` (the `queue` recipe does), else the `queue` recipe is used.
Params: queue_path, enqueue_frac, think_s.
Checker: queue (no loss, no duplicate, nothing invented, FIFO).
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.queue import QueueChecker
from zkjepsen.recipes.base import param
from zkjepsen.recipes.queue import FifoQueue
from zkjepsen.workloads.common import error_name, is_definite


def _queue(ctx: Any) -> Any:
    path = param(ctx.params, "queue_path", "/zkjepsen/queue_fifo")
    try:
        q = ctx.make_recipe(path)
    except Exception:  # noqa: BLE001 - not a queue-capable recipe name: use ours
        q = None
    if q is None or not all(hasattr(q, m) for m in ("put", "get", "drain")):
        q = FifoQueue(ctx.session, path)
    return q, path


class QueueWorkload:
    name = "queue"
    description = "FIFO queue: enqueue/dequeue, final drain (loss, duplicates, order)"

    def setup(self, ctx: Any) -> None:
        ctx.session.ensure_path(param(ctx.params, "queue_path", "/zkjepsen/queue_fifo"))

    def run_client(self, ctx: Any) -> None:
        enq_frac, think_s = (
            param(ctx.params, "enqueue_frac", 0.5),
            param(ctx.params, "think_s", 0.02),
        )
        q, path, i = None, None, 0
        while ctx.running():
            if q is None:
                try:
                    q, path = _queue(ctx)
                except Exception as e:  # noqa: BLE001
                    ctx.event("recipe-error", f"{error_name(e)}: {e}")
                    ctx.sleep(0.5)
                    continue
            if ctx.rng.random() < enq_frac:
                i += 1
                v = ctx.recorder.process * 1_000_000 + i
                op = ctx.invoke("enqueue", key=path, value=v)
                try:
                    q.put(v)
                except Exception as e:  # noqa: BLE001
                    (op.fail if is_definite(e) else op.info)(v, error=error_name(e))
                else:
                    op.ok(v)
            else:
                op = ctx.invoke("dequeue", key=path)
                try:
                    ok, v = q.get()
                except Exception as e:  # noqa: BLE001 - the delete may have happened
                    op.info(error=error_name(e))
                else:
                    if ok:
                        op.ok(v)
                    else:
                        op.fail(error="empty")
            ctx.sleep(ctx.rng.uniform(0, 2 * think_s))

    def final(self, ctx: Any) -> None:
        q, path = _queue(ctx)
        op = ctx.invoke("drain", key=path)
        try:
            ctx.session.sync(path)
            values = q.drain()
        except Exception as e:  # noqa: BLE001
            op.info(error=error_name(e))
            return
        op.ok(values)

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:

        return {
            "queue": QueueChecker(fifo=True),
            "exercised": Exercised(need=("enqueue", "dequeue")),
        }


QUEUE = QueueWorkload()
