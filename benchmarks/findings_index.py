"""docs/findings.md's history: every lab note under docs/findings/ (one file per day, each a
`## ` section per finding, as it was written), newest first, with its date, issue and link.
Rewrites the part of findings.md between its two markers; tests/unit/test_docs_drift.py fails
when that part is not what this prints (a note added under docs/findings/ without re-running).

    .venv/bin/python benchmarks/findings_index.py           # rewrite the history in findings.md
    .venv/bin/python benchmarks/findings_index.py --check   # exit 1 if it is not current
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FINDINGS = REPO / "docs" / "findings.md"
NOTES = REPO / "docs" / "findings"
BEGIN = "<!-- history: benchmarks/findings_index.py writes what follows; do not edit by hand -->"
END = "<!-- end of history -->"
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading (as tests/unit/test_docs.py's link check computes it)."""
    plain = re.sub(r"`([^`\n]*)`", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", plain).replace(" ", "-")


def notes() -> list[tuple[str, str, str]]:
    """(file, heading, anchor) of every lab note, newest file first, in each file's order
    reversed (a day's last note first)."""
    out = []
    days = sorted(NOTES.glob("*.md"), key=lambda f: (f.name.startswith("before"), f.name))
    dated = [f for f in days if not f.name.startswith("before")]
    for f in [*reversed(dated), *(f for f in days if f not in dated)]:  # newest day first
        headings = re.findall(r"^## (.+?)\s*$", FENCE.sub("", f.read_text()), re.M)
        out += [(f.name, h, anchor(h)) for h in reversed(headings)]
    return out


def history() -> str:
    lines = [BEGIN, ""]
    day = None
    for name, heading, a in notes():
        if name != day:
            day = name
            title = name[:-3].replace("before-", "before ")
            lines += ["", f"**{title}** ([all of that day](findings/{name}))", ""]
        lines.append(f"- [{heading}](findings/{name}#{a})")
    return "\n".join([*lines, "", END])


def rewritten(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + history() + text[end:]


def main(argv: list[str]) -> int:
    text = FINDINGS.read_text()
    new = rewritten(text)
    if "--check" in argv:
        print("current" if new == text else "findings.md's history is not current")
        return 0 if new == text else 1
    FINDINGS.write_text(new)
    print(f"wrote the history of {len(notes())} notes into {FINDINGS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
