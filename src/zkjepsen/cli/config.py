"""A `--config FILE.toml` of test settings, as `test` and `hunt` read it: the file read safely,
the command line's settings over its own (the command line wins), both checked, and its
`engine`. One reader for every command that takes a config (docs/command-line.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.run.resolve import settle, spec_from_json
from zkjepsen.run.spec import read_spec


def config_engine(value: Any, path: Path | None) -> str:
    """A config's `engine`: the engine the run uses (as --engine), checked as --engine is."""
    from zkjepsen.docker.engine import parse_engines

    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"config {path}: engine must be a Docker context name or URL, not {value!r}")
    try:
        parse_engines((value,))
    except BadInput as e:
        raise BadInput(f"config {path}: {e}") from None
    return value


def read_config(path: Path) -> dict[str, Any]:
    from zkjepsen.store.config import read_toml

    # a named pipe or a device is refused, not read; a deeply nested one is one sentence
    return read_toml(path, "config")


def with_config(toml: dict[str, Any], cli: dict[str, Any], path: Path | None) -> dict[str, Any]:
    """The settings of a run: the config file's, and the command line's over them (the command
    line wins; `--param`s are added to the file's `params`, a key in both taking the command
    line's value). Both are validated: a file value hidden by an option is checked as if the
    file won, so a config that works only because an option covers its mistake is refused."""
    file_error = None
    try:
        if path is not None:  # without a file, the command line's own mistakes speak for it
            # its values, each on its own: whether a setting is read is the whole run's to say
            # (a file's recipe kazoo and the command line's redis-setnx with its lock_ttl_s)
            settle(read_spec({**cli, **toml}))
    except BadInput as e:
        file_error = str(e)
    hidden = f"config {path}: {file_error} (the command line sets this too and wins, but the file "
    hidden += "must be valid on its own)"
    if file_error and "params" in cli and not isinstance(toml.get("params", {}), dict):
        raise BadInput(hidden)
    merged = {**toml, **cli}
    for key, value in cli.items():  # params and a service's table: the command line's keys win
        if isinstance(value, dict) and isinstance(toml.get(key), dict):
            merged[key] = {**toml[key], **value}
    try:
        spec_from_json(merged)  # what will run
    except BadInput as e:
        if str(e) == file_error:
            raise BadInput(f"config {path}: {e}") from None  # the file's own mistake
        raise
    if file_error:
        raise BadInput(hidden)
    return merged
