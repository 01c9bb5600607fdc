"""Each service's own command-line options (its versions, the clients' suite, tickTime...),
registered from what the service declares (`backends/<service>/service.py`: `ServiceOption`s),
so no command names a service. Checked when parsed, so a bad value is one sentence and exit
254 before anything exists.

A command takes them with `@service_options("test")` and `**service_opts`; `service_tables`
turns the given ones into the services' settings tables (`{"zookeeper": {"version": "3.9"}}`,
the same tables a TOML config gives as `[zookeeper]`), `service_axes` the axes of a matrix or
a scenario run (`--zk-versions 3.4,3.9`: one row per version)."""

from __future__ import annotations

from typing import Any

import click

from zkjepsen.errors import BadInput


def _options(command: str) -> list[tuple[Any, Any]]:
    from zkjepsen.backends.registry import services

    return [
        (svc, opt) for svc in services().values() for opt in svc.options if command in opt.commands
    ]


def _callback(parse):
    def check(ctx, param, value):
        return None if value is None else parse(value)

    return check


def service_options(command: str):
    """Add every service's options that `command` takes."""

    from zkjepsen.backends.shared import unique

    def add(f):
        for _svc, opt in reversed(unique(_options(command))):
            f = click.option(
                opt.flag,
                opt.dest,
                default=None,
                type=click.IntRange(*opt.int_range) if opt.int_range else None,
                metavar=opt.metavar,
                callback=_callback(opt.parse),
                help=opt.help,
            )(f)
        return f

    return add


def service_tables(command: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services' settings tables of the options given (not the axes)."""
    out: dict[str, dict[str, Any]] = {}
    for svc, opt in _options(command):
        if not opt.axis and values.get(opt.dest) is not None:
            out.setdefault(svc.name, {})[opt.field] = values[opt.dest]
    return out


def service_axes(command: str, values: dict[str, Any]) -> dict[str, tuple[str, list[Any]]]:
    """service -> (field, its values) of the axis options given; an axis and the same field's
    single option are refused together (`--zk-version` every run, or `--zk-versions` an axis)."""
    out: dict[str, tuple[str, list[Any]]] = {}
    for svc, opt in _options(command):
        if opt.axis and values.get(opt.dest):
            single = svc.option(opt.field)
            if single is not None and values.get(single.dest) is not None:
                raise BadInput(f"give {single.flag} (every run) or {opt.flag} (an axis), not both")
            out[svc.name] = (opt.field, list(values[opt.dest]))
    return out


def refuse_foreign(tables: dict[str, dict[str, Any]], backend: str) -> None:
    """Bad input: options of a service other than `backend`'s (`--etcd-version` for Redis)."""
    from zkjepsen.backends.registry import backend_info, service, services
    from zkjepsen.backends.shared import fold

    family = backend_info(backend).family
    for name, table in fold(tables, services(), family).items():
        if name != family:
            svc = service(name)
            raise BadInput(svc.refusal(svc.settings(**table), backend))


def settings_of(backend: str, tables: dict[str, dict[str, Any]]):
    """`backend`'s service's settings from the given tables, settled; others refused."""
    from zkjepsen.backends.registry import backend_info, service, settings_for

    refuse_foreign(tables, backend)
    family = backend_info(backend).family
    table = tables.get(family)  # a flag several services declare (--fsync) is in each's
    return settings_for(backend, service(family).settings(**table) if table else None)
