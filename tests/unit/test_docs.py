"""The documentation stays a guide and stays inside the repository: the README is short, every
relative link in the README and docs/ leads somewhere, and no file points outside the checkout
(only the tests and the benchmark that read the external history corpus name where it lives)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 310  # "a guide of at most ~300 lines"

# Files that read the external corpus (it is never copied into the repository).
CORPUS_READERS = {"tests/unit/test_corpus.py", "benchmarks/checker.py"}
SCANNED = ["README.md", "docs", "src", "tests", "benchmarks", ".ci", "run", "pyproject.toml"]
BINARY = {".gz", ".so", ".png", ".jar", ".class", ".pyc", ".o"}
# Spelled in pieces so that this file does not name them itself.
OUTSIDE = [
    "../" + "shared",
    "/work/" + "shared",
    "DESIGN" + ".md",
    "RECIPES" + ".md",
    "FIELD" + "-NOTES",
]

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.M)


def text_files() -> list[Path]:
    out = []
    for name in SCANNED:
        top = REPO / name
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        out += [
            p
            for p in paths
            if p.is_file()
            and p.suffix not in BINARY
            and not any(part == "__pycache__" or part.endswith(".egg-info") for part in p.parts)
        ]
    return out


def outside_pointers(text: str) -> list[str]:
    return [word for word in OUTSIDE if word in text]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    plain = CODE.sub(lambda m: m.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", plain).replace(" ", "-")


def anchors(md: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", md.read_text()))}


def broken_links(md: Path) -> list[str]:
    prose = CODE.sub("", FENCE.sub("", md.read_text()))
    bad = []
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (md.parent / path).resolve() if path else md
        if not dest.exists():
            bad.append(f"{md.relative_to(REPO)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{md.relative_to(REPO)}: {target} (no such heading)")
    return bad


def test_readme_is_a_short_guide():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_keeps_the_two_commands():
    text = (REPO / "README.md").read_text()
    assert "./run demo" in text and "./run test" in text
    assert "exec ./run test" in (REPO / ".ci" / "run").read_text()


def test_nothing_points_outside_the_repository():
    bad = []
    for p in text_files():
        rel = p.relative_to(REPO).as_posix()
        if rel in CORPUS_READERS:
            continue
        found = outside_pointers(p.read_text(errors="replace"))
        bad += [f"{rel}: {w}" for w in found]
    assert not bad, bad


def test_every_relative_link_resolves():
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    bad = [b for md in docs for b in broken_links(md)]
    assert not bad, bad


def test_the_checks_catch_what_they_look_for(tmp_path):
    assert outside_pointers("see " + "../" + "shared" + "/x") == ["../" + "shared"]
    assert outside_pointers("see docs/findings.md") == []
    assert slug("The checker against Porcupine, on Porcupine's own benchmark") == (
        "the-checker-against-porcupine-on-porcupines-own-benchmark"
    )
    assert slug("Why the 3.4 image runs JDK 17") == "why-the-34-image-runs-jdk-17"
    (tmp_path / "b.md").write_text("# Here it is\n")
    md = tmp_path / "a.md"
    md.write_text(
        "[ok](b.md) [ok](b.md#here-it-is) [web](https://x.org) `[code](nowhere.md)`\n"
        "[gone](c.md) [bad](b.md#nowhere)\n```\n[fenced](nowhere.md)\n```\n"
    )
    global REPO
    saved, REPO = REPO, tmp_path
    try:
        assert broken_links(md) == [
            "a.md: c.md (no such file)",
            "a.md: b.md#nowhere (no such heading)",
        ]
    finally:
        REPO = saved


def test_the_sample_config_loads_as_a_test() -> None:
    """examples/etcd-pause.toml, which the README shows, is a valid test (names resolved too)."""
    from zkjepsen.cli.config import read_config, with_config
    from zkjepsen.run.resolve import spec_from_json, validate_spec

    path = REPO / "examples" / "etcd-pause.toml"
    spec = spec_from_json(with_config(read_config(path), {}, path))
    validate_spec(spec)
    assert (spec.backend, spec.nemesis, spec.fault_trigger) == (
        "etcd",
        ["pause-client"],
        "acquired",
    )
    assert spec.params == {"resource": "fenced", "property": "effect"}
