"""The docs cannot drift from the tool: every fault kind, ability, service, backend, recipe,
workload and command the tool knows is named in the doc that describes it, every doc path a
`--help` text, a source file or a doc names exists, and the help texts that list a registry's
names list all of them. Names are taken from the registries themselves, so a fault kind added
without its line in docs/faults.md fails here."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from zkjepsen.backends import registry
from zkjepsen.cli.app import COMMANDS, cli
from zkjepsen.faultkinds import ABILITIES, KINDS
from zkjepsen.recipes import RECIPES
from zkjepsen.workloads import WORKLOADS

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`([^`\n]*)`")
NAME = re.compile(r"[\w][\w.:-]*")
DOC_PATH = re.compile(r"\bdocs/[\w./-]+?\.md\b")


def code_names(text: str) -> set[str]:
    """Every name spelled inside a `code` span of the prose (fenced blocks too: an example
    command names what it runs)."""
    return {w.rstrip(".:") for span in CODE.findall(text) for w in NAME.findall(span)}


def missing(names: Iterable[str], text: str) -> list[str]:
    found = code_names(text)
    return sorted(n for n in names if n not in found)


def sections(md: str) -> dict[str, str]:
    """A markdown file's `## ` sections by heading (lower case), without their subheadings
    split off."""
    out: dict[str, str] = {}
    heading = ""
    for line in md.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip().lower()
        out[heading] = out.get(heading, "") + line + "\n"
    return out


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command's path, subcommands of groups included (`cluster up`)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        yield (*path, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))


def command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        found = cmd.get_command(click.Context(cmd), name)
        assert found is not None, path
        cmd = found
    return cmd


def help_texts() -> dict[str, str]:
    """Each command's help as a user reads it (`zkjepsen X --help`), by command."""
    out = {}
    for path in commands():
        cmd = command(path)
        ctx = click.Context(cmd, info_name=" ".join(("zkjepsen", *path)))
        out[" ".join(path)] = cmd.get_help(ctx)
    return out


def test_every_fault_kind_and_ability_is_in_faults_md():
    text = (DOCS / "faults.md").read_text()
    absent = missing([*KINDS, *ABILITIES], text)
    assert not absent, f"docs/faults.md names no {absent}"


# Each fault family's bullet in faults.md's list of families (the code's family -> the bullet's
# first word). A family added to faultkinds/ fails here until its bullet is written.
FAMILY_BULLETS = {
    "process": "- **Process**",
    "partition": "- **Network**",
    "clock": "- **Clock**",
    "proxy": "- **Proxy**",
    "disk": "- **Disk**",
    "none": "- `none`",
}


def test_every_fault_family_has_its_bullet_and_every_kind_is_in_the_list():
    text = (DOCS / "faults.md").read_text()
    families = text.split("They come in families:", 1)[1].split("\n\n", 2)[1]
    fams = {k.family for k in KINDS.values()}
    assert fams <= set(FAMILY_BULLETS), (
        f"no bullet in docs/faults.md for {fams - set(FAMILY_BULLETS)}"
    )
    assert not [b for f, b in FAMILY_BULLETS.items() if f in fams and b not in families]
    absent = missing(KINDS, families)
    assert not absent, f"docs/faults.md's list of families names no {absent}"


def test_every_service_backend_and_recipe_is_in_its_services_md_section():
    parts = sections((DOCS / "services.md").read_text())
    bad = []
    for svc in registry.services().values():
        here = "".join(t for h, t in parts.items() if svc.label.lower().split()[0] in h)
        if not here:
            bad.append(f"no section for the service {svc.label}")
            continue
        bad += [f"{svc.label}: backend {b}" for b in missing([i.name for i in svc.backends], here)]
        recipes = [r for r, info in RECIPES.items() if _on(info.backends, svc)]
        bad += [f"{svc.label}: recipe {r}" for r in missing(recipes, here)]
    assert not bad, f"docs/services.md lacks: {bad}"


def _on(backends: Iterable[str], svc: registry.Service) -> bool:
    return any(registry.service_of(b).name == svc.name for b in backends)


def test_every_workload_is_in_verdicts_md():
    absent = missing(WORKLOADS, (DOCS / "verdicts.md").read_text())
    assert not absent, f"docs/verdicts.md names no {absent}"


def test_every_command_is_in_command_line_md():
    text = (DOCS / "command-line.md").read_text()
    spans = set(CODE.findall(text))
    absent = [
        " ".join(p)
        for p in commands()
        if not any(s.startswith("zkjepsen " + " ".join(p)) for s in spans)
    ]
    assert set(COMMANDS) <= {p[0] for p in commands()}
    assert not absent, f"docs/command-line.md names no `zkjepsen {absent}`"


def doc_paths() -> dict[str, set[str]]:
    """Every docs/….md path named anywhere a reader meets one: help texts, the package's
    sources (messages and docstrings), the docs and the README."""
    named: dict[str, set[str]] = {}
    for where, text in help_texts().items():
        # click wraps help at hyphens: "docs/client-\n  protocol.md" is one path
        text = re.sub(r"-\n\s+", "-", text)
        for p in DOC_PATH.findall(text):
            named.setdefault(p, set()).add(f"zkjepsen {where} --help")
    files = [*sorted((REPO / "src").rglob("*.py")), REPO / "README.md", *DOCS.rglob("*.md")]
    for f in files:
        for p in DOC_PATH.findall(f.read_text()):
            named.setdefault(p, set()).add(str(f.relative_to(REPO)))
    return named


def test_every_doc_path_named_exists():
    bad = {p: sorted(w) for p, w in doc_paths().items() if not (REPO / p).exists()}
    assert not bad, f"named but missing: {bad}"


def test_help_lists_every_name_of_its_registry():
    text = re.sub(r"\s+", " ", help_texts()["test"])
    workload = text.split("--workload TEXT", 1)[1].split("--", 1)[0]
    backend = text.split("--backend TEXT", 1)[1].split("--", 1)[0]
    assert not [w for w in WORKLOADS if w not in workload], workload
    assert not [b for b in registry.backend_names() if b not in backend], backend


# The current answers, above the history, are what a reader reads: short. The history below
# them is an index that grows by one line a lab note, by design (it was the index, not the
# answers, that passed the 400 lines this limit once counted over the whole file).
FINDINGS_MAX_LINES = 250


def test_findings_md_is_short_and_its_history_lists_every_lab_note():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import findings_index  # benchmarks/findings_index.py: what writes the history

    text = (DOCS / "findings.md").read_text()
    answers = text.split("\n## History\n", 1)[0]
    assert len(answers.splitlines()) <= FINDINGS_MAX_LINES
    assert findings_index.rewritten(text) == text, (
        "docs/findings.md's history is not current: .venv/bin/python benchmarks/findings_index.py"
    )
    assert len(findings_index.notes()) >= 34  # every dated section it ever had is kept


def test_findings_md_opens_with_the_tables_its_data_renders():
    """The current tables are what benchmarks/findings_current.py draws from its data (the
    cells measured from stores, and those carried from the lab notes), before the history."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import findings_current  # benchmarks/findings_current.py: what writes the tables

    text = (DOCS / "findings.md").read_text()
    assert findings_current.rewritten(text) == text, (
        "docs/findings.md's current tables are not current: "
        ".venv/bin/python benchmarks/findings_current.py"
    )
    assert text.index(findings_current.BEGIN) < text.index("## History")
    drawn = text[text.index(findings_current.BEGIN) : text.index(findings_current.END)]
    for q in findings_current.QUESTIONS:  # one table per question, none left empty
        assert (
            f"### {q.title}\n" in drawn
            and "No cell yet" not in drawn.split(f"### {q.title}")[1].split("###")[0]
        ), q.key


def test_the_checks_catch_what_they_look_for():
    doc = "Faults: `kill-leader`, `pause-client` and (`member-remove-leader+pause-client`).\n"
    assert missing(["kill-leader", "member-remove-leader", "kill-one"], doc) == ["kill-one"]
    assert missing(["pause-client"], "pause-client, in prose only") == ["pause-client"]
    parts = sections("# T\n\nintro\n## Redis\n`redlock`\n### Sub\n`x`\n## etcd\n`y`\n")
    assert "`x`" in parts["redis"] and "`y`" not in parts["redis"]
    assert DOC_PATH.findall("see docs/nemeses.md; docs/findings/2026-11.md.") == [
        "docs/nemeses.md",
        "docs/findings/2026-11.md",
    ]


def test_a_measured_cell_replaces_the_carried_one_and_names_its_command():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import findings_current

    q = findings_current.QUESTIONS[1]  # the services, measured in part
    carried = {
        "commands": {"old": "zkjepsen matrix --old"},
        "cells": [
            {"table": q.key, "row": "r", "col": "c", "k": 3, "n": 3, "date": "2026-11-24",
             "command": "old", "note": "x.md#y"},
            {"table": q.key, "row": "s", "col": "c", "k": 0, "n": 3, "date": "2026-11-24",
             "command": "old", "note": "x.md#y"},
        ],
    }  # fmt: skip
    cell = {"row": "r", "col": "c", "k": 1, "n": 4, "unknown": 1, "date": "2026-11-28"}
    measured = {q.key: {"command": "zkjepsen matrix --new", "started": "now", "cells": [cell]}}
    drawn = "\n".join(findings_current.table(q, measured, carried))
    assert "| r | 1/4 (25 %, 95 % CI 5-70 %), 1 unknown · 2026-11-28 · " in drawn
    assert "| s | 0/3 (0 %, 95 % CI 0-56 %) · 2026-11-24 · " in drawn
    assert "measured here, now: `zkjepsen matrix --new`" in drawn
    assert "carried from [the lab note](findings/x.md#y): `zkjepsen matrix --old`" in drawn


def test_a_pooled_question_sums_a_measured_cell_with_the_carried_one():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import dataclasses

    import findings_current

    q = dataclasses.replace(findings_current.QUESTIONS[1], pool=True)
    carried = {
        "commands": {"old": "zkjepsen matrix --old"},
        "cells": [
            {"table": q.key, "row": "r", "col": "c", "k": 1, "n": 2, "unknown": 1,
             "date": "2026-11-27", "command": "old", "note": "x.md#y"},
            {"table": q.key, "row": "s", "col": "c", "k": 0, "n": 2, "date": "2026-11-27",
             "command": "old", "note": "x.md#y"},
        ],
    }  # fmt: skip
    cell = {"row": "r", "col": "c", "k": 2, "n": 3, "unknown": 0, "date": "2026-11-28"}
    measured = {q.key: {"command": "zkjepsen matrix --new", "started": "now", "cells": [cell]}}
    drawn = "\n".join(findings_current.table(q, measured, carried))
    assert "| r | 3/5 (60 %, 95 % CI 23-88 %), 1 unknown · 2026-11-28 · a+b |" in drawn
    assert "| s | 0/2 (0 %, 95 % CI 0-66 %) · 2026-11-27 · a |" in drawn
    assert "a. carried from [the lab note](findings/x.md#y): `zkjepsen matrix --old`" in drawn
    assert "b. measured here, now: `zkjepsen matrix --new`" in drawn


def test_a_part_of_a_table_measured_in_parts_names_its_own_rows_runs_and_store():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import findings_current

    (q,) = [q for q in findings_current.QUESTIONS if q.key == "tooz"]
    whole, part = (
        findings_current.command_of(q),
        findings_current.command_of(q, "etcd", "tooz@etcd", 3),
    )
    assert (
        "--recipes tooz@zookeeper,tooz@etcd," in whole and "--store store/findings/tooz " in whole
    )
    assert "--recipes tooz@etcd --nemeses" in part and "--runs 3 " in part
    assert "--store store/findings/tooz/etcd --out store/findings/tooz/etcd/matrix.md" in part
