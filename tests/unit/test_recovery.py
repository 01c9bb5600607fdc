"""A server that could not boot again after a disk fault is a finding of its own (issue 34,
checker/recovery.py): the verdict's `recovery` part, from the history alone."""

from __future__ import annotations

import json
from types import SimpleNamespace

from test_power import H, _lock_verdict

from zkjepsen.checker.recovery import recovery_of
from zkjepsen.nemesis import disk
from zkjepsen.report.summary import summarise

PANIC = "panic: tocommit(114) is out of range [lastIndex(9)]. Was the raft log corrupted?"


def _down(node="n2", why=PANIC):
    end = {"detail": {"failed_to_start": {node: f"{why}\ngoroutine 1 [running]:\nmain.main()"}}}
    if why is not None:
        end["detail"]["why_not_started"] = {node: why}
    return end


def test_a_server_that_could_not_boot_is_invalid_whatever_the_lock_saw():
    h = H().hold(1, 1, 6).hold(2, 7, 8)
    h.fault(2, 5, "power-loss-one", targets=("n2",), end=_down())
    r = _lock_verdict(h, ("power-loss-one",))
    assert r.parts["lock"].valid is True  # the lock held
    assert r.parts["recovery"].valid is False and r.valid is False
    (v,) = r.parts["recovery"].violations
    assert (v.kind, v.evidence["server"], v.evidence["fault"]) == (
        "could-not-boot",
        "n2",
        "power-loss-one",
    )
    assert (v.start, v.end) == (2 * 10**9, 5 * 10**9)  # the fault's window
    assert summarise(r.parts["recovery"]) == (
        f"1 server could not boot again; first: n2 after power-loss-one: {PANIC}"
    )
    table = json.loads(json.dumps(r.to_json()))  # results.json carries it
    assert table["recovery"]["valid"] is False


def test_every_server_back_is_valid_and_says_how_many_faults():
    h = H().hold(1, 1, 6).hold(2, 7, 8)
    h.fault(2, 5, "corrupt-file", targets=("n1",), fid=1)
    h.fault(5.5, 6.5, "torn-write", targets=("n3",), fid=2)
    r = recovery_of(h.history())
    assert r is not None and r.valid is True
    assert r.details["note"] == "every server came back after 2 disk faults"


def test_without_a_disk_fault_there_is_no_recovery_part():
    h = H().hold(1, 1, 6).hold(2, 7, 8).fault(2, 5, "pause-client")
    assert recovery_of(h.history()) is None
    assert "recovery" not in _lock_verdict(h).parts


def test_why_falls_back_to_the_logs_last_line():
    h = H().fault(2, 5, "torn-write", targets=("n1",), end=_down("n1", None))
    (v,) = recovery_of(h.history()).violations
    assert v.evidence["why"] == "main.main()"


def test_a_structured_log_line_reads_as_its_message_and_error():
    zap = '{"level":"fatal","msg":"discovery failed","error":"walpb: crc mismatch","x":1}'
    h = H().fault(2, 5, "corrupt-file", targets=("n2",), end=_down("n2", zap))
    (v,) = recovery_of(h.history()).violations
    assert v.evidence["why"] == "discovery failed: walpb: crc mismatch"


def test_the_nemesis_records_why_a_server_stayed_down(monkeypatch):
    log = "started\n" + PANIC + "\ngoroutine 1 [running]:\n" + "frame\n" * 20
    backend = SimpleNamespace(
        restart=lambda node: None, state=lambda node: "exited", logs=lambda node: log
    )
    ctx = SimpleNamespace(backend=backend, node=lambda n: n, each=lambda f, xs: [f(x) for x in xs])
    monkeypatch.setattr(disk, "BOOT_WATCH_S", 0.01)
    monkeypatch.setattr(disk, "LOG_SETTLE_S", 0)
    detail: dict = {}
    disk.boot(ctx, ["n2"], detail)
    assert detail["why_not_started"] == {"n2": PANIC} and detail["booted"] == []
    assert detail["failed_to_start"]["n2"].startswith(PANIC)  # kept above the stack's tail
