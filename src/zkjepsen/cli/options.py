"""Option values shared by several commands: durations and `--param KEY=VALUE` scalars."""

from __future__ import annotations

from typing import Any

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


def scalar(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)
