"""What the servers and clients did in each cell of a findings matrix with a version axis.

The findings table says how often each cell split; this says why, from the evidence every run
folder keeps: per cell, over its runs,
- `expiring`: "Expiring session" lines in the servers' logs (the leader expiring sessions);
- `election ms`: "LEADER ELECTION TOOK" figures (3.4 logs a bare number, 3.5+ adds "MS")
  after each node's first (its start), median over the cell's runs and the longest: how long
  a node was without a leader after a failover (a killed node's own rejoin included);
- `sessions`: sessions replaced (a client's `session` events beyond its first);
- the clients' `session-state` events (SUSPENDED, LOST, RECONNECTED, ...): what each library
  told the application.

    .venv/bin/python benchmarks/version_evidence.py STORE   # the matrix's --store
"""

from __future__ import annotations

import collections
import json
import re
import statistics
import sys
from pathlib import Path

ELECTION = re.compile(r"LEADER ELECTION TOOK - (\d+)")


def run_facts(folder: Path) -> dict:
    expiring, elections = 0, []
    for log in sorted(folder.glob("nodes/*/*.log")):
        took = []
        for line in log.read_text(errors="replace").splitlines():
            if "Expiring session" in line:
                expiring += 1
            m = ELECTION.search(line)
            if m:
                took.append(int(m.group(1)))
        elections += took[1:]  # the first is the node's start
    states: collections.Counter = collections.Counter()
    sessions: collections.Counter = collections.Counter()
    with (folder / "history.jsonl").open() as f:
        for line in f:
            if '"event"' not in line:
                continue
            op = json.loads(line)
            if op.get("f") == "session-state":
                states[str(op["value"])] += 1
            elif op.get("f") == "session":
                sessions[op.get("client")] += 1
    return {
        "expiring": expiring,
        "elections_ms": elections,
        "replaced": sum(max(0, n - 1) for n in sessions.values()),
        "states": states,
    }


def spread(values: list[int]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):g} ({min(values)}-{max(values)})"


def main(store: Path) -> None:
    record = json.loads((store / "matrix-runs.json").read_text())
    cells: dict[str, list[tuple[bool | None, dict]]] = collections.defaultdict(list)
    for run in record["runs"]:
        folder = store / run["store"] if run.get("store") else None
        if folder is None or not (folder / "history.jsonl").exists():
            continue
        cells[run["cell"]].append((run.get("valid"), run_facts(folder)))
    print(
        "| cell | runs | split | expiring sessions / run | elections after start, ms | "
        "sessions replaced / run | client session states (all runs) |"
    )
    print("|---|---|---|---|---|---|---|")
    for cell in sorted(cells):
        runs = cells[cell]
        states: collections.Counter = collections.Counter()
        for _, facts in runs:
            states.update(facts["states"])
        shown = ", ".join(f"{k} {v}" for k, v in sorted(states.items()) if k != "CONNECTED")
        print(
            f"| {cell.replace('|', ' / ')} | {len(runs)} | {sum(v is False for v, _ in runs)} | "
            f"{spread([f['expiring'] for _, f in runs])} | "
            f"{spread([ms for _, f in runs for ms in f['elections_ms']])} | "
            f"{spread([f['replaced'] for _, f in runs])} | {shown or '-'} |"
        )


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "matrix-runs.json").exists():
        sys.exit("usage: version_evidence.py STORE   (a matrix --store holding matrix-runs.json)")
    main(Path(sys.argv[1]))
