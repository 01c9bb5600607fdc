"""Signals in-process: the first interrupt raises once, nothing interrupts a teardown section
(not even a signal the kernel hands to a worker thread), deadlines break blocking waits; and
the ownership rules `cleanup` and `cluster down` rely on."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import SimpleNamespace

import pytest

from zkjepsen.docker import resources, signals


@pytest.fixture(autouse=True)
def sigint_as_python_sets_it():
    """A test process started in the background (`cmd &` in a non-interactive shell, as some CI
    runners do) inherits SIGINT ignored, and zkjepsen rightly leaves it so. These tests are about
    an interactive process: give SIGINT Python's own handler for their duration."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _kill_later(delay_s: float, sig: int = signal.SIGINT, thread_ident: int | None = None):
    """Send `sig` after `delay_s`, to the process or to one thread (not the main one)."""

    def send():
        time.sleep(delay_s)
        if thread_ident is None:
            os.kill(os.getpid(), sig)
        else:
            signal.pthread_kill(thread_ident, sig)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


def test_first_signal_raises_later_ones_cannot_interrupt_the_teardown():
    torn_down = []
    with pytest.raises(KeyboardInterrupt):
        with signals.teardown_on_signals():
            try:
                _kill_later(0.05)
                time.sleep(5)
                pytest.fail("the first SIGINT did not interrupt")
            finally:
                # Not even deferred: after the first interrupt every signal is ignored.
                _kill_later(0.05, signal.SIGINT).join()
                _kill_later(0.0, signal.SIGTERM).join()
                time.sleep(0.3)
                torn_down.append(True)
            assert signals.ignored_signals() == ["SIGINT", "SIGTERM"]
    assert torn_down == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_during_a_teardown_section_is_raised_after_it():
    done = []
    with pytest.raises(signals.Terminated):
        with signals.teardown_on_signals():
            with signals.signals_deferred():
                _kill_later(0.0, signal.SIGTERM).join()
                time.sleep(0.3)
                done.append("section")
            done.append("after")  # never: the held-back signal is raised first
    assert done == ["section"]


def test_a_signal_taken_by_a_worker_thread_does_not_interrupt_a_teardown_section():
    # pthread_sigmask in the main thread made the kernel deliver to a worker, and CPython then
    # ran the handler in the main thread anyway: the bug this module exists to avoid.
    worker_ready = threading.Event()
    stop = threading.Event()

    def worker():
        worker_ready.set()
        stop.wait(10)

    w = threading.Thread(target=worker, daemon=True)
    w.start()
    worker_ready.wait()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals.signals_deferred():
            _kill_later(0.05, signal.SIGINT, thread_ident=w.ident).join()
            time.sleep(0.3)
            done.append("section")
    stop.set()
    assert done == ["section"]


def test_deadline_breaks_a_wait_without_timeout_in_the_main_thread():
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(signals.PhaseTimeout):
        with signals.deadline(0.3, lambda: signals.PhaseTimeout("final read")):
            # e.g. a kazoo call that never returns; bounded at 60 s (200x the deadline) so that
            # a deadline that does not break it fails the test (no PhaseTimeout) instead of
            # hanging it
            threading.Event().wait(60)
    assert signal.getsignal(signal.SIGALRM) is before  # restored


def test_a_deadline_waits_for_a_teardown_section_and_a_fatal_one_ends_the_run():
    done = []
    with pytest.raises(signals.RunTimeout):
        with signals.deadline(0.1, lambda: signals.RunTimeout("budget"), fatal=True):
            with signals.signals_deferred():
                time.sleep(0.5)
                done.append("section")
            time.sleep(5)
    assert done == ["section"]


def test_an_unexpired_deadline_changes_nothing():
    with signals.deadline(30, lambda: signals.PhaseTimeout("x")):
        pass
    assert not signals.interrupted()


def test_a_signal_the_process_was_started_ignoring_stays_ignored():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as under `nohup` or `cmd &`
    try:
        with signals.teardown_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)


# ---- ownership -------------------------------------------------------------------------------
class _NoEngine:
    api = SimpleNamespace(containers=lambda **kw: [])
    networks = SimpleNamespace(list=lambda **kw: [])


def test_scratch_dirs_carry_their_owner_and_cleanup_respects_it(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "SCRATCH_ROOT", tmp_path)
    mine = resources.scratch_dir("zkj-mine")
    assert (mine / resources.OWNER_FILE).read_text() == resources.owner_token()
    dead = tmp_path / "zkj-dead"
    dead.mkdir()
    (dead / resources.OWNER_FILE).write_text("999999999:1")
    young = tmp_path / "zkj-young"  # mkdir done, owner file not yet written
    young.mkdir()
    old = tmp_path / "zkj-old"  # a crash between the two, long ago
    old.mkdir()
    past = time.time() - 2 * resources.STARTING_GRACE_S
    os.utime(old, (past, past))
    runs = resources.find_runs(_NoEngine())
    assert not runs["zkj-mine"].orphaned and runs["zkj-mine"].owner_alive
    assert runs["zkj-dead"].orphaned
    assert not runs["zkj-young"].orphaned and runs["zkj-young"].starting
    assert runs["zkj-old"].orphaned


def test_cluster_down_without_a_run_id_never_picks_a_test_run(monkeypatch):
    from zkjepsen.cli import cluster
    from zkjepsen.errors import BadInput

    live = resources.owner_token()
    test_run = resources.RunResources("zkj-test", containers=[{}], owners={live})
    up_run = resources.RunResources("zkj-up", containers=[{}], owners={"1:0"}, detached=True)
    runs = {"zkj-test": test_run}
    monkeypatch.setattr(resources, "find_runs", lambda client: runs)
    with pytest.raises(BadInput, match="cluster up"):
        cluster._pick_run(None, None, "down")
    with pytest.raises(BadInput, match="running zkjepsen process"):
        cluster._pick_run(None, "zkj-test", "down")
    assert cluster._pick_run(None, "zkj-test", "status") == "zkj-test"
    runs["zkj-up"] = up_run
    assert cluster._pick_run(None, None, "down") == "zkj-up"
    assert cluster._pick_run(None, None, "status") == "zkj-up"


def test_dead_named_owners_make_a_run_orphaned_even_with_a_young_ownerless_scratch_dir():
    crashed = resources.RunResources("zkj-crashed", owners={"1:0"}, starting=True)
    assert crashed.orphaned  # pid 1 with start time 0 is no live process of ours
    just_starting = resources.RunResources("zkj-new", owners=set(), starting=True)
    assert not just_starting.orphaned
    live = resources.RunResources("zkj-live", owners={resources.owner_token()}, starting=True)
    assert not live.orphaned
