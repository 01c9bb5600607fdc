"""What a matrix's servers ran, service by service: the manifest's `services` tables (each
service's settings as the matrix gave them, an axis as a list), older manifests' flat keys read
back, the text a findings table's header says of them, and the cells a service's settings
cannot run."""

from __future__ import annotations

from typing import Any

from zkjepsen.backends.registry import backend_info, backends, service, services, settings_for
from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES, resolve_backend
from zkjepsen.spec import TestSpec


def manifest_services(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A manifest's `services` (each service's settings table, an axis as a list). Manifests
    from before services had tables kept ZooKeeper's flat (each service names its old keys in
    `legacy`); from before ZooKeeper versions, none: they ran ZooKeeper 3.8."""

    if "services" in settings:
        return settings["services"]
    out: dict[str, dict[str, Any]] = {}
    for svc in services().values():
        for key, field in svc.legacy.items():
            if settings.get(key) is not None:
                out.setdefault(svc.name, {})[field] = settings[key]
    return out or {"zookeeper": {"version": ["3.8"]}}


def services_settings(recipes: list[str], tables: dict, axes: dict) -> dict[str, dict[str, Any]]:
    """The manifest's `services`: for each service the recipes (`NAME[@BACKEND]`) run on, its
    settings as a matrix gave them (settled defaults filled in), an axis as a list."""

    out: dict[str, dict[str, Any]] = {}
    for rc in recipes:
        recipe, _, backend = rc.partition("@")
        family = _family(resolve_backend(recipe, backend or None))
        given = service(family).settings(**tables.get(family, {}))
        try:
            table = given.settled().to_json()
        except BadInput:  # its cells are n/a (without_driver says why): as given
            table = given.to_json()
        if family in axes:
            table[axes[family][0]] = list(axes[family][1])
        out[family] = table
    return out


def _family(backend: str) -> str:

    return backend_info(backend).family


def without_driver(spec: TestSpec, backend: str) -> str | None:
    """Why the cell cannot run with its service's settings (an etcd version without a driver
    for the recipe's language), or None."""

    language = RECIPES[spec.recipe].language if spec.recipe in RECIPES else ""
    try:
        settings_for(backend, spec.service).check(spec, language)
    except BadInput as e:
        return str(e)
    return None


def services_text(s: dict[str, Any]) -> str:
    """What the servers ran, each backend in its own words: `ZooKeeper 3.8` (its versions and
    the clients' suite), `etcd 3.4.23`, `Redis 7.0`... Manifests from before backends: ZooKeeper."""

    tables = manifest_services(s)
    out = []
    for name in s.get("servers") or {"zookeeper": 0}:
        info = backends().get(name)
        if info is None:
            text = name
        elif info.family in tables:
            table = tables[info.family]
            axis = next(((k, v) for k, v in table.items() if isinstance(v, list)), None)
            values = axis[1] if axis else [None]
            said = [
                service(info.family).settings(**{**table, **({axis[0]: v} if axis else {})})
                for v in values
            ]
            text = _joined([x.describe() for x in said]) or info.service or name
        else:
            text = info.service or name
        if text not in out:
            out.append(text)
    return ", ".join(out)


def _joined(texts: list[str]) -> str:
    """`ZooKeeper 3.4`, `ZooKeeper 3.9` -> `ZooKeeper 3.4, 3.9` (one label, its versions)."""
    if not texts or not texts[0]:
        return ""
    label = texts[0].split(" ")[0]
    rest = [t.removeprefix(label + " ") for t in texts]
    return f"{label} {', '.join(dict.fromkeys(rest))}"
