"""A stored run folder as zkjepsen writes one, made without Docker: a whole spec, a small lock
history whose grants carry tokens, an empty schedule and a verdict. Tests corrupt one file of it
at a time (test_stored_checks.py, test_stored_properties.py)."""

from __future__ import annotations

import json
from pathlib import Path

from zkjepsen.run.spec import TestSpec


def stored_spec(**over) -> dict:
    """test.json of a 3-server, 5-client kazoo lock run (every field, as `to_json` writes, the
    service's settings settled as `validate_spec` records them)."""
    from zkjepsen.backends.zookeeper.service import ZooKeeperSettings

    settings = {"nodes": 3, "clients": 5, "seed": 7, "backend": "zookeeper", "nemesis": ["kill"]}
    service = ZooKeeperSettings(version="3.8").settled()
    return TestSpec(**{**settings, "service": service, **over}).to_json()


def lock_records(n: int = 3) -> list[dict]:
    records, t, token = [], 1_000_000, 100
    for c in (1, 2):
        for _ in range(n):
            for f in ("acquire", "release"):
                for typ in ("invoke", "ok"):
                    t += 1_000_000
                    r = {"index": len(records), "time": t, "process": c, "type": typ, "f": f}
                    r |= {"key": "/zkjepsen/lock", "client": c}
                    if f == "acquire" and typ == "ok":
                        token += 1
                        r["value"] = {"token": token, "seq": token, "node": f"lock-{token}"}
                    records.append(r)
    return records


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def make_run(root: Path, name: str = "run") -> Path:
    run = root / name
    run.mkdir(parents=True)
    (run / "test.json").write_text(json.dumps(stored_spec(), indent=2))
    (run / "history.jsonl").write_text(jsonl(lock_records()))
    (run / "schedule.json").write_text(json.dumps({"faults": []}))
    (run / "results.json").write_text(json.dumps({"valid": True, "lock": {"valid": True}}))
    return run
