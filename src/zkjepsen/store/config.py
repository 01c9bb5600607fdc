"""A TOML config, read through the one opener (store/regular.py): a regular file of at most
MAX_CONFIG bytes, nested at most MAX_DEPTH levels (tomllib recurses in Python on nested arrays
and inline tables: deeper, one sentence, never RecursionError). Apart from regular.py because
tomllib loads datetime, which `zkjepsen check` has no use for."""

from __future__ import annotations

import os
import tomllib
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.store.regular import MAX_CONFIG, MAX_DEPTH, depth, read_text, too_deep


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML nested at most MAX_DEPTH levels; BadInput naming `where` for anything else."""
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise too_deep(where) from None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"cannot read {where}: {e}") from None
    if depth(doc) > MAX_DEPTH:
        raise too_deep(where)
    return doc


def read_toml(path: str | os.PathLike[str], what: str, limit: int = MAX_CONFIG) -> dict[str, Any]:
    """A TOML file read through the opener (regular, bounded, nested at most MAX_DEPTH)."""
    return parse_toml(read_text(path, what, limit), f"{what} {os.fspath(path)}")
