"""README.md's example outputs, drawn by the console's own verdict printer (`print_verdict`, what
`zkjepsen test` and `analyze` print) from the run each example shows, so that they follow the
console's format whenever it changes. Each example is a fenced block after a marker line
`<!-- example: NAME ... -->`; its run's test.json and results.json (gzipped) are kept under
tests/unit/readme_runs/NAME/, with `store.txt`, the store path the command printed.

    .venv/bin/python benchmarks/readme_examples.py                      # rewrite the blocks
    .venv/bin/python benchmarks/readme_examples.py --take NAME RUN_DIR  # keep a new run's files
    .venv/bin/python benchmarks/readme_examples.py --check              # exit 1 if not current

tests/unit/test_readme_examples.py fails when a block is not what the printer draws today.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
RUNS = REPO / "tests" / "unit" / "readme_runs"
MARKER = re.compile(r"^<!-- example: ([\w-]+) [^\n]*-->\n```\n(.*?)^```$", re.M | re.S)


def printed(name: str) -> str:
    """What `zkjepsen analyze` of that run prints as its verdict, without colour."""
    from zkjepsen.cli.display import console
    from zkjepsen.cli.run import print_verdict
    from zkjepsen.run.outcome import RunResult
    from zkjepsen.run.resolve import spec_from_json

    folder = RUNS / name
    spec = spec_from_json(json.loads((folder / "test.json").read_text()))
    results = json.loads(gzip.decompress((folder / "results.json.gz").read_bytes()))
    where = Path((folder / "store.txt").read_text().strip())
    run = RunResult(spec, where, results["valid"], results, {})
    with console.capture() as out:
        print_verdict(run)
    return out.get()


def rewritten(text: str) -> str:
    def block(m: re.Match[str]) -> str:
        head = m.group(0)[: m.start(2) - m.start(0)]
        return head + printed(m.group(1)) + "```"

    return MARKER.sub(block, text)


def take(name: str, run_dir: Path) -> None:
    """Keep a run's test.json and results.json as the example NAME's (a new run of its command)."""
    folder = RUNS / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run_dir / "test.json", folder / "test.json")
    # gzip: a run's results.json holds every violation (140 KB for the kazoo example)
    raw = (run_dir / "results.json").read_bytes()
    (folder / "results.json.gz").write_bytes(gzip.compress(raw, mtime=0))
    where = run_dir.resolve()
    try:
        where = where.relative_to(REPO)
    except ValueError:
        pass
    (folder / "store.txt").write_text(f"{where}\n")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--take"]:
        take(argv[1], Path(argv[2]))
    text = README.read_text()
    new = rewritten(text)
    if "--check" in argv:
        print("current" if new == text else "README.md's examples are not what the console prints")
        return 0 if new == text else 1
    README.write_text(new)
    print(f"wrote {len(MARKER.findall(new))} examples into README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
