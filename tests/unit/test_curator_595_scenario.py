"""The CURATOR-595 scenario as a definition: its steps are the report's (one server down past the
session timeout while one permit is held), and its hold outlasts the outage and the session the
restarted server restores, so the excess it expects can only come from the Lease outliving LOST."""

from __future__ import annotations

from zkjepsen.nemesis import generator as g
from zkjepsen.reproduce.scenarios import SCENARIOS
from zkjepsen.run.resolve import validate_spec

NAME = "curator-595-semaphore-lease-outlives-lost"


def test_the_595_scenario_names_its_ticket_and_expects_an_excess_of_one_permit():
    s = SCENARIOS[NAME]
    assert "CURATOR-595" in s.source and "CURATOR-595" in s.title
    assert set(s.expect) == {"curator-java-semaphore-v2"}
    assert s.expect["curator-java-semaphore-v2"].present == {"semaphore:excess"}
    spec = s.spec("curator-java-semaphore-v2")
    assert spec.workload == "semaphore" and spec.params["permits"] == 1
    assert spec.nodes == 1  # the report's one server: no quorum elsewhere keeps the session
    validate_spec(spec)


def test_the_server_is_down_past_the_session_and_the_hold_outlasts_the_restored_session():
    s = SCENARIOS[NAME]
    spec = s.spec("curator-java-semaphore-v2")
    (planned,) = [p.to_json() for p in g.plan(s.schedule, seed=1)]
    assert planned["f"] == "kill-one" and planned["trigger"]["kind"] == "acquired"
    # Down longer than the session: the client posts LOST before the server is back.
    assert planned["duration_s"] > spec.session_timeout_s
    # The hold is fixed and lasts past the restart plus the restored session's own timeout,
    # so a waiter granted when that session expires is granted beside the Lease's holder.
    assert spec.params["hold_fixed"]
    end_of_restored = planned["trigger"]["delay_s"] + planned["duration_s"] + spec.session_timeout_s
    assert spec.params["hold_s"] > end_of_restored
    # The waiters ask for longer than all that, so they wait in the queue, not give up.
    assert spec.params["acquire_timeout_s"] > spec.params["hold_s"]
