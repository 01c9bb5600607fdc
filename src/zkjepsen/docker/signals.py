"""Signals during a run: the first SIGINT/SIGTERM/SIGHUP interrupts the run, and nothing can
interrupt the teardown that follows; deadlines so a run cannot hang forever.

Why not `pthread_sigmask`: it blocks a signal in the calling thread only, so the kernel hands it
to a worker thread (the ensemble's and the nemesis's thread pools, kazoo's), and CPython then
runs the Python handler in the main thread anyway, in the middle of the teardown. So the
handlers themselves decide, in the main thread, with plain flags (no locks: a handler runs
between two bytecodes of whatever the main thread was doing):

- the first signal raises (KeyboardInterrupt for SIGINT, `Terminated` otherwise) unless a
  teardown section is running (`signals_deferred`), in which case it is kept and raised when
  the outermost section ends;
- every later signal is ignored until the guarded region ends: the run is already being torn
  down because of the first one.

Deadlines (`deadline`) wake the main thread with a thread-directed SIGALRM, which also breaks
it out of a blocking wait (a kazoo call without a timeout), and raise there.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WAKE = signal.SIGALRM


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM/SIGHUP so `finally` blocks tear everything down."""


class RunTimeout(BaseException):
    """A run exceeded its overall budget (the watchdog). A BaseException so that no
    `except Exception` in workload or recipe code can swallow it."""


class PhaseTimeout(Exception):
    """One phase (workload setup, the final read) took too long. An ordinary exception: a
    final read that times out is recorded as a failed read and the run goes on to its verdict."""


@dataclass
class _Deadline:
    make: Callable[[], BaseException]
    fatal: bool
    expired: bool = False
    cancel: threading.Event = field(default_factory=threading.Event)


class _State:
    guards = 0  # nesting depth of guarded regions: handlers installed while > 0
    saved: dict[int, signal._HANDLER] = {}
    deferring = 0  # nesting depth of teardown sections
    pending: int | None = None  # a signal that arrived during a teardown section
    raised = False  # an interrupt already ended the run: later signals are ignored
    ignored: list[int] = []
    deadlines: list[_Deadline] = []
    kill_lock = threading.Lock()


S = _State


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _exception(signum: int) -> BaseException:
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(f"received {signal.Signals(signum).name}")


def _on_signal(signum: int, frame) -> None:
    if signum == WAKE:
        expired = next((d for d in S.deadlines if d.expired), None)
        if expired is None or S.deferring or S.raised:
            return  # a late wake-up, or teardown already underway: it will end the run
        if expired.fatal:
            S.raised = True
        raise expired.make()
    if S.raised:
        S.ignored.append(signum)
        return
    if S.deferring:
        S.pending = S.pending or signum
        return
    S.raised = True
    raise _exception(signum)


def _install() -> bool:
    """Enter a guarded region; True if handlers are (now) ours. Outside the main thread Python
    cannot install handlers: the region is then a no-op."""
    if not _in_main_thread():
        return False
    if S.guards == 0:
        S.pending, S.raised, S.ignored = None, False, []
        # A signal this process was started ignoring (SIGINT under `nohup` or `cmd &`) stays
        # ignored, as Python itself leaves it: the user asked for that, not for our teardown.
        S.saved = {
            s: signal.signal(s, _on_signal)
            for s in (*INTERRUPTS, WAKE)
            if signal.getsignal(s) is not signal.SIG_IGN
        }
    S.guards += 1
    return True


def _uninstall(exc_type) -> None:
    """Leave a guarded region; the outermost one restores the handlers and raises a signal
    that was held back if nothing else is ending the run already."""
    S.guards -= 1
    if S.guards:
        return
    for s, h in S.saved.items():
        signal.signal(s, h)
    S.saved = {}
    pending, S.pending = S.pending, None
    if pending is not None and not S.raised and exc_type is None:
        raise _exception(pending)


def _stay(exc_type: type[BaseException] | None) -> None:
    """Leaving a region that installed nothing (a nested one, or outside the main thread)."""


@contextmanager
def _region(leave: Callable[[type[BaseException] | None], None]) -> Iterator[None]:
    """Run the block, then `leave(type of the exception that ended it, or None)`. Why one place:
    every guarded region must restore the handlers however it ends, and knowing whether an
    exception is already ending the run decides whether a held-back signal is raised."""
    exc_type = None
    try:
        yield
    except BaseException as e:
        exc_type = type(e)
        raise
    finally:
        leave(exc_type)


@contextmanager
def teardown_on_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into an exception for the duration, once: after the first,
    signals are ignored so that the `finally` blocks it triggers run to the end."""
    with _region(_uninstall if _install() else _stay):
        yield


@contextmanager
def signals_deferred() -> Iterator[None]:
    """A teardown section: no signal interrupts it. One that arrives meanwhile is raised when
    the outermost section ends (unless the run is already ending)."""
    if not _install():
        yield
        return
    S.deferring += 1

    def leave(exc_type: type[BaseException] | None) -> None:
        S.deferring -= 1
        if S.deferring == 0 and S.pending is not None and not S.raised:
            pending, S.pending = S.pending, None
            S.raised = True
            if exc_type is None:
                _uninstall(BaseException)  # the exception below is the run's end
                raise _exception(pending)
        _uninstall(exc_type)

    with _region(leave):
        yield


def interrupted() -> bool:
    """True once a signal (or the watchdog) has ended the current guarded region."""
    return S.raised


def ignored_signals() -> list[str]:
    """Names of the signals ignored because a teardown was already underway."""
    return [signal.Signals(s).name for s in S.ignored]


@contextmanager
def deadline(
    seconds: float, make: Callable[[], BaseException], fatal: bool = False
) -> Iterator[None]:
    """Raise `make()` in the main thread if the block runs longer than `seconds`; `fatal`
    (the watchdog) also makes every later signal be ignored, as the first interrupt does.
    Outside the main thread it does nothing (no handler can be installed there)."""
    if not _install():
        yield
        return
    d = _Deadline(make, fatal)
    main = threading.main_thread().ident or 0  # set: the main thread has started
    S.deadlines.append(d)

    def watch() -> None:
        if d.cancel.wait(seconds):
            return
        d.expired = True
        while True:
            with S.kill_lock:  # never after the block ended (SIGALRM may be fatal by then)
                if d.cancel.is_set():
                    return
                signal.pthread_kill(main, WAKE)
            if d.cancel.wait(1.0):  # again until the main thread can take it
                return

    t = threading.Thread(target=watch, name="zkjepsen-deadline", daemon=True)
    t.start()

    def leave(exc_type: type[BaseException] | None) -> None:
        d.cancel.set()
        with S.kill_lock:
            pass  # a wake-up in flight has been delivered
        S.deadlines.remove(d)
        _uninstall(exc_type)

    with _region(leave):
        yield
