"""The hostile-input tests' hang detector (hostile.py): a spin is cut by the CPU it spends, a
block by the wall clock, and the guard leaves no timer or handler behind. Why CPU for the
spin: a wall-clock bound failed a correct `analyze` on a machine busy with other work."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from hostile import Hung, cpu_bounded, hang_guard


def test_a_spin_is_cut_by_the_cpu_it_spends():
    with pytest.raises(Hung), hang_guard(0.2):
        while True:
            pass


def test_a_block_that_spends_no_cpu_is_cut_by_the_wall_clock():
    with pytest.raises(Hung), hang_guard(0.01):
        time.sleep(60)  # raising at all is the proof: slept out, it would not


def test_the_guard_leaves_no_timer_or_handler_behind():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGPROF, signal.SIGALRM)}
    with hang_guard(5):
        pass
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_spinning_child_is_stopped_by_the_kernel():
    p = subprocess.run([sys.executable, "-c", "while True: pass"], **cpu_bounded(1))
    assert p.returncode == -signal.SIGXCPU
