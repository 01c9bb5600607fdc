"""`zkjepsen gate --backend redis` with a --client-cmd program, end to end through the CLI on a
real Redis (issue 50): the template's lock (SET NX PX, never refreshed, docs/templates/
redis_lock.py) gated under client pauses. A holder paused past its TTL splits that lock, so
the gate is INVALID (exit 1); its run is a Redis run of the program given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "docs" / "templates"


def test_a_program_on_redis_is_gated_from_the_command_line(tmp_path, redis_image):
    os.chmod(tmp_path, 0o755)
    out = subprocess.run(
        [sys.executable, "-m", "zkjepsen.cli", "gate", "--client-cmd", "python3 redis_lock.py"]
        + ["--client-dir", str(TEMPLATES), "--backend", "redis", "--scenarios", "client-pause"]
        + ["--time-limit", "20s", "--store", str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = " ".join((out.stdout + out.stderr).split())
    assert "gate: exec on redis under client-pause" in said, said
    assert out.returncode == 1 and "client-pause INVALID" in said, said
    (run,) = (tmp_path / "store").glob("gate-client-pause/2*")
    spec = json.loads((run / "test.json").read_text())
    assert spec["backend"] == "redis" and spec["client_cmd"] == "python3 redis_lock.py"
    lock = json.loads((run / "results.json").read_text())["lock"]
    assert lock["belief_overlap_count"] >= 1, lock
