"""The tooz table pooled from every matrix the dated notes print: per service and fault, runs
judged invalid, with a belief overlap, with an effect overlap, with a half-done read, and
unknown, each over all of the cell's runs with its 95 % Wilson interval (figures only).

    .venv/bin/python benchmarks/tooz_pooled.py [NOTE.md ...] [--store DIR ...]

With no NOTE, every docs/findings/*tooz*.md. The notes hold each matrix's own output unedited
("Findings matrix: ..." then its table); `--store DIR` adds a matrix store's `matrix.md` not yet
pasted into a note. Only matrices with the table's settings (20 s runs, a 4 s session, a fenced
resource, faults every ~3 s, 5 clients) are pooled; any other is named and left out, so a
pooled cell never mixes settings. A run counted `unknown` (no fault landed where the lock could
break, or no client answered) stays in its cell's runs: it is never counted clean.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from zkjepsen.report.stats import rate_text  # noqa: E402

SETTINGS = (
    "5 clients, 20 s per run, session timeout 4 s, params {'resource': 'fenced'}, faults every ~3 s"
)
HEADER = re.compile(r"^Findings matrix: .*$")
CELL = re.compile(
    r"(?P<k>\d+)/(?P<n>\d+) \([^)]*\) invalid(?:, (?P<u>\d+) unknown)? "
    r"\(belief (?P<b>\d+), effect (?P<e>\d+), half-done (?P<h>\d+)\)"
)
FIELDS = ("k", "n", "u", "b", "e", "h")


def matrices(text: str) -> list[tuple[str, list[str]]]:
    """(the header line, the table's lines) of each matrix printed in a text."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not HEADER.match(line):
            continue
        table = []
        for row in lines[i + 1 :]:
            if row.startswith("|"):
                table.append(row)
            elif table:
                break
        out.append((line, table))
    return out


def cells(table: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    """(recipe, fault) -> the counts of one matrix's table."""
    head = [c.strip() for c in table[0].strip("|").split("|")]
    out = {}
    for row in table[2:]:
        parts = [c.strip() for c in row.strip("|").split("|")]
        for col, text in zip(head[1:], parts[1:], strict=True):
            if m := CELL.search(text):
                out[(parts[0], col)] = {f: int(m[f] or 0) for f in FIELDS}
    return out


def pooled(sources: list[tuple[str, str]]) -> tuple[dict, list[str]]:
    """Every source's matrices summed per cell; the headers left out for other settings."""
    total: dict[tuple[str, str], dict[str, int]] = {}
    skipped = []
    for where, text in sources:
        for header, table in matrices(text):
            if SETTINGS not in header or not table:
                skipped.append(f"{where}: {header[:120]}")
                continue
            for place, c in cells(table).items():
                t = total.setdefault(place, dict.fromkeys(FIELDS, 0))
                for f in FIELDS:
                    t[f] += c[f]
    return total, skipped


def render(total: dict) -> list[str]:
    cols = ["pause-client", "isolate-client", "kill-leader", "power-loss-all", "clock-rate-client"]
    rows = sorted({r for r, _ in total}, key=lambda r: ORDER.index(r) if r in ORDER else 99)
    out = ["| service | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r in rows:
        texts = []
        for col in cols:
            c = total.get((r, col))
            if not c:
                texts.append("-")
                continue
            n = c["n"]
            unknown = f", {c['u']} unknown" if c["u"] else ""
            texts.append(
                f"invalid {rate_text(c['k'], n)}{unknown}; belief {c['b']}/{n}, "
                f"effect {rate_text(c['e'], n)}, half-done {c['h']}/{n}"
            )
        out.append(f"| {r} | " + " | ".join(texts) + " |")
    return out


ORDER = [
    "tooz@zookeeper", "tooz@etcd", "tooz@redis", "tooz@redis-sentinel", "tooz@postgres",
    "tooz@mariadb", "tooz@memcached",
]  # fmt: skip


def main(argv: list[str]) -> int:
    stores = [Path(argv[i + 1]) for i, a in enumerate(argv) if a == "--store"]
    notes = [
        Path(a) for i, a in enumerate(argv) if a != "--store" and argv[i - 1 : i] != ["--store"]
    ]
    notes = notes or sorted((REPO / "docs" / "findings").glob("*tooz*.md"))
    sources = [(str(p), p.read_text()) for p in notes]
    sources += [(str(s), (s / "matrix.md").read_text()) for s in stores]
    total, skipped = pooled(sources)
    print("\n".join(render(total)))
    for s in skipped:
        print(f"left out (other settings): {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
