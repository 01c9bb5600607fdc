"""What a run records of the schedule it runs, whatever gave it: test.json says what ran.

Three sources, one record. The standard schedule of `nemesis` (the names are the record: the
seed and settings make the same plan again); a generator given as Python (`run_test(gen=...)`:
the pytest plugin, a scenario, a shrink's emitted test), recorded unrolled in `generator`
(nemesis/recorded.py) with `nemesis` set to its faults; an executed schedule being replayed
(`replay`, a shrink's candidate), whose faults name the run while schedule.json holds them.
So the run is named after its faults, its verdict has their power line, the clock launcher and
the power-loss layer are there when its faults need them, and `replay`/`shrink` of its folder
run the same faults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.nemesis.executed import NotAFault, read_faults  # light: no fault's module
from zkjepsen.spec import TestSpec

if TYPE_CHECKING:
    from zkjepsen.nemesis.generator import Gen


def record_schedule(spec: TestSpec, gen: Gen | None, schedule: Any) -> None:
    """In place: an executed `schedule` to replay names the run's faults, in the spec's order
    (and no generator runs); else a `gen` is unrolled into `spec.generator`. Neither: the spec
    as it is."""
    # here, not at the top: the nemesis loads every fault's module; only a run with faults needs it
    from zkjepsen.nemesis import generator, recorded

    if schedule is not None:
        try:
            ran = list(dict.fromkeys(f.f for f in read_faults(schedule)))
        except NotAFault as e:
            raise BadInput(f"the schedule to replay: {e}") from None
        # The names in the order the spec gave them, then any it did not name in the order they
        # ran: faults in two lanes start in whichever order their timing gives, and a replay
        # named (and filed) by that order was not the same test as its original.
        names = list(dict.fromkeys([n for n in spec.nemesis if n in ran] + ran))  # once each
        spec.nemesis, spec.generator = names or ["none"], None
        return
    if gen is None:
        return
    if spec.generator is not None:  # its names were filled in from the one being replaced
        spec.nemesis = ["none"]
    params = {k: v for k, v in spec.params.items() if k in generator.FAULT_PARAMS}
    env = generator.Env(spec.session_timeout_s, spec.fault_duration_s, params)
    try:
        spec.generator = recorded.record(gen, spec.seed, env)
    except ValueError as e:  # NotAnItem too
        raise BadInput(f"the fault generator given cannot be recorded: {e}") from None


def settle_generator(spec: TestSpec) -> None:
    """In place: a recorded generator's items checked, and `nemesis` made its faults' names,
    those the spec named first (a spec naming a fault the generator never runs is refused: its
    name and power line would claim a fault that did not run)."""
    if spec.generator is None:
        return
    # here, not at the top: as in record_schedule (the nemesis loads every fault's module)
    from zkjepsen.nemesis import recorded

    try:
        names = recorded.fault_names(spec.generator)
    except recorded.NotAnItem as e:
        raise BadInput(f"generator {e}") from None
    unknown = [n for n in names if n not in KINDS]
    if unknown:  # here too, not only in validate_spec: a stored test.json is read with settle
        raise BadInput(
            f"generator runs unknown fault {unknown[0]!r}; choose from "
            f"{', '.join(sorted(KINDS))} (`zkjepsen list nemeses`)"
        )
    given = [n for n in spec.nemesis if n != "none"]
    if not set(given) <= set(names):
        raise BadInput(
            f"nemesis names {', '.join(given)}, but the generator runs "
            f"{', '.join(names) or 'no fault'}; leave nemesis out (the generator's faults name it)"
        )
    spec.nemesis = [*given, *(n for n in names if n not in given)] or ["none"]
