"""False finds the outsiders' hunts met (/tmp/zkj-team/outside-flags.md, 2026-11-29), each
fixed as a class of checker/nature.py, on its history's exact pattern: a kill that killed its
holder though the power line files it missed (its trigger's state had ended), and a restart
already under way when the earlier holder asked."""

from __future__ import annotations

from hand_history import LEASE_S, HandHistory
from landed import with_observation

from zkjepsen.checker import compose
from zkjepsen.checker.atomicity import AtomicityChecker
from zkjepsen.checker.lease import DEFECT
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.nature import CUT, STATE
from zkjepsen.history import History
from zkjepsen.run.analysis import with_fault_natures

S = 1_000_000_000
T = LEASE_S  # every client's lease (hand_history)


class H(HandHistory):
    def acquire(self, c, t_ok, token, asked=None):
        self.add(t_ok - 0.01 if asked is None else asked, c, "invoke", "acquire", "/l", None, c)
        return self.add(t_ok, c, "ok", "acquire", "/l", {"token": token}, c)

    def release(self, c, t):
        self.add(t, c, "invoke", "release", "/l", None, c)
        return self.add(t + 0.01, c, "ok", "release", "/l", None, c)

    def fault(self, t0, t1, f, targets, end=None):
        start = {"fault_id": 1, "phase": "start", "targets": list(targets)}
        self.add(t0, "nemesis", "info", f, None, start)
        end = with_observation(f, targets, end)
        return self.add(t1, "nemesis", "info", f, None, {**start, "phase": "end", **end})

    def judge(self):
        checkers = {"lock": LockChecker().with_lease(T), "atomicity": AtomicityChecker()}
        history = History(sorted(self.ops, key=lambda o: (o.time, o.index)))
        res = compose(checkers).check(history)
        with_fault_natures(res, history, checkers)
        return res


# ---- h2-1 (12:20): a kill filed missed by the power line still killed its holder ---------------


def killed_mid_update(end):
    """store/h2-redis_pexpire_blind/.../hunt-kill-client-pause-client/20261129T121602: client 2
    granted 19.278, writes step 1 of 2 at 19.281; kill-client on it 19.309-22.47, its end
    record `killed: [c2]` but `landed: false` (its trigger, client 2's acquire, had completed
    when it went in: the power line's miss); client 1 granted 21.2 reads the half-done state."""
    h = H().acquire(2, 19.278, 10)
    h.add(19.281, 2, "invoke", "write", "/r", {"token": 10, "step": 1, "steps": 2}, 2)
    h.add(19.283, 2, "ok", "write", "/r", {"version": 1}, 2)
    h.fault(19.309, 22.47, "kill-client", ("c2",), end)
    h.acquire(1, 21.2, 11).add(21.32, 1, "invoke", "read", "/r", {"token": 11}, 1)
    state = {"state": "half", "step": 1, "steps": 2, "writer": 2, "writer_token": 10}
    h.add(21.33, 1, "ok", "read", "/r", {**state, "version": 1}, 1)
    (n,) = h.release(1, 22.0).judge().parts["atomicity"].details["natures"]
    return n


def test_a_kill_the_power_line_calls_missed_still_killed_its_holder_mid_update():
    n = killed_mid_update({"landed": False})
    assert n["nature"] == CUT and n["nature_fault"]["kind"] == "kill-client", n
    # a kill whose observation says it never killed it, or that never went in: no excuse
    assert killed_mid_update({"detail": {"killed": [], "not_killed": ["c2"]}})["nature"] == DEFECT
    assert killed_mid_update({"error": "NemesisError: no such container"})["nature"] == DEFECT


# ---- h4 (12:27): a restart under way when the earlier holder asked -----------------------------


def restarted(kill_at=18.574, heal_at=19.8, tokens=(2, 1)):
    """store/h4-gate/gate/redis_client_clock/gate-leader-kill/20261129T121931: client 2 was
    granted token 2 at 16.166; kill-leader's start recorded at 18.574 (one Redis, no
    persistence); client 3 asks at 18.622 and is granted token 2 again at 18.629, the server not
    yet down; it restarts empty; client 1 is granted token 1 at 20.30 while client 3 holds (to
    20.37)."""
    h = H().acquire(2, 16.166, 2).release(2, 18.5)
    h.acquire(3, 18.629, tokens[0], asked=18.622).release(3, 20.37)
    h.fault(kill_at, heal_at, "kill-leader", ("n1",))
    h.acquire(1, 20.30, tokens[1]).release(1, 21.0)
    (b,) = h.judge().parts["lock"].details["belief_overlaps"]
    return b


def test_a_restart_under_way_at_the_earlier_asking_is_the_state_lost():
    b = restarted()
    assert b["nature"] == STATE and b["nature_fault"]["kind"] == "kill-leader", b
    # the tokens went on (3, 4 after 2): nothing says the service forgot
    assert restarted(tokens=(3, 4))["nature"] == DEFECT
    # a restart over before the earlier holder asked explains nothing of its grant, though
    # the tokens went back across it
    assert restarted(kill_at=16.3, heal_at=16.4)["nature"] == DEFECT
