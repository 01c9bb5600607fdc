"""`--zk-version`, `--zk-versions` and `--client-suite`: which ZooKeeper the servers run and
which suite's client libraries (Curator, go-zookeeper) the clients run
(backends/zookeeper/versions.py).
Checked when parsed, so a bad value is one sentence and exit 254 before anything exists."""

from __future__ import annotations

import click

from zkjepsen.backends.zookeeper import versions as zkversions


def check_version(ctx, param, value):
    return None if value is None else zkversions.get(value).name


def _suite(ctx, param, value):
    if value is not None:
        zkversions.client_suite(value)
    return value


def _versions(ctx, param, value):
    return None if value is None else zkversions.parse_list(value)


def zk_version_option(f):
    f = click.option(
        "--client-suite",
        default=None,
        metavar="SUITE",
        callback=_suite,
        help="The clients' Debian suite, i.e. their Curator and go-zookeeper: bullseye "
        "(Curator 2.7.1), bookworm (5.4.0), trixie (5.7.1), or a ZooKeeper version naming "
        "one. Default: the servers' own.",
    )(f)
    return click.option(
        "--zk-version",
        default=None,
        metavar="VERSION",
        callback=check_version,
        help=f"ZooKeeper version of the servers: {', '.join(zkversions.VERSIONS)} "
        f"(default {zkversions.DEFAULT}).",
    )(f)


def zk_versions_option(f):
    return click.option(
        "--zk-versions",
        default=None,
        metavar="V1,V2,...",
        callback=_versions,
        help="Run every cell on each of these ZooKeeper versions (e.g. 3.4,3.8,3.9).",
    )(f)


def _etcd_version(ctx, param, value):
    from zkjepsen.backends.etcd import versions as etcd_versions

    return None if value is None else etcd_versions.get(value).name


def etcd_version_option(f):
    from zkjepsen.backends.etcd import versions as etcd_versions

    choices = ", ".join(f"{v.name} ({v.suite}'s {v.etcd})" for v in etcd_versions.VERSIONS.values())
    return click.option(
        "--etcd-version",
        default=None,
        metavar="VERSION",
        callback=_etcd_version,
        help=f"etcd version of the servers (and their clients): {choices}; default "
        f"{etcd_versions.DEFAULT}.",
    )(f)
