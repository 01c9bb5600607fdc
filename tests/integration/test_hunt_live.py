"""`zkjepsen hunt` end to end through the CLI on a real Redis (issue 50), on two of
benchmarks/zoo's programs with the menu narrowed to client pauses (`--faults pause-client`):

- `redis_blind_delete` (its release a plain DEL): the hunt finds a split beyond a lease's
  nature, confirms it, replays it for the reproducer, and leaves its folder as docs/hunt.md
  says: hunt.jsonl (each choice and why), coverage.html, finding.json, the catalogue entry and
  the pytest reproducer; `analyze` of that folder says the same.
- `redis_control_fenced` (the same lock done right, fenced, judged by effect): a brief hunt
  over the same menu flags nothing (no run found anything, no effect overlap).

Seed 1's first round is `pause-client 3x at-a-time -> holder` and `pause-client 3x
while-queued -> holder + pause-client 0.5x on-first-write -> next-waiter`: a holder frozen three
leases long, whose waking DEL removes the next holder's key. That it finds it there is the
program's bug, not the seed's: a round that misses is followed by others within the budget.
The control's hunt takes seed 2, whose first choice freezes the holder 3 leases long the moment
it acquires (seed 1's two choices both missed there: no run could tell, exit 2).
`--shrink-budget 1s` leaves the shrink no time to try a simpler schedule: it replays the
original for the reproducer.
`--parallel 2`: the confirmation's and the replays' runs two at a time. `--session-timeout 1s`:
a silence, and the hold it stretches to outlast it (docs/hunt.md), are multiples of the lease,
so every run stays within the hunt's 15 s (with 2 s a `pause-client 3x` run held 10 s and
lasted 24 s; the module took 355 s instead of 93). The clients of a Redis
run are the ZooKeeper image's (`zk_image`: built here, not by the hunt)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "benchmarks" / "zoo"


def hunt(program: str, store: Path, budget: str, seed: int, *more: str):
    """`zkjepsen hunt` on a zoo program on Redis, client pauses only, with the parameters its
    .toml gives (a control's fence: resource=fenced, property=effect, one write a hold)."""
    params = tomllib.loads((ZOO / f"{program}.toml").read_text()).get("params", {})
    given = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items()]
    settings = ["--budget", budget, "--seed", str(seed), "--parallel", "2", "--store", str(store)]
    settings += ["--session-timeout", "1s"]  # runs of 15 s (the module docstring)
    return subprocess.run(
        [sys.executable, "-m", "zkjepsen.cli", "hunt", "--client-cmd", f"python3 {program}.py"]
        + ["--client-dir", str(ZOO), "--backend", "redis", "--faults", "pause-client"]
        + settings
        + [x for kv in given for x in ("--param", kv)]
        + list(more),
        capture_output=True,
        text=True,
        timeout=1800,
    )


def lines_of(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "hunt.jsonl").read_text().splitlines() if x]


def test_the_hunt_finds_confirms_and_writes_a_blind_delete(tmp_path, redis_image, zk_image):
    os.chmod(tmp_path, 0o755)
    out = hunt("redis_blind_delete", tmp_path / "store", "6m", 1, "--shrink-budget", "1s")
    said = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 1, said
    (folder,) = (tmp_path / "store").glob("hunt-exec-redis/2*")
    lines = lines_of(folder)
    found = [x for x in lines if x["reached"] == "found"]
    assert found and "beyond a lease's or a fault's nature" in found[0]["words"], lines
    assert all(x["choice"]["fault"] == "pause-client" and x["why"] for x in lines), lines
    assert all(x["states"] for x in lines if x["valid"] is not None), lines  # read from history
    record = json.loads((folder / "finding.json").read_text())
    assert record["kinds"] == ["lock:belief"], record
    assert record["confirmed"]["hits"] >= 2, record  # the original and a confirmation run
    reproducer = Path(record["reproducer"])
    assert reproducer.parent == folder and reproducer.name.startswith("test_reproduce_"), record
    compile(reproducer.read_text(), str(reproducer), "exec")  # a pytest module, as written
    entry = (folder / "catalogue_entry.py").read_text()
    assert "Scenario(" in entry and "fault('pause-client'" in entry, entry
    picture = (folder / "coverage.html").read_text()
    assert "<table" in picture and "pause-client" in picture
    last = (out.stdout + out.stderr).strip().splitlines()[-1]
    assert str(folder) in last and "hunt.jsonl" in last and reproducer.name in last, last
    analyzed = subprocess.run(
        [sys.executable, "-m", "zkjepsen.cli", "analyze", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert analyzed.returncode == 1, analyzed.stdout + analyzed.stderr  # the hunt's own exit
    assert f"{len(lines)} runs" in analyzed.stdout + analyzed.stderr


def test_a_fenced_control_hunted_briefly_is_never_flagged_by_effect(
    tmp_path, redis_image, zk_image
):
    os.chmod(tmp_path, 0o755)
    out = hunt("redis_control_fenced", tmp_path / "store", "1s", 2)  # one round: two runs
    said = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 0, said  # not found (1), and some run could tell (not 2)
    (folder,) = (tmp_path / "store").glob("hunt-exec-redis/2*")
    lines = lines_of(folder)
    assert len(lines) == 2 and not any(x["reached"] == "found" for x in lines), lines
    assert "no violation in 2 runs" in said, said
    for line in lines:
        results = json.loads((Path(line["folder"]) / "results.json").read_text())
        spec = json.loads((Path(line["folder"]) / "test.json").read_text())
        assert spec["params"]["property"] == "effect", spec  # judged through the fence
        lock = results["lock"]
        assert lock["valid"] is True and lock["effect_overlap_count"] == 0, lock
    assert not (folder / "finding.json").exists()
    # seed 2's first choice froze the holder 3 leases long the moment it acquired: the fence,
    # not the faults' missing, is what kept the data (seed 1's two choices both missed)
    assert any(x["reached"] in ("landed", "close") for x in lines), lines
