"""Following the live history during the main phase: the stop conditions of a run.

`--stop-on-violation` ends the main phase at the first violation the online checker
(checker/online.py) confirms; `--until-power RATE` ends it once the upper bound on the
per-opportunity violation rate (checker/power.py), computed on the history written so far,
falls below RATE. Either way the runner's stop event is set: the nemesis heals and returns as
it does at its time limit, and the run goes on to recovery, teardown and the full offline check.

The follower subscribes to the run's live history (history/live.py: the one reader of the
clients' files and nemesis.jsonl), as the triggers do. A client's file is in its own time
order; the nemesis writes each record the moment it takes its time, so its progress is the
host's clock less a margin (NEMESIS_LAG_S): a kill-client it has not written yet cannot be
older than that.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from zkjepsen.checker import Violation
from zkjepsen.checker.attribution import attributed
from zkjepsen.checker.online import online_checker
from zkjepsen.checker.power import power_of
from zkjepsen.history import NEMESIS, History, Op, fault_windows
from zkjepsen.history.live import LiveHistory
from zkjepsen.report.summary import fault_words
from zkjepsen.spec import TestSpec

POLL_S = 0.1
POWER_EVERY_S = 1.0  # power needs the whole history so far: a sort and one pass
NEMESIS_LAG_S = 0.5
ASKED_WHY = "asked to stop: another run of the same command has already failed"

# A run in a process of its own (run/fanout.py's worker) can be asked to end its main phase as a
# stop condition would: a gate ends its other scenarios once one has failed. The ask is a file
# its parent creates, not a signal: it cannot arrive before a handler is installed, and a Dask
# task can create it on the worker's host. Set once per process, before the run starts.
_ask_file: list[Path] = []
# The other way: a run that confirms a violation online creates this file at once, so that a
# gate can ask its other runs to stop then, not only after this run's recovery, teardown and
# offline check (about 10 s later). The offline check finds what the online one confirmed.
_tell_file: list[Path] = []


def listen_for_ask(path: Path) -> None:
    """This process's run ends its main phase early once `path` exists (with a follower)."""
    _ask_file[:] = [path]


def asked() -> bool:
    return bool(_ask_file) and _ask_file[0].exists()


def tell_violation_at(path: Path) -> None:
    """This process's run creates `path` the moment it confirms a violation online."""
    _tell_file[:] = [path]


def _tell_violation() -> None:
    if _tell_file:
        try:
            _tell_file[0].touch()
        except OSError:  # the teller's folder is gone (its parent ended): nobody to tell
            pass


class StopCondition:
    """What ends a main phase early, as the spec asks for it (None: nothing to follow)."""

    def __init__(self, stop_on_violation: bool, until_power: float | None) -> None:
        self.stop_on_violation, self.until_power = stop_on_violation, until_power

    @classmethod
    def of(cls, spec: TestSpec) -> StopCondition | None:
        on_violation, power = spec.stop_on_violation, spec.until_power
        return cls(on_violation, power) if (on_violation or power is not None) else None

    def to_json(self) -> dict[str, Any]:
        return {"stop_on_violation": self.stop_on_violation, "until_power": self.until_power}


class LiveFollower:
    """A thread that follows the run's live files and sets `stop` when a condition is met.
    `end()` stops following and returns what ended the main phase early (None: nothing did)."""

    def __init__(
        self,
        condition: StopCondition,
        live: LiveHistory,
        t0_ns: int,
        stop: threading.Event,
        checkers: dict[str, Any],
        session_timeout_s: float,
        clients: int = 0,
    ) -> None:

        self.condition, self.t0_ns, self.stop = condition, t0_ns, stop
        self.session_timeout_s = session_timeout_s
        self.online = (
            online_checker(checkers, range(1, clients + 1)) if condition.stop_on_violation else None
        )
        names = getattr(self.online, "names", None)
        self.acquire: tuple[str, ...] = names[0] if names else ("acquire",)
        self.release: tuple[str, ...] = names[1] if names else ("release",)
        self.live = live
        self.sub = live.subscribe(replay=True)  # from the first record, as the checker needs
        self.records: list[dict[str, Any]] = []  # everything read, for the power
        self.started_ns = self._now()
        self.outcome: dict[str, Any] | None = None
        self.last_power: dict[str, Any] | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="live-follower", daemon=True)
        self._thread.start()

    def _now(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def _follow(self) -> None:
        next_power = 0.0
        while not self._done.is_set():
            try:
                found = self._poll()
                if found is None and asked():
                    found = {"reason": "asked", "why": ASKED_WHY}
                if found is None and self.condition.until_power is not None:
                    if time.monotonic() >= next_power:
                        next_power = time.monotonic() + POWER_EVERY_S
                        found = self._power_reached()
            except Exception as e:  # noqa: BLE001 - following is a help: the run goes on
                self.outcome = {"reason": "follower-error", "error": f"{type(e).__name__}: {e}"}
                return
            if found is not None:
                if found["reason"] == "violation":
                    _tell_violation()
                at = self._now()
                self.outcome = {
                    **found,
                    "history_ns": at,
                    "after_main_start_s": round((at - self.started_ns) / 1e9, 3),
                }
                self.stop.set()
                return
            self._done.wait(POLL_S)

    def _poll(self) -> dict[str, Any] | None:

        now = self._now()
        self.live.poll()
        for source, recs in self.sub.take():
            if source != NEMESIS and not source:
                continue  # the host's own session (client 0) is not a client under test
            recs = sorted(recs, key=lambda r: r.get("time", 0))  # two threads may race
            self.records += recs
            if self.online is not None:
                for r in recs:
                    self.online.feed(r)
        if self.online is None:
            return None
        self.online.advance(NEMESIS, now - int(NEMESIS_LAG_S * 1e9))
        found = self.online.confirmed()
        if not found:
            return None
        v = _with_faults(found[0], self.records)
        return {
            "reason": "violation",
            "why": f"{v.kind} violation confirmed online: clients {list(v.clients)}"
            + fault_words(v),
            "violation": v.to_json(),
        }

    def _power_reached(self) -> dict[str, Any] | None:

        recs = sorted(self.records, key=lambda r: r.get("time", 0))
        ops = [Op.from_dict({**r, "index": i}) for i, r in enumerate(recs)]
        found = self.online.found if self.online is not None else []
        windows = fault_windows(ops)  # placed as the offline checkers place them
        power = power_of(
            History(ops),
            violations=[attributed(v, windows) for v in found],
            session_timeout_s=self.session_timeout_s,
            acquire=self.acquire,
            release=self.release,
        )
        self.last_power = {"upper": power.upper(), "line": power.line()}
        rate = self.condition.until_power
        if power.opportunities() and rate is not None and power.upper() < rate:
            return {
                "reason": "power",
                "why": f"power target reached: {power.line()} (< {100 * rate:g} %)",
                "power": power.to_json(),
            }
        return None

    def end(self) -> dict[str, Any]:
        """Stop following; what the results say about the early stop."""
        self._done.set()
        self._thread.join(timeout=10)
        self.live.unsubscribe(self.sub)
        out: dict[str, Any] = {
            **self.condition.to_json(),
            "stopped_early": self.outcome is not None,
        }
        if self.outcome is not None:
            out.update(self.outcome)
            out["stopped_early"] = self.outcome.get("reason") != "follower-error"
        if self.condition.stop_on_violation:  # what was followed (none: a workload with no
            # online checker, e.g. a register, runs to its time limit)
            out["online_kinds"] = sorted(self.online.kinds) if self.online is not None else []
        if self.last_power is not None:
            out["live_power"] = self.last_power
        return out


def _with_faults(v: Violation, records: list[dict[str, Any]]) -> Violation:
    """An online violation with the faults its window met and the disk fault before it, as the
    offline checkers record them (a reused token after a power loss names the power loss)."""
    if v.start is None:
        return v
    nemesis = sorted(
        (r for r in records if r.get("process") == NEMESIS), key=lambda r: r.get("time", 0)
    )
    return attributed(
        v, fault_windows([Op.from_dict({**r, "index": i}) for i, r in enumerate(nemesis)])
    )


def follow(test: Any, live: LiveHistory, t0_ns: int, stop: threading.Event) -> LiveFollower | None:
    """The live follower of a resolved test's stop conditions (a subscriber of the run's live
    history); None when it asks for none."""
    condition = StopCondition.of(test.spec)
    if condition is None:
        return None
    spec = test.spec
    return LiveFollower(
        condition, live, t0_ns, stop, test.checkers, spec.session_timeout_s, spec.clients or 0
    )


def end_clients_early(recovery_s: float, pool: Any, grace_s: float) -> float:
    """After an early stop the clients would run on to the deadline they were given at the
    start: give them the recovery time on the healed cluster, then end them as teardown does
    (SIGTERM: each finishes its op and exits). Returns their new deadline (now)."""
    time.sleep(recovery_s)
    pool.stop(grace_s=grace_s)
    return time.monotonic()
