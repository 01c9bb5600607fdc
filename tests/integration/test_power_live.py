"""A verdict that states its power, from a real run: a triggered pause freezes a holder of
kazoo's Lock past its session on a fenced resource (judged by what the resource accepted), and
the VALID says how many pauses landed and what that bounds (docs/verdicts.md). One write per
section: a fence cannot make a two-step update atomic (the atomicity checker would say so)."""

from __future__ import annotations

import json

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.report.summary import power_line
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec


def test_a_landed_holder_pause_on_a_fenced_resource_gives_a_valid_with_its_power(
    zk_image, store_root
):
    spec = TestSpec(
        recipe="kazoo",
        workload="lock",
        nemesis=["pause-client"],
        nodes=1,
        clients=3,
        time_limit_s=9,
        recovery_s=3,
        session_timeout_s=2,
        seed=1,
        image=zk_image,
        params={"resource": "fenced", "property": "effect", "writes": 1, "hold_s": 0.4},
    )
    # Whoever acquires first after 2 s is frozen for 1.5x its session (re-armed on a miss).
    gen = steps(sleep(2), on(on_acquire(retries=10), fault("pause-client", duration="1.5x")))
    r = run_test(spec, store_root, gen=gen)
    (pause,) = json.loads((r.store_dir / "schedule.json").read_text())["faults"]
    assert pause["landed"] is True, pause
    # seen frozen by the engine (faultkinds.landing); its re-armed attempts missed, each with why
    assert pause["observed"] == {"landed": True, "why": "seen frozen"}, pause
    whys = [m["observed"]["why"] for m in pause.get("missed") or []]
    assert all(w == "its trigger's state had ended" or w.startswith("never went in") for w in whys)
    power = r.results["power"]
    assert r.valid is True and power["valid"] is True, r.results
    (landed,) = power["landed"]  # the attempt that landed, on the client its trigger named
    assert landed["clients"] == [pause["fired"]["client"]] and not landed["violated"]
    assert landed["timeout_s"] == 2 and landed["end"] - landed["start"] >= 2e9
    line = power_line(r.results)
    if len(set(whys)) > 1:  # both kinds of miss: counted apart, by why
        assert line.startswith(f"0 effect overlaps in 1 landed client-pause ({len(whys)} missed: ")
    else:
        missed = f" ({len(whys)} missed: {whys[0]})" if whys else ""
        assert line == (
            f"0 effect overlaps in 1 landed client-pause{missed}: per-pause overlap rate ≤ 95.0 % "
            "(95 %)"
        )
    # Not vacuous: the frozen holder's session expired and another took the lock beside it;
    # the fence refused the stale holder's writes (a near miss, not an effect overlap).
    lock = r.results["lock"]
    assert lock["near_miss_count"] >= 1 and lock["effect_overlap_count"] == 0, lock
    assert "(landed)" in (r.store_dir / "timeline.html").read_text()
