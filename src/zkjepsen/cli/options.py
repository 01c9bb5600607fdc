"""Option values shared by several commands: durations and `--param KEY=VALUE` scalars."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from zkjepsen.errors import BadInput


def parse_duration(text: str, what: str) -> float:
    """'4s', '500ms', '2m' or a bare number of seconds."""
    t = text.strip().lower()
    try:
        for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
            if t.endswith(suffix):
                return float(t[: -len(suffix)]) * scale
        return float(t)
    except ValueError:
        raise BadInput(f"{what} {text!r} is not a duration; write e.g. 4s, 500ms or 2m") from None


def rate(text: str, what: str) -> float:
    """A rate given as a number (its range is the spec's to check)."""
    try:
        return float(text)
    except ValueError:
        raise BadInput(
            f"{what} {text!r} is not a number; give a rate between 0 and 1, e.g. 0.05"
        ) from None


def scalar(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def parse_params(params) -> dict:
    """--param KEY=VALUE, each value read as a TOML-like scalar."""
    extra = {}
    for p in params:
        k, sep, v = p.partition("=")
        if not sep or not k:
            raise BadInput(f"--param {p!r} is not KEY=VALUE")
        extra[k] = scalar(v)
    return extra


def positive_duration(text: str, what: str) -> float:
    """A duration that must be more than zero and finite (a timeout, a budget)."""
    import math

    seconds = parse_duration(text, what)
    if not math.isfinite(seconds) or seconds <= 0:
        raise BadInput(f"{what} {text!r} must be a positive, finite duration, e.g. 4s or 500ms")
    return seconds


# One server of a ZooKeeper connect string: a host name or IPv4 address, or [IPv6], then an
# optional :port.
_SERVER = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::([0-9]+))?$"
)


def _host_ok(host: str) -> bool:
    """A name a resolver takes (labels of 1-63 characters, 253 in all) or an IP address: what
    the regular expression lets through but no connection could use (`a..b`, `256.1.1.1`) is
    the user's mistake, not the program's failure to connect."""
    import ipaddress

    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    if host.replace(".", "").isdigit():
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return False
        return True
    labels = host.split(".")
    return len(host) <= 253 and all(0 < len(x) <= 63 and not x.startswith("-") for x in labels)


def check_hosts(text: str, what: str = "--hosts") -> str:
    """A ZooKeeper connect string, `host[:port],host[:port]...[/chroot]`, checked before
    anything tries to connect to it."""
    servers, _, chroot = text.strip().partition("/")
    fix = "give host:port[,host:port...], e.g. 172.18.0.2:2181,172.18.0.3:2181"
    parts = servers.split(",")
    for part in parts:
        m = _SERVER.match(part.strip())
        if (
            not m
            or (m.group(1) is not None and not 0 < int(m.group(1)) < 65536)
            or not _host_ok(part.strip().rsplit(":", 1)[0] if m.group(1) else part.strip())
        ):
            raise BadInput(f"{what} {text!r}: {part.strip()!r} is not a host[:port]; {fix}")
    if chroot and not re.match(r"^[^\s/][^\s]*$", chroot):
        raise BadInput(f"{what} {text!r} has a malformed chroot /{chroot}; {fix}")
    return text.strip()


# ---- click types and callbacks: values refused as they are parsed, before anything runs -----
class NonEmptyPath(click.Path):
    """A path whose empty value is refused: click reads `--store ""` as the current directory."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("is empty; give a path, or leave the option out", param, ctx)
        return super().convert(value, param, ctx)


STORE_PATH = NonEmptyPath(path_type=Path)
RUN_ID = re.compile(r"^zkj-[A-Za-z0-9][A-Za-z0-9-]*$")  # as harness/resources.new_run_id makes


def not_empty(ctx, param, value):
    """An option's value (or each of a repeatable one's) must not be empty: `--engine ""` is
    not the default engine, it is a mistake."""
    for v in value if isinstance(value, tuple) else (value,):
        if v is not None and not str(v).strip():
            raise click.BadParameter("is empty; give a value, or leave the option out")
    return value


def run_ids(ctx, param, value):
    """Run ids (`zkj-<time>-<hex>`, as `cleanup --dry-run` lists them), checked before the
    engine is asked about them."""
    for v in value if isinstance(value, tuple) else (value,):
        if v is not None and not RUN_ID.match(v):
            raise click.BadParameter(
                f"{v!r} is not a run id (zkj-YYYYmmddHHMMSS-xxxxxxxx, as `zkjepsen cleanup "
                "--dry-run` lists them)"
            )
    return value


def image_ref(ctx, param, value):
    """A local image name, checked as a run's `--image` is (run/spec.py)."""
    from zkjepsen.spec import IMAGE_REF

    if value is not None and not IMAGE_REF.match(value):
        raise click.BadParameter(
            f"{value!r} is not a valid image reference; give a local image name such as "
            "zkjepsen/zookeeper:mytag"
        )
    return value


def _junit_target(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from zkjepsen.report.junit import check_target

    check_target(value)  # one sentence before anything is created
    return value


def junit_option(f: Any) -> Any:
    """`--junit-xml PATH` (report/junit.py); GitHub's step summary and annotations come with
    its environment variables, with or without it."""
    return click.option(
        "--junit-xml",
        "junit_xml",
        default=None,
        metavar="PATH",
        callback=_junit_target,
        help="Write the verdicts as JUnit XML (one test case per run) for CI.",
    )(f)
