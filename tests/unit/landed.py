"""What a fault's end record carries when the fault was seen to land (faultkinds/landing.py), as
each family's nemesis writes it: for hand-made histories that mean a fault that landed (a test
of a miss leaves it out, or writes one that says it missed)."""

from __future__ import annotations

from typing import Any

from zkjepsen.faultkinds import KINDS


def observation(kind: str, targets: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The end record's fields (its `detail`'s observation; for a kind no declaration knows,
    the `observed` its nemesis recorded when it knew it) that say `kind` landed on `targets`."""
    t = list(targets)
    k = KINDS.get(kind)
    if k is None:
        return {"observed": {"landed": True, "why": "seen by a nemesis that knew it"}}
    dropped = {"dropped": {x: 12 for x in t}}
    detail: dict[str, Any] = {
        "frozen": {"frozen": t},
        "killed": {"killed": t},
        "dropped": dropped,
        "dropped+restarted": {**dropped, "restarted": True},
        "clock": {"offset_s": 5, "clock_seen": {x: _clock(5.0, None) for x in t}},
        "power-loss": {"lost": {x: {"lost_bytes": 587} for x in t}, "booted": t},
        "corrupted": {"file": "log.1", "flipped_offsets": [3, 9], "booted": t},
        "members": {"served": ["n1", "n2", "n4"], "intended": ["n1", "n2", "n4"]},
        "roll": {"served": {x: "3.9.3" for x in t}},
        "acted": {"acted": [{"event": "create-reply-lost"}]},
        "terminated": {"terminated": 1},
    }[k.observer]
    if k.observer == "clock" and "rate" in kind:
        detail = {"rate": 4.0, "clock_seen": {x: _clock(None, 4.0) for x in t}}
    return {"detail": detail}


def _clock(offset_s: float | None, rate: float | None) -> dict[str, Any]:
    return {"offset_s": offset_s, "rate": rate, "via": "probe", "at_ns": 1, "samples": 3}


def with_observation(kind: str, targets: Any, end: dict[str, Any] | None) -> dict[str, Any]:
    """`end` (an end record's extra fields) with the observation that makes `kind` land under
    it: what `end` says itself wins (its detail merged over the observation's)."""
    seen, end = observation(kind, targets), dict(end or {})
    detail = {**seen.pop("detail", {}), **(end.pop("detail", None) or {})}
    return {**seen, **end, **({"detail": detail} if detail else {})}
