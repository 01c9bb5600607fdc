"""Verdicts as text: one line per checker, for the CLI, the pytest plugin and the matrix."""

from __future__ import annotations

import json


def summarise(res: dict) -> str:
    """One line per checker: how many violations, and the first one in a few words."""
    if res.get("valid") is False and isinstance(res.get("cannot_place"), dict):
        op = res["cannot_place"]  # a linearizability refutation
        return (f"{res.get('reason', 'not linearizable')}; after a linearizable prefix of "
                f"{res.get('longest_prefix_length')} ops, no order fits {op.get('op')} by "
                f"process {op.get('process')} ({op.get('status')})")
    if res.get("valid") is False and res.get("lost"):
        final = res.get("final_read") or {}
        return (f"{res['lost']} acknowledged increments lost: final read {final.get('value')}, "
                f"but {res.get('acknowledged')} adds were acknowledged")
    preferred = ["belief_overlaps", "effect_overlaps"]
    others = [k for k, v in res.items() if isinstance(v, list) and v and k not in preferred
              and res.get("valid") is not True]
    for key in preferred + others:
        items = res.get(key)
        if not items:
            continue
        count = res.get(f"{key[:-1]}_count", res.get(f"{key}_count", len(items)))
        first = items[0] if isinstance(items, list) else items
        if isinstance(first, dict) and "clients" in first:
            start, end = first.get("start"), first.get("end")
            when = f" at {start / 1e9:.2f}s-" + (f"{end / 1e9:.2f}s" if end else "end") \
                if isinstance(start, int) else ""
            faults = ", ".join(f.get("f", "?") for f in first.get("faults", [])) or "no fault"
            return (f"{count} {key.replace('_', ' ')}; first: clients {first['clients']}"
                    f"{when} during {faults}")
        return f"{count} {key.replace('_', ' ')}; first: {json.dumps(first, default=str)[:160]}"
    if res.get("valid") == "unknown":
        return str(res.get("error") or res.get("reason") or "")[:200]
    return ""
