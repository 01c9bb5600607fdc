"""What a run's verdict says to the hunt and the gate: `found` (a violation the one
classification, checker/nature.py, calls a defect of the lock, or an invalid part it does not
classify), `close` (violations each of which is a lease's or a fault's nature, or near misses
a fence kept from the data), `landed` (a fault was an opportunity and nothing broke) or
`missed` (none was). Read from a run's results.json alone (run/gate.py's verdict lines,
run/hunt.py's rewards, reproduce/hunt_finding.py's confirmation)."""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.lease import LEASE
from zkjepsen.checker.nature import NATURES, WORDS


def natured_parts(r: dict[str, Any]) -> set[str]:
    """The invalid parts each of whose violations is a fault's nature (checker/nature.py: a
    killed holder's half-done update, a server that lost its state, a server's clock run
    ahead): they follow from the fault, not from the lock. The lock's own part is one when
    its only violations are effect overlaps (its splits are judged apart, by `finding`) and
    each is a fault's nature: writes out of token order after a restart that forgot."""
    out = {
        n
        for n, p in r.items()
        if n != "lock"
        and isinstance(p, dict)
        and p.get("valid") is False
        and p.get("beyond_nature_count") == 0
        and p.get("nature_counts")
    }
    lock = as_table(r.get("lock"))
    if (
        lock.get("valid") is False
        and set(as_table(lock.get("violation_counts"))) == {"effect"}
        and lock.get("effect_beyond_nature_count") == 0
        and lock.get("effect_nature_counts")
    ):
        out.add("lock")
    return out


def natures_of(r: dict[str, Any]) -> set[str]:
    """The natures (checker/nature.py NATURES) a run's violations had, as `natures_said`
    counts them."""
    return {k for k, n in _nature_counts(r)[0].items() if n}


def natures_said(r: dict[str, Any]) -> str:
    """What the faults' natures were, counted over the lock's splits and every other part's
    violations, with the faults that caused them: "3 a lease's (...), 1 a server that lost its
    state (kill-one)"."""
    counts, faults = _nature_counts(r)
    return ", ".join(
        f"{counts[k]} {WORDS[k]}" + (f" ({', '.join(sorted(faults[k]))})" if faults.get(k) else "")
        for k in NATURES
        if counts.get(k)
    )


def _nature_counts(r: dict[str, Any]) -> tuple[dict[str, int], dict[str, set[str]]]:
    """(nature -> how many violations had it, nature -> the fault kinds that caused them)."""
    counts: dict[str, int] = {}
    faults: dict[str, set[str]] = {}
    for n, p in r.items():
        if not isinstance(p, dict):
            continue
        own = [p.get("belief_overlaps"), p.get("effect_natures")] if n == "lock" else None
        for listed in own or [p.get("natures")]:
            for rec in listed if isinstance(listed, list) else ():
                f = rec.get("nature_fault") if isinstance(rec, dict) else None
                if isinstance(f, dict) and rec.get("nature") in NATURES:
                    faults.setdefault(rec["nature"], set()).add(str(f.get("kind")))
        for table in (p.get("nature_counts"), p.get("effect_nature_counts")):
            for k, c in as_table(table).items():
                counts[k] = counts.get(k, 0) + (c if isinstance(c, int) else 0)
    if n_lease := as_table(r.get("lock")).get("lease_split_count"):
        counts[LEASE] = max(counts.get(LEASE, 0), int(n_lease))
    return counts, faults


def finding(results: Any) -> tuple[str, str]:
    """(what the run reached: found/close/landed/missed, in words). Found: a violation the one
    classification (checker/nature.py) calls a defect of the lock, or an invalid part it does
    not classify; close: violations each of which is a lease's or a fault's nature."""
    r: dict[str, Any] = results if isinstance(results, dict) else {}
    lock: dict[str, Any] = as_table(r.get("lock"))
    splits = lock.get("belief_overlap_count") or 0
    beyond = (lock.get("beyond_lease_count") or 0) + (lock.get("unjudged_lease_count") or 0)
    # A lock judged through its fence (property=effect) and valid: its splits, beyond a
    # lease's nature or not, are near misses the fence kept from the data, not findings.
    fenced = bool(beyond) and lock.get("valid") is True
    if fenced:
        beyond = 0
    lease_only = splits > 0 and beyond == 0 and not fenced
    # a split a lease or a fault allows on an unfenced resource breaks its data too: the
    # lock's, fencing's and atomicity's findings then follow from the splits
    follow = {"lock", "fencing", "atomicity"} if lease_only else set()
    # a part each of whose violations is a fault's nature (a killed holder's half-done update,
    # tokens reused by a server that restarted empty, a grant a fast server clock ended)
    natured = natured_parts(r)
    follow |= natured
    # a server that could not boot after a disk fault is that fault's nature (the recovery
    # part says so): a lock that stalls with it follows from it
    unrecovered = as_table(r.get("recovery")).get("valid") is False
    follow |= {"recovery", "liveness"} if unrecovered else set()
    bad = [
        n
        for n, p in r.items()
        if isinstance(p, dict) and p.get("valid") is False and n not in follow
    ]
    if beyond:
        return "found", f"{beyond} of {splits} belief overlaps beyond a lease's or a fault's nature"
    if bad:
        return "found", "invalid: " + ", ".join(bad)
    if unrecovered:
        stalled = as_table(r.get("liveness")).get("valid") is False
        return "close", RECOVERY_WORDS + (" (and the lock stalled with it)" if stalled else "")
    power = as_table(r.get("power"))
    if r.get("error") and not r.get("lock"):  # a run that ended in an error, not a verdict
        return "missed", f"the run ended in an error: {str(r['error'])[:300]}"
    if fenced:
        return "close", f"{splits} belief overlaps, the fence held (lock valid by effect)"
    if lease_only or natured:
        said = natures_said(r)
        what = f"{splits} belief overlaps" if splits else "violations"
        parts = f" (invalid: {', '.join(sorted(natured))})" if natured else ""
        return "close", f"{what}{parts}, each a lease's or a fault's nature: {said}"
    if lock.get("near_miss_count"):
        return "close", f"{lock['near_miss_count']} near misses (the fence held)"
    if power.get("opportunities"):
        return "landed", str(power.get("line") or "")
    return "missed", str(power.get("reason") or power.get("line") or "no fault landed")


RECOVERY_WORDS = "a server did not recover from the fault (recovery invalid): the fault's nature"


def as_table(v: Any) -> dict[str, Any]:
    """A part of results.json as a table ({} when it is absent or not one)."""
    return v if isinstance(v, dict) else {}
