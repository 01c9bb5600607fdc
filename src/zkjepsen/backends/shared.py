"""Flags several services declare alike (`--fsync strict|relaxed`: ZooKeeper's forceSync,
etcd's `--unsafe-no-fsync`, Redis's appendfsync): one command-line option, whose value belongs
to the run's service, whichever that is, and is read by that service alone.

Each declaring service owns its field (its settings check the value and record it), so the
command line gives the value, as typed, to every service that declares the flag
(`service_tables`: a matrix's rows take their own service's). A run has one service: `fold`
keeps, of those tables, the run's service's (`family`, once its recipe and backend say which),
so only that service's settings ever read the value (never ZooKeeper's first, carried over).
Pure functions of the services' declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zkjepsen.backends.plugin import Service, ServiceOption
from zkjepsen.errors import BadInput

FSYNC = ("strict", "relaxed")  # --fsync: each service's durable default, or the common tuning


def parse_fsync(text: str) -> str:
    if text not in FSYNC:
        raise BadInput(f"fsync must be strict or relaxed, not {text!r}")
    return text


def fsync_option(help: str, owner: str) -> ServiceOption:
    """A service's `--fsync strict|relaxed` (its settings' `fsync` field)."""
    return ServiceOption(
        "--fsync",
        "fsync",
        help,
        parse_fsync,
        metavar="strict|relaxed",
        commands=frozenset({"test", "cluster", "matrix", "scenario", "gate"}),
        owner=owner,
    )


def flag_of(svc: Service, field: str) -> str | None:
    opt = svc.option(field)
    return opt.flag if opt is not None else None


def shared_flags(services: Mapping[str, Service]) -> set[str]:
    """The flags more than one service declares."""
    seen: dict[str, int] = {}
    for svc in services.values():
        for opt in svc.options:
            if not opt.axis:
                seen[opt.flag] = seen.get(opt.flag, 0) + 1
    return {f for f, n in seen.items() if n > 1}


def is_shared(services: Mapping[str, Service], name: str, field: str) -> bool:
    svc = services.get(name)
    return svc is not None and flag_of(svc, field) in shared_flags(services)


def taken_by_all(parsers: tuple[Callable[[Any], Any], ...]) -> Callable[[Any], Any]:
    """A check of a shared flag's value: each declarer's parser takes it (BadInput when one
    does not); the value is kept as typed."""

    def check(value: Any) -> Any:
        for parse in parsers:
            parse(value)
        return value

    return check


def unique(pairs: list[tuple[Service, ServiceOption]]) -> list[tuple[Service, ServiceOption]]:
    """One (service, option) per flag (the first declarer's), its help naming what the flag
    means to each service that declares it."""
    by_flag: dict[str, list[tuple[Service, ServiceOption]]] = {}
    for svc, opt in pairs:
        by_flag.setdefault(opt.flag, []).append((svc, opt))
    out = []
    for group in by_flag.values():
        svc, opt = group[0]
        if len(group) > 1:
            text = " ".join(f"{s.label}: {o.help}" for s, o in group)
            # The value as typed, if every declarer's own parser takes it: which service it is
            # for is known only with the run's recipe and backend, and that service's settings
            # read it (registry.read_service), never the first declarer's.
            parsers = tuple(o.parse for _, o in group)
            opt = ServiceOption(**{**opt.__dict__, "help": text, "parse": taken_by_all(parsers)})
        out.append((svc, opt))
    return out


def fold(
    tables: dict[str, dict[str, Any]], services: Mapping[str, Service], family: str | None = None
) -> dict[str, dict[str, Any]]:
    """`tables` with the shared values folded into one service's: `family`'s when known (a
    lone table of shared values too: `[zookeeper] fsync` for an etcd run), else the only table
    with settings of its own, else (all are the same shared values) the first. Anything else
    is left for the caller to refuse (settings of two services)."""
    if len(tables) < 2 and (family is None or family in tables):
        return tables
    only_shared = {n for n, t in tables.items() if t and all(is_shared(services, n, f) for f in t)}
    own = [n for n in tables if n not in only_shared]
    if family is None:
        if len(own) == 1:
            family = own[0]
        elif not own and len({tuple(sorted(t.items())) for t in tables.values()}) == 1:
            family = next(iter(tables))
        else:
            return tables
    out = {family: dict(tables.get(family, {}))}
    target = services.get(family)
    _refuse_foreign_shared(tables, services, family, only_shared)
    for name, table in tables.items():
        if name == family:
            continue
        takes = target is not None and name in only_shared
        takes = takes and all(_same_flag(target, services[name], f) for f in table)
        if takes:
            for f, v in table.items():
                out[family].setdefault(f, v)
        else:
            out[name] = table
    if not out[family] and family not in tables:
        del out[family]  # nothing was its: the others' tables are left for the caller to refuse
    return out


def _refuse_foreign_shared(
    tables: dict[str, dict[str, Any]],
    services: Mapping[str, Service],
    family: str,
    only_shared: set[str],
) -> None:
    """A shared flag (`--fsync`) for a run whose service declares no such flag (memcached):
    one sentence naming the flag and the service, not "settings of more than one service"."""
    target = services.get(family)
    if target is None or family in tables:
        return
    for name in only_shared:
        for f in tables[name]:
            flag = flag_of(services[name], f)
            if flag is not None and not any(o.flag == flag for o in target.options):
                owners = sorted(s.label for s in services.values() if flag_of(s, f) == flag)
                raise BadInput(
                    f"{flag} is a setting of {', '.join(owners)}; {target.label} has none"
                )


def _same_flag(a: Service | None, b: Service, field: str) -> bool:
    return a is not None and flag_of(a, field) == flag_of(b, field)
