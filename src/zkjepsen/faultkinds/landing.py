"""Did a fault land? One pure predicate, `landing(kind, start, end)`, over the two records the
nemesis wrote for it (their `value` tables: targets, detail, error, landed...). A fault
**landed** only when its effect was observed at its target, and its implementation
(nemesis/<family>.py) wrote that observation into the fault's `detail`; otherwise it
**missed**, and `why` says why in one short phrase. The nemesis calls it when it writes a
fault's end (`observed` in nemesis.jsonl and schedule.json); checker/power.py calls it on the
history and counts only landed faults in the power line.

Each kind declares its **observer** (`FaultKind.observer`), a function of the detail: what it
reads, and when that means landed, is `OBSERVERS`' docstrings (docs/verdicts.md says it for
the reader). What every kind shares comes first: a fault whose apply raised never went in; one
whose trigger's state had ended when it went in (`landed: false`), or whose holder had let go
when it was hit (`holding_when_hit: false`), missed that state; so did one aimed at a master a
Redlock holder shares (`shared-master`) whose master held no such holder's lock the instant
before the hit (`held_on_master: false`, nemesis/redlock.py). A record without the
observation its kind needs (a run stored before observations existed) is missed, "no
observation recorded".

Pure: imports nothing of zkjepsen but the declarations' table (passed in, not imported: this
module sits under `faultkinds/__init__.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

NO_OBSERVATION = "no observation recorded"
WHY_CHARS = 160  # an error's words are cut here: a why is a phrase, not a log


class Landing(NamedTuple):
    """Whether a fault landed, and why (what was seen, or what was not)."""

    landed: bool
    why: str


Detail = Mapping[str, Any]
Observer = Callable[[list[str], Detail], Landing]


def _missed(why: str) -> Landing:
    return Landing(False, why)


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> set[str]:
    return {str(x) for x in value} if isinstance(value, (list, tuple, set)) else set()


def frozen(targets: list[str], d: Detail) -> Landing:
    """`frozen`: the targets seen frozen (docker's State.Paused, read after the freeze).
    Landed iff every target is in it."""
    if "frozen" not in d:
        return _missed(NO_OBSERVATION)
    return _every(targets, _names(d["frozen"]), "seen frozen", "never seen frozen", d, "not_frozen")


def killed(targets: list[str], d: Detail) -> Landing:
    """`killed`: the targets whose process was seen gone after the kill (container not running,
    or the supervised server's process gone). Landed iff every target is in it."""
    if "killed" not in d:
        return _missed(NO_OBSERVATION)
    return _every(targets, _names(d["killed"]), "seen gone", "never seen gone", d, "not_killed")


def _every(
    targets: list[str], seen: set[str], yes: str, no: str, d: Detail, states: str
) -> Landing:
    if not targets:
        return _missed("no target")
    unseen = [t for t in targets if t not in seen]
    if not unseen:
        return Landing(True, yes)
    # how the unseen ones were found instead (e.g. "exited": already gone), when one was read
    how = sorted({str(s) for t, s in _table(d.get(states)).items() if t in unseen and s})
    return _missed(no + (f" ({', '.join(how)})" if how else ""))


def dropped(targets: list[str], d: Detail) -> Landing:
    """`dropped`: {container: packets its DROP rules of this fault dropped}, read from the
    iptables counters at undo, before the rules went. Landed iff some packet was dropped."""
    if "dropped" not in d:
        return _missed(NO_OBSERVATION)
    counts = _table(d["dropped"])
    total = sum(int(n) for n in counts.values() if isinstance(n, int) and not isinstance(n, bool))
    if total > 0:
        return Landing(True, f"{total} packet{'' if total == 1 else 's'} dropped")
    return _missed("counters not read" if not counts else "no packet dropped")


def restarted_under_cut(targets: list[str], d: Detail) -> Landing:
    """partition-redlock-restart: the cut dropped packets (`dropped`) and a master was
    restarted while a cut client held (`restarted`)."""
    cut = dropped(targets, d)
    if not cut.landed:
        return cut
    if d.get("restarted") is not True:
        return _missed("no cut client held: no master restarted")
    return Landing(True, cut.why + ", a master restarted under the holder")


def clock(targets: list[str], d: Detail) -> Landing:
    """`clock_seen`: {target: {offset_s, rate, via, at_ns, samples}}, measured from the target's
    own clock readings after apply. Landed iff every target's measured rate (for a rate fault)
    or offset agrees with the one set: a rate within 1 %, an offset within max(1 %, 0.05 s)."""
    seen = d.get("clock_seen")
    if not isinstance(seen, dict):
        return _missed(NO_OBSERVATION)
    what = "rate" if "rate" in d else "offset_s"
    want = d.get(what)
    if not isinstance(want, (int, float)):
        return _missed(f"no {what} set")
    for t in targets or [""]:
        got = _table(seen.get(t)).get(what)
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return _missed("clock never read")
        slack = 0.01 * abs(want) if what == "rate" else max(0.01 * abs(want), 0.05)
        if abs(got - want) > slack:
            return _missed(f"clock not seen at the {'rate' if what == 'rate' else 'offset'} set")
    return Landing(True, f"clock seen at the {'rate' if what == 'rate' else 'offset'} set")


def power_loss(targets: list[str], d: Detail) -> Landing:
    """`lost`: {server: the power-loss layer's counts for its drop}; `booted` / `failed_to_start`:
    the servers seen running after their boot, and those that could not boot. Landed iff the
    layer answered for every target and each was seen back or recorded as could-not-boot."""
    lost = _table(d.get("lost"))
    if "lost" not in d:
        return _missed(NO_OBSERVATION)
    unanswered = [t for t in targets if not _table(lost.get(t)) or "unanswered" in lost[t]]
    if unanswered:
        return _missed("the power-loss layer did not answer")
    return _booted(targets, d, "power lost")


def corrupted(targets: list[str], d: Detail) -> Landing:
    """corrupt-file: the file damaged (`file`, with `flipped_offsets` or `truncated_to`), then
    as a power loss: each target seen back (`booted`) or recorded as could-not-boot."""
    if "file" not in d:
        return _missed(NO_OBSERVATION)
    if not d.get("flipped_offsets") and "truncated_to" not in d:
        return _missed("nothing in the file changed")
    return _booted(targets, d, "file damaged")


def _booted(targets: list[str], d: Detail, what: str) -> Landing:
    if "booted" not in d:
        return _missed(NO_OBSERVATION)
    back = _names(d["booted"]) | set(_table(d.get("failed_to_start")))
    if any(t not in back for t in targets):
        return _missed("not seen booted again")
    return Landing(True, what)


def members(targets: list[str], d: Detail) -> Landing:
    """`served`: the members the service lists after the change; `intended`: the ones it should.
    Landed iff they are the same."""
    if "served" not in d:
        return _missed(NO_OBSERVATION)
    if not isinstance(d["served"], list) or not isinstance(d.get("intended"), list):
        return _missed("configuration not read")
    if set(map(str, d["served"])) != set(map(str, d["intended"])):
        return _missed("the configuration served is not the one asked for")
    return Landing(True, "new configuration served")


def roll(targets: list[str], d: Detail) -> Landing:
    """`served`: {server: the version it said it runs after its own step}; `failed`: the step
    that did not come back. Landed iff every target came back serving (an upgrade: on a
    version other than the one it ran before, `versions`)."""
    failed = _table(d.get("failed"))
    if failed:
        return _missed(_cut(f"{failed.get('node')} did not come back: {failed.get('error')}"))
    served = d.get("served")
    if not isinstance(served, dict):
        return _missed(NO_OBSERVATION)
    if any(served.get(t) is None for t in targets):
        return _missed("a server not seen serving after its step")
    if "image" in d:
        before = _table(d.get("versions"))
        if any(before.get(t) is not None and served[t] == before[t] for t in targets):
            return _missed("a server still on its old version after its step")
        return Landing(True, "every server seen on the new version")
    return Landing(True, "every server seen serving after its step")


def acted(targets: list[str], d: Detail) -> Landing:
    """`acted`: the proxy's own events for the act (proxy-events.jsonl) between the fault's
    command and its heal. Landed iff there is one."""
    if "acted" not in d:
        return _missed(NO_OBSERVATION)
    if not d["acted"]:
        return _missed("the proxy never acted")
    return Landing(True, "the proxy acted")


def terminated(targets: list[str], d: Detail) -> Landing:
    """`terminated`: how many of the client's lock backends pg_terminate_backend ended."""
    n = d.get("terminated")
    if not isinstance(n, int) or isinstance(n, bool):
        return _missed(NO_OBSERVATION)
    return Landing(True, "connection ended") if n > 0 else _missed("no lock connection to end")


OBSERVERS: dict[str, Observer] = {
    "frozen": frozen,
    "killed": killed,
    "dropped": dropped,
    "dropped+restarted": restarted_under_cut,
    "clock": clock,
    "power-loss": power_loss,
    "corrupted": corrupted,
    "members": members,
    "roll": roll,
    "acted": acted,
    "terminated": terminated,
}
# What each observer reads: a replay starts from an executed fault's detail, and must not
# inherit the observation of the run it replays (the nemesis drops these keys at a start).
OBSERVED_KEYS = (
    "frozen", "not_frozen", "killed", "not_killed", "dropped", "dropped_unread", "restarted",
    "clock_seen", "clock_healed", "heal_step_s", "heal_step_via", "lost", "lost_bytes",
    "booted", "failed_to_start", "why_not_started", "file", "flipped_offsets", "truncated_to",
    "served", "intended", "failed", "steps", "acted", "acts", "terminated", "holding_when_hit",
    "stopped", "held_on_master", "lock_on_master", "holders_on_master", "went_in_ns",
)  # fmt: skip


def stopped_servers(start_value: Any, end_value: Any) -> list[str]:
    """The servers a fault stopped, whatever it landed as. A kind that stops a server writes
    it down at once (`stopped`; a kill's `killed`), before anything it does next can fail: a
    disk fault whose damage never went in, or a kill whose trigger's state had ended, still
    restarted the servers it stopped, and a service without persistence forgot its state
    across that restart (checker/nature.py reads this, not `landing`, for a lost state)."""
    names: list[str] = []
    for value in (start_value, end_value):
        detail = _table(_table(value).get("detail"))
        for key in ("stopped", "killed"):
            names += [n for n in sorted(_names(detail.get(key))) if n not in names]
    return names


def unobserved(detail: Any) -> dict[str, Any]:
    """A fault's detail without what was observed of it (OBSERVED_KEYS): what a replay of an
    executed fault starts from, so that it never inherits the evidence of the run it replays."""
    return {k: v for k, v in _table(detail).items() if k not in OBSERVED_KEYS}


def _cut(text: str) -> str:
    return text if len(text) <= WHY_CHARS else text[: WHY_CHARS - 1] + "…"


def landing_of(
    observer: str | None, start_value: Any, end_value: Any, known: bool = True
) -> Landing:
    """`landing` for a kind whose observer is `observer` (None: a kind no declaration knows;
    `known` False: then the nemesis's own `observed` record, written when it knew the kind,
    is all there is)."""
    start, end = _table(start_value), _table(end_value)
    error = start.get("error") or end.get("error")
    if error:
        return _missed(_cut(f"never went in: {error}"))
    if end.get("landed") is False:
        return _missed("its trigger's state had ended")
    detail = {**_table(start.get("detail")), **_table(end.get("detail"))}
    if detail.get("holding_when_hit") is False:
        return _missed("the holder had let go when hit")
    if detail.get("held_on_master") is False:
        return _missed("its master held no holder's lock when hit")
    if not end:
        return _missed("never ended")
    targets = [str(t) for t in (end.get("targets") or start.get("targets") or ())]
    fn = OBSERVERS.get(observer or "")
    if fn is None or not known:
        seen = _table(end.get("observed"))
        if isinstance(seen.get("landed"), bool):
            return Landing(seen["landed"], str(seen.get("why") or ""))
        return _missed(NO_OBSERVATION)
    return fn(targets, detail)
