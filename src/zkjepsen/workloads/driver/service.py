"""`python3 -m zkjepsen.workloads.driver.service RECIPE`: the client wire protocol served for a
Python recipe of another lock service (Redis, PostgreSQL), the Python driver's twin.

It is the Python driver (client/drivers/python) with the kazoo session replaced by the
backend's client session (client/services: same shape), so acquire, release, holding, read,
the outcome classification and the discard after an unknown outcome are the very same code.
What differs: `init` opens the service session (its `timeout_ms` is the lock's TTL: what the
nemesis scales a pause by), and a fenced `write` is checked by the resource against the
holder's token (client/services: the fencing convention), not by a ZooKeeper transaction.

The lock's TTL: `--param lock_ttl_s`, else the test's session timeout.
Runs inside the client containers.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from zkjepsen.backends.registry import backend_info
from zkjepsen.backends.session import BadVersion, Fenced, session_class
from zkjepsen.recipes import RECIPES, preload_recipe
from zkjepsen.workloads.driver.server import PythonDriver
from zkjepsen.workloads.driver.server import main as serve_main


def recipe_family(recipe: str) -> str:

    return backend_info(RECIPES[recipe].backends[0]).family


def lease_words(recipe: str, ttl_s: float) -> dict[str, int]:
    """The init answer's lease: `timeout_ms`, and `renew_ms` (the longest gap between two
    renewals) where the recipe's library renews less often than every third of it
    (recipes: `renew_share`)."""
    out = {"timeout_ms": int(ttl_s * 1000)}
    share = RECIPES[recipe].renew_share if recipe in RECIPES else None
    if share is not None:
        out["renew_ms"] = min(out["timeout_ms"], math.ceil(ttl_s * 1000 * share))
    return out


class ServiceDriver(PythonDriver):
    token: int | None = None  # the token of the acquisition we believe we hold
    # The run's service, when the recipe runs on several (tooz): the driver's second argument
    family: str | None = None

    def op_init(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        preload_recipe(self.recipe_name)
        params = dict(req.get("params") or {})
        ttl_s = float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000)
        params["lock_ttl_s"] = ttl_s  # the recipes read it from here
        self.init = {**req, "params": params}
        try:
            family = self.family or recipe_family(self.recipe_name)
            self.zk = session_class(family)(req["servers"], timeout=ttl_s)
            self.zk.start(timeout=15)
        except Exception as e:  # noqa: BLE001
            return "fail", None, f"could not connect: {type(e).__name__}: {e}"
        self.session_id = 0
        value = {"session_id": self.zk.session_id, **lease_words(self.recipe_name, ttl_s)}
        return "ok", value, None

    def op_acquire(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        type_, value, error = super().op_acquire(req)
        self.token = value.get("token") if type_ == "ok" else None
        return type_, value, error

    def op_release(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        out = super().op_release(req)
        self.token = None
        return out

    def op_write(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        path, data = req["path"], req["data"].encode()
        version = req.get("version", -1)
        try:
            if req.get("fenced"):
                if self.token is None:
                    return "fail", None, "Fenced"
                stat = self.zk.fenced_set(path, data, version, self.token)
            else:
                stat = self.zk.set(path, data, version=version)
        except Fenced:
            return "fail", None, "Fenced"
        except BadVersion:
            return "fail", None, "BadVersion"
        except Exception as e:  # noqa: BLE001 - a lost answer: it may have been written
            return "info", None, type(e).__name__
        return "ok", {"version": stat.version}, None

    def discard(self) -> None:
        super().discard()
        self.token = None


def main(argv: list[str]) -> int:
    """`RECIPE [SERVICE]`: the service's session serves the recipe (its first backend's when
    not named)."""
    if len(argv) != 2:
        return serve_main(argv, ServiceDriver, "zkjepsen.workloads.driver.service")

    class Named(ServiceDriver):
        family = argv[1]

    return serve_main(argv[:1], Named, "zkjepsen.workloads.driver.service")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
