"""docs/findings.md's boundaries table against its sources: the JSON rows of the dated boundary
notes (docs/findings/*boundar*.md), each row against its note's own section, and a row made
from a sweep folder's sweep.json (benchmarks/findings_current.py; no Docker)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from zkjepsen.report import sweep as rs

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import findings_current as fc  # noqa: E402  (benchmarks/ is no package)


def test_findings_md_holds_the_table_its_notes_draw():
    text = (REPO / "docs" / "findings.md").read_text()
    drawn = "\n".join(fc.boundaries_table(fc.read_boundary_notes()))
    assert drawn in text, "docs/findings.md: .venv/bin/python benchmarks/findings_current.py"
    assert text.index(drawn) < text.index(fc.END) < text.index("## History")


def sections(text: str) -> dict[str, str]:
    """Each `###`/`##` heading's text -> its body up to the next heading."""
    out: dict[str, str] = {}
    head = None
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            head = line.lstrip("#").strip()
            out[head] = ""
        elif head is not None:
            out[head] += line + "\n"
    return out


@pytest.mark.parametrize("note", fc.boundary_notes(), ids=lambda p: p.name)
def test_each_row_says_the_boundary_its_section_says(note):
    text = note.read_text()
    rows = fc.boundary_rows(text, note.name)
    assert rows, f"{note.name}: a boundary note with no row"
    parts = sections(text)
    for row in rows:
        body = parts.get(row["section"])
        assert body is not None, f"{note.name}: no section {row['section']!r}"
        assert f"**Boundary:** {row['boundary']}\n" in body, (
            f"{note.name} § {row['section']}: its row's boundary ({row['boundary']}) is not "
            "the one the section ends with"
        )
        assert row["date"] in note.name, f"{note.name}: a row dated {row['date']}"


def test_a_row_lacking_a_field_or_a_note_without_the_block_stops_the_script():
    row = {k: "x" for k in fc.BOUNDARY_KEYS}
    block = f"{fc.BOUNDARY_MARK}\n```json\n{json.dumps([row])}\n```\n"
    assert fc.boundary_rows(block, "n.md") == [row]
    with pytest.raises(ValueError, match="lacks claim"):
        fc.boundary_rows(block.replace('"claim": "x"', '"claim": " "'), "n.md")
    with pytest.raises(ValueError, match="no "):
        fc.boundary_rows("a note\n", "n.md")
    table = "\n".join(fc.boundaries_table([("2026-11-28-boundaries.md", block)]))
    assert "| x | x | x | x | x | x | x · a |" in table
    assert "a. [2026-11-28-boundaries.md](findings/2026-11-28-boundaries.md#x): `x`" in table
    assert "No boundary measured yet" in "\n".join(fc.boundaries_table([]))


def test_a_row_from_a_sweep_folder_says_its_boundary_runs_load_and_command(tmp_path):
    axis = {"fault": "clock-rate-client", "param": "rate", "relative": False,
            "timing_s": None, "grid": [2.0, 5.0, 8.0], "grain": 0.001}  # fmt: skip
    settings = {
        "recipe": "etcd-mutex-go", "backend": "etcd", "workload": "lock", "nodes": 1,
        "clients": 3, "time_limit_s": 15.0, "session_timeout_s": 4.0, "interval_s": 3.0,
        "params": {}, "fault_trigger": None, "seed": 1, "runs": 2, "target_rate": 0.5,
        "until_boundary": 1.0, "services": None, "axis": axis,
    }  # fmt: skip

    def run(point, seed, valid, load):
        lock = {"valid": valid} if valid else {"valid": False, "violations": [{"kind": "belief"}]}
        return {"point": point, "seed": seed, "valid": valid, "store": "", "load": load,
                "results": {"valid": valid, "lock": lock}}  # fmt: skip

    runs = [run(2.0, 1, True, 3.5), run(2.0, 2, True, 4.0), run(5.0, 1, False, 9.25),
            run(3.5, 1, True, 6.0), run(8.0, 1, False, 5.0)]  # fmt: skip
    rs.write_record(tmp_path, settings, runs, {"started": "2026-11-28 20:30 UTC"})
    res = rs.result(rs.read_record(tmp_path))
    (tmp_path / "sweep.json").write_text(json.dumps(res))
    row = fc.row_from_sweep(tmp_path)
    assert row["boundary"] == rs.boundary_text(res["boundaries"]["invalid"], axis)
    assert row["runs"] == "4 + 1 bisected" and row["load"] == "3.5-9.25"
    assert row["date"] == "2026-11-28" and row["claim"] == ""  # the docs' claim: by hand
    for r in runs:  # never broken: how far, and that 1-2 clean runs a point call none safe
        r["valid"] = r["results"]["valid"] = r["results"]["lock"]["valid"] = True
        r["results"]["lock"].pop("violations", None)
    rs.write_record(tmp_path, settings, runs, {"started": "2026-11-28 20:30 UTC"})
    (tmp_path / "sweep.json").write_text(json.dumps(rs.result(rs.read_record(tmp_path))))
    row = fc.row_from_sweep(tmp_path)
    assert row["boundary"] == "not broken up to 8; too few runs a point to call one safe"
    argv = shlex.split(row["command"])
    assert argv[argv.index("--over") + 1] == "rate=2:8:3"
    assert argv[argv.index("--until-boundary") + 1] == "1"
    assert argv[argv.index("--recipe") + 1] == "etcd-mutex-go"


def test_a_table_measured_in_parts_keeps_the_counts_of_stores_not_on_this_machine():
    """A part's store lives where it was run: refreshing the data from the stores here keeps a
    lost part's cells, and reads a part that is here again whole (no double count)."""

    def cmd(store: str) -> str:
        return f"zkjepsen matrix --recipes r --runs 1 --store {store} --out {store}/matrix.md"

    old = {
        "command": cmd("/tmp/gone"),
        "started": "2026-11-28 10:00 UTC",
        "cells": [
            {
                "row": "r",
                "col": "f",
                "k": 1,
                "n": 2,
                "command": cmd("/tmp/gone"),
                "started": "2026-11-28 10:00 UTC",
            },
            {
                "row": "r",
                "col": "f",
                "k": 0,
                "n": 3,
                "command": cmd("store/findings/t/here"),
                "started": "2026-11-28 11:00 UTC",
            },
        ],
    }
    new = {
        "command": cmd("store/findings/t/here"),
        "started": "2026-11-28 11:00 UTC",
        "cells": [
            {
                "row": "r",
                "col": "f",
                "k": 2,
                "n": 5,
                "command": cmd("store/findings/t/here"),
                "started": "2026-11-28 11:00 UTC",
            }
        ],
    }
    kept = fc.with_lost_stores(old, new)
    assert sorted((fc.store_of(c["command"]), c["n"]) for c in kept["cells"]) == [
        ("/tmp/gone", 2),
        ("store/findings/t/here", 5),
    ]
    assert kept["started"] == "2026-11-28 10:00 UTC"
    assert fc.with_lost_stores(None, new) == new
    only_here = {**old, "cells": old["cells"][1:]}
    assert fc.with_lost_stores(only_here, new) == new
