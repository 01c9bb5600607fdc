"""Verdicts as a CI page reads them: JUnit XML (GitLab's `junit` report, Jenkins, GitHub's test
reporters), a GitHub Actions step summary (a Markdown table) and `::error` annotations.

Fed by what the commands already have: a run's verdict (its results.json table), its spec and
its folder. One test case per scenario / matrix cell run / scenario run: the suite names the
recipe and the service ("kazoo on zookeeper"), the case names the scenario. A failed case's
message is the first violation's line, its text the verdict's parts and the run's folder.

The XML follows the JUnit schema Jenkins' xUnit plugin ships (junit-10.xsd, the Ant/Surefire
format GitLab also reads): that schema allows `<properties>` only on a `<testsuite>`, so each
case is written in a suite of its own (same suite name for the cases of one recipe and
service) carrying that case's properties: power_upper_bound (a fraction), landed, violations,
seed, store and a few more.
"""

from __future__ import annotations

import os
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from zkjepsen.checker import Verdict, as_result
from zkjepsen.report.summary import power_of_results, summarise
from zkjepsen.spec import TestSpec
from zkjepsen.store.writable import check_output_file

STATUSES = ("passed", "failed", "skipped", "error")


@dataclass(frozen=True)
class Case:
    """One test case: a run's verdict as CI sees it. `status`: passed, failed (the verdict is
    invalid, or a scenario's outcome not the expected one), skipped (asked to stop, not run,
    n/a) or error (the verdict is unknown: the run could not tell)."""

    suite: str
    name: str
    status: str
    message: str = ""  # failed: the first violation's line; skipped / error: why
    text: str = ""  # the verdict's parts and the run's folder
    time_s: float = 0.0
    verdict: Any = "unknown"
    landed: int = 0
    bound: float = 1.0  # the upper bound on the per-fault violation rate (1.0: none known)
    folder: str = ""
    properties: Mapping[str, str] = field(default_factory=dict)


def verdict_word(valid: Any) -> str:
    return Verdict.of(valid).word


def suite_of(spec: TestSpec | None) -> str:
    """`kazoo on zookeeper`, `client program on etcd`: the recipe and the service."""
    if spec is None:
        return "? on zookeeper"
    what = spec.recipe or ("client program" if spec.client_cmd else "?")
    return f"{what} on {spec.backend or 'zookeeper'}"


def first_violation(results: Any) -> str:
    """The first invalid part's line, e.g. "lock: 21 belief overlaps; first: clients [5, 3] at
    17.78s-18.07s during pause-client"; '' when no part is invalid."""
    res = as_result(results)
    for name, part in res.parts.items():
        if part.valid is False and name != "power":
            return f"{name}: {summarise(part)}"
    return summarise(res) if res.valid is False else ""


def violation_count(results: Any) -> int:
    """How many violations the invalid parts found (beyond the few each one lists)."""
    res = as_result(results)
    total = 0
    for name, part in (res.parts or {"": res}).items():
        if part.valid is False and name != "power":
            kinds = {v.kind for v in part.violations} | set(part.counts)
            total += sum(part.count(k) for k in kinds) or 1
    return total


def folder_of(run: Any) -> str:
    """The run's folder as text; '' for a run that never had one (it failed before its folder
    was made, or was not run: `Path("")`, which would print as `.`, the current directory)."""
    store = getattr(run, "store_dir", None)
    return "" if store is None or str(store) in ("", ".") else str(store)


def verdict_text(run: Any) -> str:
    """The verdict's parts, how the run ended and its folder: a failure's (or a pass's) text."""
    results = run.results if isinstance(run.results, dict) else {}
    res = as_result(results)
    lines = [f"verdict: {verdict_word(run.valid)}"]
    for name, part in res.parts.items():
        said = "" if name == "power" else f"{verdict_word(part.valid)}  "
        lines.append(f"{name}: {said}{summarise(part)}".rstrip())
    early = results.get("early_stop") or {}
    if early.get("stopped_early"):
        lines.append(f"stopped {early.get('after_main_start_s', 0):g}s in: {early.get('why')}")
    if results.get("error"):
        lines.append(f"error: {results['error']}")
    lines.append(f"folder: {folder_of(run) or 'none (the run never started)'}")
    return "\n".join(lines)


def case_of(
    run: Any,
    name: str,
    *,
    suite: str | None = None,
    skipped: str = "",
    expected: tuple[bool, str] | None = None,
    spec: TestSpec | None = None,
) -> Case:
    """A run's test case. `skipped`: why it counts as skipped (asked to stop, not run);
    `expected`: a scenario's judgement (as expected?, why), which decides pass or fail instead
    of the verdict; `spec`: the run's spec when the run does not carry it."""
    results = run.results if isinstance(run.results, dict) else {}
    power = power_of_results(results)
    bound = power.upper() if power is not None else 1.0
    landed = power.opportunities() if power is not None else 0
    early = results.get("early_stop") or {}
    spec = getattr(run, "spec", None) or spec  # a run read back carries its own
    main_s = (
        float(early.get("after_main_start_s") or 0)
        if early.get("stopped_early")
        else (spec.time_limit_s if spec is not None else 0.0)
    )
    if expected is not None:
        status, message = ("passed", "") if expected[0] else ("failed", expected[1])
    elif run.valid is False:
        status, message = "failed", first_violation(results) or "invalid"
    elif skipped:
        status, message = "skipped", skipped
    elif run.valid is True:
        status, message = "passed", ""
    else:
        status, message = "error", _unknown_why(results)
    props = {
        "verdict": verdict_word(run.valid),
        "power_upper_bound": f"{bound:.4f}",
        "landed": str(landed),
        "violations": str(violation_count(results)),
        "seed": str(spec.seed) if spec is not None else "",
        "store": folder_of(run),
        "nemesis": ",".join(spec.nemesis) if spec is not None else "",
        "main_phase_s": f"{main_s:g}",
    }
    if power is not None:
        props["power"] = power.line()
    return Case(
        suite or suite_of(spec),
        name,
        status,
        message,
        verdict_text(run),
        main_s,
        run.valid,
        landed,
        bound,
        folder_of(run),
        props,
    )


def _unknown_why(results: Mapping[str, Any]) -> str:
    res = as_result(results)
    whys = [f"{n}: {p.reason}" for n, p in res.parts.items() if p.valid not in (True, False)]
    return "; ".join(whys[:2]) or str(results.get("error") or res.reason or "verdict unknown")


def matrix_cases(
    outcomes: Iterable[Any], not_applicable: Mapping[str, str] | None = None
) -> list[Case]:
    """A matrix's cases: one per cell run ("pause-client run 2" in suite "kazoo on
    zookeeper"), and one skipped case per n/a cell ("recipe|nemesis" -> why)."""
    cases: list[Case] = []
    seen: dict[Any, int] = {}
    for o in outcomes:
        row, nemesis = str(o.job.tag).split("|", 1)
        k = seen[o.job.tag] = seen.get(o.job.tag, 0) + 1
        spec = o.job.spec
        suite = f"{row} on {spec.backend or 'zookeeper'}"
        cases.append(case_of(o.run, f"{nemesis} run {k}", suite=suite, spec=spec))
    for cell, why in dict(not_applicable or {}).items():
        row, nemesis = cell.split("|", 1)
        cases.append(Case(row, nemesis, "skipped", f"n/a: {why}"))
    return cases


def _escape_free(text: str) -> str:
    """XML 1.0 cannot hold most control characters, even escaped: drop them."""
    return "".join(ch for ch in str(text) if ch in "\t\n\r" or ch >= " ")


def junit_tree(cases: list[Case], title: str) -> ET.Element:
    """<testsuites> with a <testsuite> per case (its properties, then its testcase)."""
    top = ET.Element("testsuites", name=title)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    for c in cases:
        suite = ET.SubElement(
            top,
            "testsuite",
            name=c.suite,
            tests="1",
            failures=str(int(c.status == "failed")),
            errors=str(int(c.status == "error")),
            skipped=str(int(c.status == "skipped")),
            time=f"{c.time_s:.3f}",
            timestamp=stamp,
        )
        if c.properties:
            props = ET.SubElement(suite, "properties")
            for k, v in c.properties.items():
                ET.SubElement(props, "property", name=k, value=_escape_free(v))
        case = ET.SubElement(suite, "testcase", name=c.name, classname=c.suite)
        case.set("time", f"{c.time_s:.3f}")
        if c.status in ("failed", "error", "skipped"):
            tag = {"failed": "failure", "error": "error", "skipped": "skipped"}[c.status]
            el = ET.SubElement(case, tag, message=_escape_free(c.message))
            if tag != "skipped":
                el.set("type", "violation" if tag == "failure" else "unknown")
                el.text = _escape_free(c.text)
        if c.text and c.status in ("passed", "skipped"):
            ET.SubElement(case, "system-out").text = _escape_free(c.text)
    for k in ("tests", "failures", "errors"):
        top.set(k, str(sum(int(s.get(k) or 0) for s in top)))
    top.set("time", f"{sum(c.time_s for c in cases):.3f}")
    return top


def write_junit(path: Path | str, cases: list[Case], title: str) -> None:
    root = junit_tree(cases, title)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # checked creatable before the runs
    Path(path).write_bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


def check_target(path: Path | str | None) -> None:
    """Refuse, before anything is created, a --junit-xml path that cannot be written."""
    if path is not None:
        check_output_file(path, "--junit-xml")


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary_table(cases: list[Case], title: str) -> str:
    """The Markdown table a GitHub step summary shows: one row per case."""
    head = [
        f"### {title}",
        "",
        "| scenario | verdict | landed faults | bound | first violation | folder |",
        "|---|---|---|---|---|---|",
    ]
    rows = []
    for c in cases:
        word = verdict_word(c.verdict) if c.status != "skipped" else f"skipped ({c.message})"
        first = c.message if c.status == "failed" else ""
        folder = f"`{c.folder}`" if c.folder else ""
        rows.append(
            f"| {_cell(c.suite + ': ' + c.name)} | {_cell(word)} | {c.landed} | "
            f"≤ {100 * c.bound:.1f} % | {_cell(first)} | {_cell(folder)} |"
        )
    return "\n".join(head + rows) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def error_annotations(cases: list[Case], title: str) -> list[str]:
    """One `::error title=…::message` workflow command per failing case."""
    return [
        f"::error title={_escape_property(f'{title}: {c.suite}: {c.name}')}::"
        + _escape_data(f"{c.message} ({c.folder})" if c.folder else c.message)
        for c in cases
        if c.status == "failed"
    ]


def publish(
    path: Path | str | None,
    cases: list[Case],
    title: str,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
) -> None:
    """Everything a CI page reads: the JUnit XML at `path` (if given); in GitHub Actions, the
    step summary's table (GITHUB_STEP_SUMMARY set) and one annotation per failing case
    (GITHUB_ACTIONS=true, on stdout where the runner reads workflow commands)."""
    env = os.environ if env is None else env
    if path is not None:
        write_junit(path, cases, title)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(summary_table(cases, title) + "\n")
    if env.get("GITHUB_ACTIONS") == "true":
        stream = out or sys.stdout
        for line in error_annotations(cases, title):
            print(line, file=stream)
        stream.flush()
