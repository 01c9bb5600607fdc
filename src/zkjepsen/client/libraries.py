"""The Python distributions one recipe's clients need beyond the shared ones (a recipe's
`RecipeInfo.distributions`, handed to the pool in its `ProgramPlan.libraries`): each with what
it requires, as installed on the host, mounted read-only into the clients' site directory,
dist-info included, so a library that finds its plugins by entry points (tooz's drivers, through
stevedore) or reads its own version (pbr) works there as here.

Mounted for that recipe's runs only: tooz's tenacity, say, would shadow the pinned one the etcd
image's `etcd3` needs. A requirement that is not installed is skipped (the recipe then fails to
import in the container, visibly, as a missing client library does).
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def parse(requirement: str) -> tuple[str, frozenset[str], str]:
    """`name[extra,...] spec; marker` -> (name, extras, marker)."""
    head, _, marker = requirement.partition(";")
    m = _NAME.match(head)
    if m is None:
        raise ValueError(f"not a requirement: {requirement!r}")
    extras = frozenset(e.strip() for e in (m.group(2) or "").split(",") if e.strip())
    return m.group(1), extras, marker.strip()


def key(name: str) -> str:
    """A distribution's normalized name (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wanted(marker: str, extras: frozenset[str]) -> bool:
    """Does a requirement with this marker apply, for a distribution asked for with `extras`?
    An extra's requirement only when that extra was asked for; other markers (a Python
    version, a platform) as the host's Python judges them."""
    if not marker:
        return True
    named = _EXTRA.findall(marker)
    if named:
        return any(e in extras for e in named)
    try:
        # here, not at the top: present wherever pip is, and only needed for markers
        from packaging.markers import Marker
    except ImportError:
        return True
    return bool(Marker(marker).evaluate({"extra": ""}))


def closure(roots: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions `roots` name, with everything they require (their extras'
    requirements too), each once; missing ones skipped."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [parse(r)[:2] for r in roots]
    while todo:
        name, extras = todo.pop()
        if key(name) in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key(name)] = dist
        for req in dist.requires or ():
            sub, sub_extras, marker = parse(req)
            if wanted(marker, extras):
                todo.append((sub, sub_extras))
    return list(seen.values())


def binds(roots: tuple[str, ...], site_dir: str) -> dict[str, dict]:
    """Host path -> read-only bind under `site_dir` of every top-level entry (packages,
    modules, their .libs, and the dist-info) of the closure of `roots`."""
    out: dict[str, dict] = {}
    for dist in closure(roots):
        tops = {f.parts[0] for f in dist.files or () if f.parts}
        for top in sorted(tops):
            if top.endswith(".pth") or top in ("..", "__pycache__"):
                continue
            host = Path(str(dist.locate_file(top))).resolve()
            if host.exists():
                out[str(host)] = {"bind": f"{site_dir}/{top}", "mode": "ro"}
    return out
