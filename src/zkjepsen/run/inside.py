"""Inside a controller container (run/controller.py): the one run its local side asked for.

The job (spec, schedule, the engine's ID) comes in the environment. The engine is the socket
mounted at /var/run/docker.sock, checked to be the engine the local side talks to. The store is
/store in the container; /store/result.json says how the run ended, for the local side, which
fetches /store once the container has exited. SIGTERM (what the local side forwards from
Ctrl-C) tears the run down like a local one.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from zkjepsen.docker import signals
from zkjepsen.errors import BadInput
from zkjepsen.run.controller import JOB_ENV, SOCKET_ENV, STORE
from zkjepsen.store import controller_result


class _Lines:
    """The run's log lines on stdout (streamed to the local side)."""

    def log(self, msg: str) -> None:
        print(msg, flush=True)

    def attach(self, *a) -> None:
        pass

    def detach(self) -> None:
        pass


def inside_main() -> None:
    from zkjepsen.docker.engine import Engine
    from zkjepsen.errors import ZkJepsenError
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    def terminated(signum, frame):
        raise signals.Terminated(f"received signal {signum}")

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, terminated)
    job = json.loads(os.environ[JOB_ENV])
    result: dict[str, Any]
    try:
        engine = Engine()
        found = engine.client().info()["ID"]
        if found != job["engine_id"]:
            raise BadInput(
                f"the socket mounted into the controller is another engine's ({found[:12]}); "
                f"set {SOCKET_ENV} to the engine's socket path on its host"
            )
        run = run_test(
            TestSpec.from_json(job["spec"]),
            Path(STORE) / "runs",
            schedule=job["schedule"],
            engine=engine,
            display=_Lines(),
        )
        result = {"ok": True, "valid": run.valid, "results": run.results, "stats": run.stats}
    except ZkJepsenError as e:
        result = {"ok": False, "error": str(e), "exit_code": e.exit_code}
    except signals.Terminated as e:
        result = {"ok": False, "error": f"stopped ({e})", "exit_code": 143}
    except Exception as e:  # noqa: BLE001 - reported on the local side as one sentence
        result = {
            "ok": False,
            "error": f"internal error: {type(e).__name__}: {e}",
            "exit_code": 255,
        }
    Path(STORE).mkdir(exist_ok=True)
    controller_result(Path(STORE)).write_text(json.dumps(result, default=str))
    print(
        f"controller: {'verdict ' + str(result.get('valid')) if result['ok'] else result['error']}"
    )


if __name__ == "__main__":
    inside_main()
