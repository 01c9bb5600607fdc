"""What `zkjepsen hunt` does once a run found something (docs/hunt.md, "When it has found
something"): confirm it, shrink it, write the pytest reproducer and a catalogue-style entry.

- **Confirm**: the run's own spec (its schedule, its seed) run again, up to `MORE` more times,
  until one run shows the same finding (`finding` says found, and at least one of the violations
  the finding is about recurs): "confirmed k of n", the original counted.
- **Shrink**: the existing greedy shrink (reproduce/shrink.py) on the run that found it, keeping
  the violations the finding is about (`target_kinds`: a split beyond a lease's nature keeps
  `lock:belief`, not the fencing and atomicity breaks that follow from any split).
- **Write**: the shrink's reproducer (`<run>/minimal/`, cli/minimal.py) copied into the hunt's
  folder, the catalogue entry (a `Scenario(...)` as reproduce/scenarios*.py hold them, its
  schedule as `steps(...)`) as `catalogue_entry.py`, and `finding.json` saying all of it.

Every run it makes goes into the hunt's folder. The pure parts (`target_kinds`, `recurred`,
`entry_text`, `hunt_case`) are unit-tested (tests/unit/test_hunt_finding.py).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.nemesis.generator import executed_items, items_text
from zkjepsen.report.junit import Case
from zkjepsen.reproduce.replay import violation_kinds
from zkjepsen.reproduce.shrink import shrink
from zkjepsen.run.fanout import Job
from zkjepsen.run.finding import finding, natured_parts
from zkjepsen.run.hunt import Choice
from zkjepsen.run.hunt_folder import FINDING_JSON
from zkjepsen.run.many import run_jobs
from zkjepsen.run.outcome import note_many, reraise
from zkjepsen.run.resolve import reportable_kinds
from zkjepsen.run.stored import StoredRun
from zkjepsen.spec import TestSpec

MORE = 2  # confirmation runs after the one that found it
# Parts whose invalidity follows from any belief overlap on an unfenced resource: the finding
# is the split itself (lock:belief), not these.
FOLLOW = ("fencing", "atomicity")
ENTRY_FILE = "catalogue_entry.py"
# A scenario's settings say what to run, not this run's name, seed or engine, nor the steering
# its schedule replaces.
NOT_IN_ENTRY = (
    "name",
    "seed",
    "engine",
    "generator",
    "fault_target",
    "fault_trigger",
    "max_faults",
)


def target_kinds(results: Any) -> set[str]:
    """The violations a finding is about, as `checker:kind` labels: what a confirmation must
    show again and what the shrink keeps. A split beyond a lease's nature: `lock:belief`;
    else every invalid part's kinds but the lock's, fencing's and atomicity's when the run's
    only splits were ones a lease allows (those parts follow from the splits)."""
    r: dict[str, Any] = results if isinstance(results, dict) else {}
    kinds = violation_kinds(r)
    raw = r.get("lock")
    lock: dict[str, Any] = raw if isinstance(raw, dict) else {}
    splits = int(lock.get("belief_overlap_count") or 0)
    beyond = int(lock.get("beyond_lease_count") or 0) + int(lock.get("unjudged_lease_count") or 0)
    if beyond and "lock:belief" in kinds:
        return {"lock:belief"}
    skip = {"lock", *FOLLOW} if splits else set()
    skip |= natured_parts(r)  # every violation of theirs a fault's nature (checker/nature.py)
    return {k for k in kinds if k.split(":", 1)[0] not in skip}


def recurred(results: Any, target: set[str]) -> bool:
    """A confirmation run shows the finding again: the hunt's own judgement says found, and
    at least one of the violations the original finding was about is among its violations."""
    reached, _ = finding(results)
    return reached == "found" and bool(target & violation_kinds(results))


@dataclass
class Confirmation:
    hits: int  # runs that showed it, the original included
    runs: int  # runs in all, the original included
    folders: list[Path] = field(default_factory=list)  # the confirmation runs'

    def line(self) -> str:
        return f"confirmed {self.hits} of {self.runs}"


def confirm(
    run: StoredRun,
    target: set[str],
    store_root: Path,
    more: int = MORE,
    parallel: int = 1,
    cluster: Any = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Confirmation:
    """The found run's spec (its recorded schedule and seed) run again, in waves of `parallel`,
    until one shows the finding again or `more` runs were made."""
    spec = copy.deepcopy(run.spec)
    spec.name = f"{run.spec.name or spec.test_name}-confirm"
    c = Confirmation(1, 1)
    try:
        while c.runs - 1 < more and c.hits == 1:
            wave = min(max(1, parallel), more - (c.runs - 1))
            jobs = [Job(copy.deepcopy(spec), tag=c.runs + i) for i in range(wave)]
            for o in run_jobs(jobs, None, parallel, store_root, keep_going=True, cluster=cluster):
                ok = recurred(o.run.results, target)
                c.hits += ok
                c.runs += 1
                c.folders.append(Path(o.run.store_dir))
                _, words = finding(o.run.results)
                progress(
                    f"  confirm {c.runs - 1}/{more}: {'the same' if ok else 'not seen'} "
                    f"({words[:100]}) {o.run.store_dir}"
                )
    except BaseException as e:
        reraise(e, note_many(e, c.folders, []))
    return c


def entry_name(fault: str, moment: str, program: str) -> str:
    """`hunt-etcd-blind-delete-pause-client-on-acquire`: the entry's name."""
    base = re.sub(r"\.[a-z]+$", "", Path(program.split()[-1]).name) if program else ""
    text = "-".join(x for x in ("hunt", base, fault, moment) if x)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def program_of(spec: dict[str, Any]) -> str:
    """What ran: the recipe, or a --client-cmd program's command."""
    if spec.get("client_cmd"):
        return f"the program `{spec['client_cmd']}`"
    return f"recipe {spec.get('recipe')!r}"


def entry_text(
    name: str,
    spec: dict[str, Any],
    schedule: str,
    kinds: set[str],
    shows: str,
    provenance: str,
) -> str:
    """A catalogue-style entry: the `Scenario(...)` reproduce/scenarios*.py would hold for
    this finding, its schedule as the generator calls that make it."""
    settings = "".join(f"        {k!r}: {v!r},\n" for k, v in spec.items())
    recipe = spec.get("recipe") or "exec"
    present = ", ".join(repr(k) for k in sorted(kinds))
    title = f"{shows} ({program_of(spec)} on {spec.get('backend') or 'zookeeper'})"
    sched = schedule.replace("\n", "\n    ")
    return (
        f"{_const(name)} = Scenario(\n"
        f"    {name!r},\n"
        f"    {title!r},\n"
        f"    {provenance!r},\n"
        "    {\n"
        f"{settings}"
        "    },\n"
        f"    {{{recipe!r}: expect(present=({present},))}},\n"
        f"    schedule={sched},\n"
        ")\n"
    )


def _const(name: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


@dataclass
class Settled:
    """A finding confirmed and shrunk (not yet written)."""

    run: StoredRun
    target: set[str]
    confirmation: Confirmation
    shrunk: Any  # the ShrinkResult, or None: not shrunk, or nothing recurred
    why: str  # the shrunk schedule in one line, or why there is none


def settle(
    folder: Path,
    found: dict[str, Any],
    *,
    shrink_budget_s: float | None,
    parallel: int = 1,
    cluster: Any = None,
    progress: Callable[[str], None] = lambda line: None,
    unshrunk: str = "not shrunk (--no-shrink)",
) -> Settled:
    """Confirm the run `found` (a hunt.jsonl line) names, then shrink it (unless
    `shrink_budget_s` is None: `unshrunk` says why). Every run it makes goes into `folder`."""
    run = StoredRun.load(Path(found["folder"]), need_results=True, need_schedule=True)
    target = target_kinds(run.results) or violation_kinds(run.results)
    progress(f"confirming run {found.get('run')} ({', '.join(sorted(target))}): up to {MORE} more")
    conf = confirm(run, target, folder, MORE, parallel, cluster, progress)
    progress(conf.line())
    if shrink_budget_s is None:
        return Settled(run, target, conf, None, unshrunk)
    res, why = _shrunk(run, target, folder, shrink_budget_s, parallel, cluster, progress)
    return Settled(run, target, conf, res, why)


@dataclass
class Written:
    """What a finding left in the hunt's folder."""

    reproducer: Path | None  # the pytest file, copied into the hunt's folder
    entry: Path | None  # catalogue_entry.py
    record: Path  # finding.json
    entry_text: str = ""
    confirmed: str = ""  # "confirmed 2 of 3"

    def paths(self) -> list[Path]:
        return [p for p in (self.reproducer, self.entry, self.record) if p is not None]


def write_finding(
    folder: Path, found: dict[str, Any], s: Settled, test_file: Path | None
) -> Written:
    """Into the hunt's folder: the reproducer `test_file` (written by the shrink's writer into
    the run's minimal/) copied beside hunt.jsonl, the catalogue entry of the shrunk schedule
    (else the original's), and finding.json saying what was confirmed, shrunk and written."""

    reproducer = None
    if test_file is not None:
        reproducer = folder / test_file.name
        shutil.copyfile(test_file, reproducer)
    faults = s.shrunk.best.faults if s.shrunk is not None else s.run.faults
    spec = s.shrunk.best.spec if s.shrunk is not None else s.run.spec
    origin = int(s.run.schedule.get("origin_ns") or 0)
    schedule = items_text(executed_items(faults, origin))
    defaults = TestSpec().to_json()  # the settings a person would write: those not default
    settings = {k: v for k, v in spec.to_json().items() if k not in defaults or v != defaults[k]}
    for key in NOT_IN_ENTRY:
        settings.pop(key, None)
    choice = found.get("choice") or {}
    name = entry_name(
        str(choice.get("fault", "")), str(choice.get("moment", "")), spec.client_cmd or ""
    )
    said = Choice.from_json(choice).describe() if choice else "?"
    shows = str(found.get("words") or ", ".join(sorted(s.target)))
    provenance = (
        f"Found by `zkjepsen hunt` on {stamp()} (its run {found.get('run')}, run seed "
        f"{found.get('seed')}): {said}; {s.confirmation.line()}; shrunk: {s.why}. "
        f"Evidence: {s.run.store_dir}."
    )
    text = entry_text(name, settings, schedule, s.target, shows, provenance)
    entry = folder / ENTRY_FILE
    entry.write_text(
        "# A catalogue-style entry for what `zkjepsen hunt` found: paste it into\n"
        "# src/zkjepsen/reproduce/scenarios*.py (and its list) to keep it as a scenario.\n"
        "from zkjepsen.nemesis.generator import fault, lanes, on, sleep, steps  # noqa: F401\n"
        "from zkjepsen.nemesis.triggers import *  # noqa: F403\n"
        "from zkjepsen.reproduce.scenario import Scenario, expect\n\n" + text
    )
    record: dict[str, Any] = {
        "run": found.get("run"),
        "folder": str(s.run.store_dir),
        "choice": choice,
        "words": found.get("words"),
        "kinds": sorted(s.target),
        "confirmed": {
            "hits": s.confirmation.hits,
            "runs": s.confirmation.runs,
            "folders": [str(p) for p in s.confirmation.folders],
        },
        "shrunk": s.why,
        "reproducer": str(reproducer) if reproducer else None,
        "entry": str(entry),
    }
    out = folder / FINDING_JSON
    out.write_text(json.dumps(record, indent=1, default=str))
    return Written(reproducer, entry, out, text, s.confirmation.line())


def _shrunk(
    run: StoredRun,
    target: set[str],
    folder: Path,
    budget_s: float,
    parallel: int,
    cluster: Any,
    progress: Callable[[str], None],
) -> tuple[Any, str]:
    keep, why = shrinkable(target, reportable_kinds(run.spec))
    if not keep:
        return None, why
    try:
        res = shrink(
            run,
            kinds=keep,
            budget_s=budget_s,
            store_root=folder,
            progress=progress,
            parallel=parallel,
            cluster=cluster,
        )
    except BadInput as e:  # the shrink's own refusal: the finding stands, unshrunk
        return None, f"not shrunk: {e}"
    if res.hits == 0:
        return None, (
            f"the violation recurred in none of {res.tries} replays of {res.best.summary()}; "
            "no reproducer written"
        )
    return res, f"{res.best.summary()}; reproduced {res.hits}/{res.tries}"


def shrinkable(target: set[str], known: set[str]) -> tuple[set[str], str]:
    """The violations the shrink can keep (those the workload's checkers report: a service's
    `recovery` part is not one), and, when none is, why the finding is not shrunk."""
    keep = target & known
    if keep:
        return keep, ""
    return set(), (
        f"not shrunk: {', '.join(sorted(target))} is not a violation the shrink can keep "
        f"(it keeps {', '.join(sorted(known))})"
    )


def stamp() -> str:
    return time.strftime("%Y-%m-%d")


def hunt_verdict(result: Any) -> Any:
    """The hunt's verdict, as `test`'s exit codes read it: invalid when a run found something,
    valid when none did and some run was valid, else unknown (no run could tell)."""
    if result.found:
        return False
    return True if True in result.valids else "unknown"


def hunt_properties(result: Any, strategy: str, seed: int, budget_s: float) -> dict[str, str]:
    """The hunt's coverage as a JUnit case's properties (strings)."""
    props = {
        "runs": str(result.runs),
        "wall_s": f"{result.wall_s:.0f}",
        "budget_s": f"{budget_s:g}",
        "strategy": strategy,
        "seed": str(seed),
        "pairs_covered": str(result.covered),
        "pairs_on_menu": str(result.pairs),
        "coverage": result.coverage_line(),
        "store": str(result.folder),
    }
    coverage = getattr(result, "coverage", None)  # the guidance's coverage map (run/hunt.py)
    if coverage is not None:
        c = coverage.to_json()
        props.update({f"coverage_{k}": str(c[k]) for k in ("least", "states", "cells") if k in c})
    picture = getattr(result, "picture", None)
    if picture is not None:
        props["coverage_picture"] = str(picture)
    return props


def hunt_case(
    result: Any,
    suite: str,
    props: dict[str, str],
    written: Written | None = None,
    name: str = "hunt",
) -> Any:
    """The hunt as ONE JUnit case (report/junit.py): failed when it found something (the
    message says what, and how often it was confirmed), passed when no run found anything and
    some run was valid, error when no run could tell; its coverage as properties."""
    valid = hunt_verdict(result)
    props = dict(props)
    lines = [result.coverage_line(), f"folder: {result.folder}"]
    message = ""
    if result.found:
        f = result.found
        message = f"run {f.get('run')}: {f.get('words')}"
        lines.append(f"found by run {f.get('run')}: {f.get('folder')}")
    if written is not None:
        record = json.loads(written.record.read_text())
        conf = record["confirmed"]
        props["confirmed"] = f"{conf['hits']}/{conf['runs']}"
        props["shrunk"] = str(record.get("shrunk"))
        if written.reproducer is not None:
            props["reproducer"] = str(written.reproducer)
        message += f"; confirmed {conf['hits']} of {conf['runs']}"
        lines += [f"{p.name}: {p}" for p in written.paths()]
    status = {True: "passed", False: "failed"}.get(valid, "error")
    if status == "error":
        message = "no run of the hunt could tell (each one's verdict unknown)"
    return Case(
        suite,
        name,
        status,
        message,
        "\n".join(lines),
        result.wall_s,
        valid,
        0,
        1.0,
        str(result.folder),
        props,
    )
