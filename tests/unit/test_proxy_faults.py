"""Proxy faults as nemesis kinds, without Docker: the command reaches a real proxy's control
port, the end disarms it, and a spec that uses them without the proxy is refused up front."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from zkjepsen.client.zkproxy import ZkProxy, command
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import landing
from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec

TOKEN = "s3cret"
CTX = SimpleNamespace(
    client=lambda name: SimpleNamespace(proxy_token=TOKEN), run_dir=None, state={}
)


@pytest.fixture
def proxy():
    p = ZkProxy(["127.0.0.1:1"], base_port=0).start()
    p.serve_control("127.0.0.1", 0, token=TOKEN)
    yield p, f"127.0.0.1:{p.listeners_control.getsockname()[1]}"
    p.stop()


def test_every_proxy_fault_is_a_listed_kind():
    for name in (
        "proxy-lose-create",
        "proxy-delay-reply",
        "proxy-drop-pings",
        "proxy-close-after",
        "proxy-drop-request",
    ):
        assert FAULTS[name].family == "proxy" and FAULTS[name].impl is not None


def test_resolve_names_the_command_and_the_clients_control_address():
    handle = SimpleNamespace(index=2, ip="10.0.0.7")
    ctx = SimpleNamespace(client=lambda name: handle, clients=lambda: [handle])
    targets, detail = FAULTS["proxy-delay-reply"].resolve(
        ctx, "client:2", random.Random(1), {"op": "getData"}
    )
    assert targets == ["c2"] and detail["control"] == "10.0.0.7:7181"
    assert detail["command"] == {"fault": "delay-reply", "seconds": 2.0, "op": "getData"}


def test_apply_arms_the_proxy_and_undo_disarms_it(proxy):
    p, control = proxy
    kind = FAULTS["proxy-lose-create"]
    detail = {"command": {"fault": "lose-create-reply", "n": 2}, "control": control}
    kind.apply(CTX, ["c1"], detail)
    assert p.plan.lose_create_reply == 2
    kind.undo(CTX, ["c1"], detail)
    assert p.plan.lose_create_reply is None
    with pytest.raises(NemesisError, match="refused"):
        kind.apply(CTX, ["c1"], {"command": {"fault": "nonsense"}, "control": control})
    with pytest.raises(NemesisError, match="proxy = true"):
        kind.apply(CTX, ["c1"], {**detail, "control": "127.0.0.1:1"})


def test_a_proxy_fault_lands_only_when_the_proxy_acted(tmp_path):
    """Its end records the proxy's own events for the act it armed, appended between the
    command and the heal (`acted`): one that never came is a miss (faultkinds.landing)."""
    events = tmp_path / "c1" / "proxy-events.jsonl"
    events.parent.mkdir()
    out = events.open("a", buffering=1)
    p = ZkProxy(["127.0.0.1:1"], base_port=0, events=lambda e: out.write(json.dumps(e) + "\n"))
    p.start()
    p.serve_control("127.0.0.1", 0, token=TOKEN)
    run_dir = SimpleNamespace(client_history=lambda i: tmp_path / f"c{i}" / f"client-{i}.jsonl")
    ctx = SimpleNamespace(client=CTX.client, run_dir=run_dir, state={})
    control = f"127.0.0.1:{p.listeners_control.getsockname()[1]}"
    kind = FAULTS["proxy-lose-create"]
    try:
        p.note("create-reply-lost", path="/old")  # an act before this fault: not its own
        detail = {"command": {"fault": "lose-create-reply", "n": 1}, "control": control}
        kind.apply(ctx, ["c1"], detail)
        p.note("create-reply-lost", path="/l/lock-1")  # the proxy's own note of the act
        kind.undo(ctx, ["c1"], detail)
        assert [e["path"] for e in detail["acted"]] == ["/l/lock-1"]
        ends = {"targets": ["c1"], "detail": detail}
        assert landing("proxy-lose-create", {}, ends) == (True, "the proxy acted")
        quiet = {"command": {"fault": "lose-create-reply", "n": 1}, "control": control}
        kind.apply(ctx, ["c1"], quiet)
        kind.undo(ctx, ["c1"], quiet)
        assert quiet["acted"] == []
        got = landing("proxy-lose-create", {}, {"targets": ["c1"], "detail": quiet})
        assert got == (False, "the proxy never acted")
    finally:
        p.stop()
        out.close()


def test_only_the_nemesis_commands_the_proxy(proxy):
    """The program under test shares the proxy's network namespace: without the token (which
    it never sees) it cannot arm a fault on itself, nor heal one."""
    p, control = proxy
    for token in ("", "guess"):
        answer = command(control, {"fault": "drop-pings"}, token=token)
        assert answer == {"ok": False, "error": "not the nemesis (no or wrong token)"}
    assert not p.plan.drop_pings
    assert command(control, {"fault": "drop-pings"}, token=TOKEN)["ok"] and p.plan.drop_pings


def test_a_proxy_fault_needs_the_proxy():
    with pytest.raises(BadInput, match="proxy = true"):
        validate_spec(TestSpec(nemesis=["proxy-drop-pings"]))
    validate_spec(TestSpec(nemesis=["proxy-drop-pings"], proxy=True))
