"""The client wire protocol without ZooKeeper: message parsing, the recorder's loops against an
in-memory fake program, and the conformance check's sentences for deliberately broken programs
(tests/subjects/fake_program.py)."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from program_ctx import program_ctx

from zkjepsen.client.conformance import Conformance
from zkjepsen.client.lockclient import WireLockClient
from zkjepsen.client.loop import LockLoop
from zkjepsen.client.main import lock_loop
from zkjepsen.client.program_client import ProgramClient
from zkjepsen.client.protocol import Event, ProtocolFault, Reply, parse_line
from zkjepsen.client.recorder import Recorder

FAKE = str(Path(__file__).resolve().parent.parent / "subjects" / "fake_program.py")


def fake(mode: str = "good") -> list[str]:
    return [sys.executable, FAKE, mode]


def test_parse_line() -> None:
    assert parse_line(b'{"in_reply_to": 3, "type": "ok", "value": 1}\n') == Reply(3, "ok", 1)
    assert parse_line(b'{"event": "session-state", "value": "LOST"}') == Event(
        "session-state", "LOST"
    )
    for junk, words in [
        (b"hello", "is not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"type": "ok"}', "in_reply_to"),
        (b'{"in_reply_to": 1, "type": "maybe"}', "not ok, fail or info"),
    ]:
        with pytest.raises(ProtocolFault, match=words):
            parse_line(junk)


@pytest.mark.parametrize(
    "mode, sentence",
    [
        ("silent-init", "init was never answered within 2 s"),
        (
            "out-of-order",
            "answer out of order: in_reply_to 9 while request 2 (acquire) was outstanding",
        ),
        ("junk", "malformed message from the program: 'hello, I am starting up' is not JSON"),
        ("die-mid-answer", "the program died mid-answer"),
        ("endless-line", "the program sent a line longer than 1 MiB"),
    ],
)
def test_conformance_names_what_a_broken_program_got_wrong(mode: str, sentence: str) -> None:
    report = Conformance(fake(mode), "127.0.0.1:1", init_timeout_s=2.0, request_timeout_s=2.0).run()
    assert not report.ok
    assert len(report.problems) == 1, report.problems
    assert report.problems[0].startswith(sentence), report.problems


def run_loop(
    tmp_path: Path,
    argv: list[str],
    seconds: float = 2.5,
    workload: str = "lock",
    params: dict | None = None,
    until: Callable[[list[dict]], bool] | None = None,
    **kw,
) -> list[dict]:
    """The loop's records over `seconds`, or, with `until`, until its records satisfy it (a
    loaded machine may need far longer than a quiet one to start the program and go round:
    a fixed span failed a correct change at load 28; `seconds` is then only a hang bound)."""
    if until is not None:
        seconds = 120.0
    path = tmp_path / "client-1.jsonl"
    params = {"hold_s": 0.02, "think_s": 0.01, **(params or {})}
    ctx, rec = program_ctx(path, params=params, seconds=seconds)
    client = ProgramClient(
        ctx,
        argv,
        servers="127.0.0.1:1",
        session_timeout_s=4.0,
        workload=workload,
        lock_path="/zkjepsen/lock",
        **kw,
    )
    assert client.start() or client.gave_up
    if until is not None:
        threading.Thread(target=_stop_when, args=(path, until, ctx.stop_event), daemon=True).start()
    lock_loop(ctx, client, workload).run()  # as client/main.py runs it
    client.program.kill()
    rec.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def _stop_when(path: Path, until: Callable[[list[dict]], bool], stop: threading.Event) -> None:
    while not stop.wait(0.05):
        try:
            recs = [json.loads(x) for x in path.read_text().splitlines() if x.endswith("}")]
        except (OSError, ValueError):
            continue
        if until(recs):
            stop.set()


def _oks(recs: list[dict], *fs: str) -> bool:
    return all(any(r["f"] == f and r["type"] == "ok" for r in recs) for f in fs)


def test_remote_loop_records_what_the_in_process_loop_records(tmp_path: Path) -> None:
    recs = run_loop(
        tmp_path,
        fake(),
        params={"resource": "fenced"},
        until=lambda rs: _oks(rs, "acquire", "write", "read", "release"),
    )
    oks = [r for r in recs if r["type"] == "ok"]
    acq = next(r for r in oks if r["f"] == "acquire")
    assert acq["key"] == "/zkjepsen/lock" and set(acq["value"]) == {"token", "seq", "node"}
    assert acq["value"]["seq"] == acq["value"]["token"]  # parsed from the node name
    write = next(r for r in oks if r["f"] == "write")
    assert write["key"] == "/zkjepsen/resource"
    assert set(write["value"]) == {"token", "version", "step", "steps"}  # as the in-process loop
    read = next(r for r in oks if r["f"] == "read")  # each holder reads first (atomicity)
    assert {"step", "steps", "writer", "writer_token", "version"} <= set(read["value"])
    assert any(r["f"] == "release" for r in oks)
    assert recs[0]["f"] == "session-state" and recs[1]["f"] == "session"
    assert not [r for r in recs if r["f"] == "client-error"]
    # invoke before completion, one process, alternating
    opens = 0
    for r in recs:
        if r["type"] == "invoke":
            opens += 1
        elif r["type"] in ("ok", "fail", "info"):
            opens -= 1
        assert opens in (0, 1)


def test_rwlock_through_the_protocol_names_each_side(tmp_path: Path) -> None:
    # One program serves both sides: each acquire, release and holding names its `mode`, and
    # the fake puts the side it was asked for into the node's name and refuses a release that
    # names another side (recorded info): so a side lost on the way shows in the history.
    def both_sides(rs: list[dict]) -> bool:
        got = {r["value"].get("mode") for r in rs if r["f"] == "acquire" and r["type"] == "ok"}
        return got == {"read", "write"} and _oks(rs, "write", "release")

    recs = run_loop(
        tmp_path, fake(), workload="rwlock", params={"resource": "fenced"}, until=both_sides
    )
    acquired = [r for r in recs if r["f"] == "acquire" and r["type"] == "ok"]
    assert {r["value"]["mode"] for r in acquired} == {"read", "write"}, acquired
    for r in acquired:
        assert r["value"]["node"].startswith(f"/zkjepsen/lock/{r['value']['mode']}-"), r
    releases = [r for r in recs if r["f"] == "release" and r["type"] != "invoke"]
    assert releases and all(r["type"] == "ok" for r in releases), releases
    writes = [r for r in recs if r["f"] == "write" and r["type"] == "ok"]
    assert writes, "a writer's fenced write needs holding true on its own side"
    assert not [r for r in recs if r["f"] == "client-error"]


def test_counter_through_the_protocol(tmp_path: Path) -> None:
    recs = run_loop(
        tmp_path,
        fake(),
        workload="counter",
        params={"resource": "token"},
        until=lambda rs: sum(r["f"] == "add" and r["type"] == "ok" for r in rs) >= 3,
    )
    adds = [r for r in recs if r["f"] == "add" and r["type"] == "ok"]
    assert adds and [a["read"] for a in adds] == list(range(len(adds)))


@pytest.mark.parametrize(
    "mode, error",
    [
        ("hang-acquire:2", "the program hung: no answer to acquire"),
        ("crash-write:2", "the program died with write"),
        ("junk-write:1", "malformed message from the program: '[1, 2, 3]' is not a JSON object"),
    ],
)
def test_a_bad_program_gives_info_and_a_client_error_and_the_run_goes_on(
    tmp_path: Path, mode: str, error: str
) -> None:
    recs = run_loop(
        tmp_path, fake(mode), seconds=4.0, request_timeout_s=1.0, params={"acquire_timeout_s": 0.5}
    )
    errors = [r for r in recs if r["f"] == "client-error"]
    assert errors and errors[0]["value"].startswith(error), errors
    bad = next(i for i, r in enumerate(recs) if r["f"] == "client-error")
    info = recs[bad - 1]
    assert info["type"] == "info" and info["error"] == "client-error"
    # a new process id after the info, a fresh program, and more ops after it
    later = [r for r in recs[bad:] if r["type"] == "ok" and r["f"] == "acquire"]
    assert later and later[0]["process"] == info["process"] + 3
    assert sum(r["f"] == "session" for r in recs) >= 2


def test_a_program_that_never_starts_is_given_up_on(tmp_path: Path) -> None:
    recs = run_loop(tmp_path, fake("silent-init"), seconds=30, init_timeout_s=0.3)
    errors = [r["value"] for r in recs if r["f"] == "client-error"]
    assert errors[:5] == ["init was never answered within 0.3 s"] * 5
    assert errors[-1].startswith("giving up")
    assert not [r for r in recs if r["type"] == "invoke"]  # gave up, not ran out its 30 s


def test_a_missing_program_is_a_client_error(tmp_path: Path) -> None:
    recs = run_loop(tmp_path, ["/nonexistent/program"], seconds=30)
    assert recs[0]["value"].startswith("the program could not be started")


def test_which_program_a_client_runs(tmp_path: Path) -> None:
    from zkjepsen.client.command import PROGRAM_DIR, PYTHON_DRIVER
    from zkjepsen.run.resolve import program_for

    assert program_for("kazoo", "lock").argv == (*PYTHON_DRIVER, "kazoo")
    assert program_for("kazoo", "lock", client_mode="in-process") is None
    assert program_for("rwlock", "rwlock") is None  # not a protocol workload: in-process
    plan = program_for("exec", "counter", client_cmd="java -jar x.jar", client_dir=str(tmp_path))
    assert plan.argv == ("/bin/sh", "-c", "java -jar x.jar") and plan.cwd == PROGRAM_DIR
    assert plan.mount == str(tmp_path.resolve())
    exe = tmp_path / "bin" / "driver"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    plan = program_for(f"exec:{exe}", "lock")
    assert plan.argv == (f"{PROGRAM_DIR}/driver",) and plan.mount == str(exe.parent.resolve())
    plan = program_for(f"exec:{exe}", "lock", client_dir=str(tmp_path))
    assert plan.argv == (f"{PROGRAM_DIR}/bin/driver",)


def test_list_recipes_shows_language_and_source() -> None:
    from click.testing import CliRunner

    from zkjepsen.cli.app import cli

    out = CliRunner().invoke(cli, ["list", "recipes"]).output
    line = next(x for x in out.splitlines() if x.startswith("kazoo "))
    assert "python" in line and "library" in line
    assert "port" in next(x for x in out.splitlines() if x.startswith("curator "))
    assert "exec:PATH" in out


def test_the_run_ending_mid_request_is_not_a_client_error(tmp_path: Path) -> None:
    path = tmp_path / "client-1.jsonl"
    ctx, rec = program_ctx(path)
    stop = ctx.stop_event
    client = ProgramClient(
        ctx,
        fake("hang-acquire:1"),
        servers="127.0.0.1:1",
        session_timeout_s=4.0,
        workload="lock",
        lock_path="/l",
    )
    threading.Timer(0.5, stop.set).start()
    # The hung acquire ends with the stop, not the program's hang timeout (a client-error).
    LockLoop(ctx, WireLockClient(client), "lock").run()
    rec.close()
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    assert not [r for r in recs if r["f"] == "client-error"]
    assert recs[-1]["type"] == "info" and recs[-1]["error"] == "stopped"
    assert not client.program.alive


def test_time_frozen_with_the_container_does_not_count_as_a_hang(monkeypatch) -> None:
    """A `docker pause` freezes recorder and program together; on thaw CLOCK_MONOTONIC has
    jumped. The answer is not late: only the time the recorder was awake counts."""
    import zkjepsen.client.program as program_mod
    from zkjepsen.client.program import Program

    class Frozen:
        calls = 0

        @classmethod
        def monotonic(cls) -> float:
            cls.calls += 1
            return time.monotonic() + (100.0 if cls.calls > 3 else 0.0)  # a 100 s freeze

    p = Program(fake("slow-holding"))
    p.start()
    try:
        assert p.call("init", 5).ok
        monkeypatch.setattr(program_mod, "time", Frozen)
        r = p.call("holding", 1.0)  # answered after 0.3 s awake, 100 s of wall clock
        assert r.ok and r.value is False
    finally:
        p.kill()


def test_a_program_other_users_cannot_read_is_refused_up_front(tmp_path: Path) -> None:
    """The program runs as an unprivileged user in its container (client/seal.py): a private
    --client-dir or exec:PATH would fail there, so it is bad input here."""
    from types import SimpleNamespace

    from zkjepsen.errors import BadInput
    from zkjepsen.run.resolve import validate_program

    def spec(recipe: str, client_cmd=None, client_dir=None):
        return SimpleNamespace(
            recipe=recipe, client_cmd=client_cmd, client_dir=client_dir, workload="lock",
            client_mode="protocol",
        )  # fmt: skip

    where = tmp_path / "program"
    where.mkdir(mode=0o755)
    where.chmod(0o755)  # whatever the umask
    exe = where / "driver"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    validate_program(spec(f"exec:{exe}"))
    validate_program(spec("exec", "sh driver", str(where)))
    exe.chmod(0o750)
    with pytest.raises(BadInput, match="driver is not readable by other users.*chmod o\\+rx"):
        validate_program(spec(f"exec:{exe}"))
    where.chmod(0o700)
    try:
        with pytest.raises(BadInput, match="not readable by other users"):
            validate_program(spec("exec", "sh driver", str(where)))
    finally:
        where.chmod(0o755)


class _Stat:
    def __init__(self, version: int) -> None:
        self.version = version


class _Zk:
    """The protected resource, enough for unguarded writes."""

    def __init__(self) -> None:
        self.data, self.version = b"{}", 0

    def get(self, path):
        return self.data, _Stat(self.version)

    def set(self, path, data, version=-1):
        self.data, self.version = data, self.version + 1
        return _Stat(self.version)


class _Lock:
    """A lock that is always free: every acquire gets the next token."""

    def __init__(self) -> None:
        self.n = 0

    def acquire(self, timeout):
        from zkjepsen.recipes.base import Token

        self.n += 1
        return Token(self.n, self.n, f"/zkjepsen/lock/lock-{self.n:010d}")

    def release(self):
        pass

    def holding(self):
        return True


def run_in_process(tmp_path: Path, workload: str, seconds: float = 0.5) -> list[dict]:
    from zkjepsen.workloads import get_workload
    from zkjepsen.workloads.context import ClientContext as InProcessContext

    class Ctx(InProcessContext):
        def make_recipe(self, path, session=None):
            return _Lock()

    path = tmp_path / f"in-process-{workload}.jsonl"
    rec = Recorder(str(path), time.monotonic_ns(), 1, 3)
    ctx = Ctx(
        client=1,
        nclients=3,
        session=_Zk(),
        hosts="",
        recipe="fake",
        params={"hold_s": 0.02, "think_s": 0.01, "retry_writes": False},
        recorder=rec,
        deadline=time.monotonic() + seconds,
        rng=random.Random(1),
    )
    get_workload(workload).run_client(ctx)
    rec.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def _shape(recs: list[dict]) -> set[tuple]:
    """What the checkers read of each completed op: f, type and the keys of its value."""
    return {
        (r["f"], r["type"], tuple(sorted(r["value"])) if isinstance(r.get("value"), dict) else None)
        for r in recs
        if r["type"] in ("invoke", "ok") and r["f"] != "session"
    }


@pytest.mark.parametrize(
    "workload, section", [("lock", "lock_section"), ("counter", "counter_section")]
)
def test_both_modes_run_the_one_client_loop(tmp_path: Path, monkeypatch, workload, section) -> None:
    """A second loop (the in-process mode recording on its own again) fails this: both modes
    must go through client/loop.py's sections and record the same shapes."""
    from zkjepsen.client import loop

    calls: list[str] = []
    real = getattr(loop.LockLoop, section)

    def counted(self, *a, **kw):
        calls.append(type(self.client).__name__)
        return real(self, *a, **kw)

    monkeypatch.setattr(loop.LockLoop, section, counted)
    # Both runs must be long enough to finish a whole cycle (acquire, the section, release):
    # on a loaded machine half a second may not be, so a short run is given a longer one
    # rather than compared; the comparison itself is of what ran, never of how fast.
    for seconds in (0.5, 2.0, 8.0):
        inproc = run_in_process(tmp_path, workload, seconds=seconds)
        wire = run_loop(tmp_path, fake(), seconds=2 * seconds, workload=workload)
        if all(_released(recs) for recs in (inproc, wire)):
            break
    assert {"InProcessLockClient", "WireLockClient"} <= set(calls), calls
    assert _shape(inproc) == _shape(wire), _shape(inproc) ^ _shape(wire)


def _released(recs: list[dict]) -> bool:
    return any(r["f"] == "release" and r["type"] == "ok" for r in recs)


def test_the_recorder_stops_its_program_at_the_runs_deadline(tmp_path: Path) -> None:
    """client/main.stop_at_deadline: the stop a SIGTERM gives, at the deadline the start
    barrier names, so a hung request gets the stop grace and not its own deadline (issue 40);
    a run that never opens the barrier leaves the watcher to end with the stop."""
    import threading

    from zkjepsen.client.main import stop_at_deadline

    barrier, stop = tmp_path / "start", threading.Event()
    watcher = stop_at_deadline(barrier, stop)
    barrier.write_text(repr(time.monotonic() + 0.3))
    assert stop.wait(30)  # a bounded wait, 100x the deadline
    watcher.join(30)
    assert not watcher.is_alive()
    other = threading.Event()
    watcher = stop_at_deadline(tmp_path / "never", other)
    assert not other.wait(0.3)  # no deadline known: nothing stops
    other.set()
    watcher.join(30)
    assert not watcher.is_alive()
