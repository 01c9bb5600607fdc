"""The `shared-master` role (issue 50): a fault on one server aimed at a master the CURRENT
Redlock holder's lock is on, read from the masters its acquire's record names (`granted`), never
guessed; on the menu only where it applies (run/resolve.py `role_refusal`, the one predicate for
"may I" and "which"); a fault whose master held no holder's lock when hit missed."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.client.lockclient import WireLockClient, acquired_record
from zkjepsen.client.protocol import Reply
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import landing
from zkjepsen.faultkinds.landing import OBSERVED_KEYS, unobserved
from zkjepsen.history.holding import Holding, holding_of
from zkjepsen.nemesis import NoTargets
from zkjepsen.nemesis import redlock as nr
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.nemesis.triggers import Trigger, aimed_client, choose_master, grant_of
from zkjepsen.recipes.base import Token
from zkjepsen.recipes.redlock import Redlock
from zkjepsen.run import hunt as h
from zkjepsen.run.resolve import role_refusal, spec_from_json, validate_spec
from zkjepsen.spec import SHARED_MASTER

ADDR = {f"10.0.0.{i}:6379": f"n{i}" for i in range(1, 6)}  # the run's masters by address
BY_NAME = {v: k for k, v in ADDR.items()}


def acquired(t: int, granted: list[str] | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": "ok", "f": "acquire", "time": t, "value": {"token": t}}
    if granted is not None:
        rec["granted"] = [BY_NAME[n] for n in granted]
    return rec


# ---- the recipe records its grant ------------------------------------------------------------
class _Master:
    def __init__(self, yes: bool) -> None:
        self.yes = yes

    def set(self, *a: Any, **k: Any) -> bool:
        return self.yes

    def eval(self, *a: Any) -> None:
        return None

    def close(self) -> None:
        return None


class _Session:
    addrs = [(f"10.0.0.{i}", 6379) for i in range(1, 6)]
    timeout = 4.0

    def lock_key(self, path: str) -> str:
        return "zkjepsen:lock" + path

    def next_token(self, path: str) -> int:
        return 7


def test_redlock_records_the_masters_that_said_yes_and_the_loop_records_them_beside_the_value():
    r = Redlock(_Session(), "/zkjepsen/lock", identifier="client-3")
    r.masters = [_Master(yes) for yes in (True, False, True, False, True)]
    tok = r.acquire(1.0)
    assert tok is not None and tok.granted == ("10.0.0.1:6379", "10.0.0.3:6379", "10.0.0.5:6379")
    value, beside = acquired_record(tok.to_value())
    # what the checkers read, as ever, and when its validity ends (test_own_lease.py)
    assert value == {"token": 7, "seq": 7, "node": tok.node, "valid_ms": tok.valid_ms}
    assert beside == {"granted": ["10.0.0.1:6379", "10.0.0.3:6379", "10.0.0.5:6379"]}
    # a recipe that records none answers as before
    assert acquired_record(Token(1, 1, "/l/x").to_value()) == (
        {"token": 1, "seq": 1, "node": "/l/x"},
        {},
    )


class _Program:
    def __init__(self, value: Any) -> None:
        self.value = value
        self.faulted: str | None = None
        self.request_timeout_s = 1.0

    def call(self, op: str, timeout_s: float | None = None, **fields: Any) -> Reply:
        return Reply(1, "ok", self.value)

    def fault(self, sentence: str) -> Exception:
        self.faulted = sentence
        return RuntimeError(sentence)


def test_a_program_answers_granted_through_the_wire_protocol_or_is_told_it_broke_it():
    ok = _Program({"token": 5, "node": "/zkjepsen/lock/redis-5", "granted": ["10.0.0.2:6379"]})
    a = WireLockClient(ok).acquire(1.0)  # type: ignore[arg-type]
    assert acquired_record(a.value)[1] == {"granted": ["10.0.0.2:6379"]}
    bad = _Program({"token": 5, "node": "/zkjepsen/lock/redis-5", "granted": "n2"})
    with pytest.raises(RuntimeError):
        WireLockClient(bad).acquire(1.0)  # type: ignore[arg-type]
    assert bad.faulted and "granted" in bad.faulted


# ---- the live state: whose grant, which master -----------------------------------------------
def test_the_holders_grant_lives_from_its_acquire_to_its_release():
    now = holding_of({2: [acquired(10, ["n1", "n2", "n4"])], 3: [acquired(20)]})
    assert now.grants == {2: tuple(BY_NAME[n] for n in ("n1", "n2", "n4"))}
    assert grant_of(now) == (2, now.grants[2])  # c3 is newer, but its record names no masters
    assert aimed_client(SHARED_MASTER, now, 3) == 2
    released = holding_of(
        {2: [acquired(10, ["n1", "n2", "n4"]), {"type": "invoke", "f": "release", "time": 30}]}
    )
    assert released.grants == {} and grant_of(released) is None
    assert aimed_client(SHARED_MASTER, released, None) is None  # the trigger waits for the next


def test_the_firings_holder_is_kept_while_it_holds_else_the_newest_with_a_grant():
    now = holding_of({1: [acquired(10, ["n1", "n2", "n3"])], 4: [acquired(12, ["n3", "n4", "n5"])]})
    assert grant_of(now, prefer=1)[0] == 1
    assert grant_of(now, prefer=2)[0] == 4  # c2 does not hold: the newest holder with a grant


def test_a_master_is_drawn_only_from_the_grant_and_an_unknown_address_is_never_guessed():
    rng = random.Random(0)
    master, on = choose_master([BY_NAME["n2"], BY_NAME["n5"], BY_NAME["n1"]], ADDR, rng)
    assert on == ["n1", "n2", "n5"] and master in on
    assert choose_master(["192.168.9.9:6379"], ADDR, rng) is None


@settings(max_examples=200, deadline=None)
@given(
    grants=st.dictionaries(
        st.integers(1, 6), st.lists(st.sampled_from(sorted(ADDR) + ["1.2.3.4:1"]), max_size=5)
    ),
    released=st.sets(st.integers(1, 6)),
    prefer=st.none() | st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_property_the_master_hit_is_one_the_chosen_holders_record_names(
    grants, released, prefer, seed
):
    records = {
        c: [acquired(100 + c, None)]
        + ([{**acquired(100 + c), "granted": list(g)}] if g else [])
        + ([{"type": "invoke", "f": "release", "time": 200 + c}] if c in released else [])
        for c, g in grants.items()
    }
    now = holding_of(records)
    found = grant_of(now, prefer)
    holding_with = {c for c in grants if c not in released and grants[c]}
    if not holding_with:
        assert found is None
        return
    assert found is not None
    holder, granted = found
    assert holder in holding_with and granted == tuple(grants[holder])
    if prefer in holding_with:
        assert holder == prefer
    chosen = choose_master(granted, ADDR, random.Random(seed))
    named = {ADDR[a] for a in granted if a in ADDR}
    if not named:
        assert chosen is None
    else:
        assert chosen is not None and chosen[0] in named and set(chosen[1]) == named


# ---- resolving at the firing, proving at the master -----------------------------------------
class _Node:
    def __init__(self, i: int) -> None:
        self.name, self.id, self.ip, self.port = f"n{i}", i, f"10.0.0.{i}", 6379

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


class _Backend:
    nodes = [_Node(i) for i in range(1, 6)]
    run_id = "h3-unit"


class _Live:
    def __init__(self, now: Holding) -> None:
        self.now = now

    def holding(self) -> Holding:
        return self.now


class _Pool:
    def __init__(self, now: Holding) -> None:
        self.live = _Live(now)
        self.handles: list[Any] = []


def ctx_with(now: Holding, session_timeout_s: float = 0.01) -> NemesisContext:
    return NemesisContext(_Backend(), _Pool(now), session_timeout_s=session_timeout_s)  # type: ignore[arg-type]


def test_resolving_names_the_holder_its_grant_and_the_master_hit(monkeypatch):
    now = holding_of({2: [acquired(10, ["n2", "n3", "n4"])]})
    master, detail = nr.resolve_shared_master(ctx_with(now), 2, random.Random(1))
    d = detail["shared_master"]
    assert master in ("n2", "n3", "n4") and d["master"] == master
    assert d == {
        **d,
        "holder": "c2",
        "granted": ["n2", "n3", "n4"],
        "grant_ns": 10,
        "named_by": "trigger",
        "decisive": True,  # 3 of 5: its loss leaves the holder short of a majority
    }
    wide = holding_of({2: [acquired(10, ["n1", "n2", "n3", "n4"])]})
    _, detail = nr.resolve_shared_master(ctx_with(wide), 2, random.Random(1))
    assert detail["shared_master"]["decisive"] is False  # 4 of 5: one loss leaves 3
    with pytest.raises(NoTargets, match="no holder's acquire named"):
        nr.resolve_shared_master(ctx_with(holding_of({})), None, random.Random(1))


@pytest.mark.parametrize(
    "on_master, held",
    [
        ({"zkjepsen:lock:/l": "client-2:ab12"}, True),
        ({}, False),
        (None, False),
        ({"k": "client-5:x"}, False),
    ],
)
def test_the_proof_is_the_masters_own_lock_key_of_a_holder_whose_grant_names_it(
    monkeypatch, on_master, held
):
    now = holding_of({2: [acquired(10, ["n2", "n3", "n4"])]})
    monkeypatch.setattr(nr, "_lock_values", lambda ctx, node: on_master)
    detail: dict[str, Any] = {"shared_master": {"holder": "c2", "master": "n3"}}
    nr.observe_shared_master(ctx_with(now), ["n3"], detail)
    assert detail["held_on_master"] is held and detail["lock_on_master"] == on_master
    assert detail["holders_on_master"] == (["c2"] if held else [])
    # the landing predicate reads it; a replay starts without it
    start = {"fault_id": 1, "targets": ["n3"], "detail": detail}
    end = {"fault_id": 1, "targets": ["n3"], "detail": {**detail, "killed": ["n3"]}}
    seen = landing("kill-one", start, end)
    assert seen.landed is held, seen
    if not held:
        assert seen.why == "its master held no holder's lock when hit"
    assert {"held_on_master", "lock_on_master", "holders_on_master"} <= set(OBSERVED_KEYS)
    assert "held_on_master" not in unobserved(detail) and "shared_master" in unobserved(detail)


# ---- the one predicate: the menu, and what a spec may ask -----------------------------------
def _spec(**d: Any):
    spec = spec_from_json({"time_limit_s": 15, **d})
    validate_spec(spec)
    return spec


REDLOCK = _spec(recipe="redlock", clients=4)


def test_the_menu_has_the_role_on_redlock_for_every_fault_on_one_server_and_every_option_runs():
    m = h.menu(REDLOCK)
    aimed = {c.fault for a in m.arms for c in m.choices(a) if c.target == SHARED_MASTER}
    ones = {f for f in m.magnitudes if h.KINDS[f].target == "one"}
    assert aimed == ones and {"kill-one", "pause-server", "clock-bump"} <= aimed
    for arm in m.arms:
        for c in m.choices(arm):
            if c.target != SHARED_MASTER:
                continue
            run = h.run_spec(REDLOCK, c, 0, random.Random(0))
            validate_spec(run)
            table = run.generator[1]
            assert table["target"] == SHARED_MASTER, table
            if c.moment != "at-a-time":  # a match when no holder's record names masters waits
                assert Trigger.from_json(table["trigger"]).aim == SHARED_MASTER


@pytest.mark.parametrize(
    "spec",
    [
        {"recipe": "kazoo", "nodes": 3},
        {"recipe": "redis-set-px", "backend": "redis-sentinel"},
        {"recipe": "pottery-redlock", "backend": "redlock", "clients": 4},
        {"recipe": "etcd-v3lock"},
    ],
)
def test_the_menu_has_no_such_role_where_it_does_not_apply(spec):
    base = _spec(**spec)
    m = h.menu(base)
    assert not [c for a in m.arms for c in m.choices(a) if c.target == SHARED_MASTER]
    assert role_refusal(base, SHARED_MASTER) is not None


def test_a_spec_may_aim_a_fault_on_one_server_at_it_on_redlock_only():
    assert role_refusal(REDLOCK, SHARED_MASTER, "kill-one") is None
    _spec(recipe="redlock", nemesis=["kill-one"], fault_target=SHARED_MASTER)
    item = {"fault": "pause-server", "target": SHARED_MASTER, "duration": "1x"}
    _spec(recipe="redlock", generator=[{"sleep": 2}, item])
    with pytest.raises(BadInput, match="not Redlock's independent masters"):
        _spec(recipe="kazoo", nemesis=["kill-one"], fault_target=SHARED_MASTER)
    with pytest.raises(BadInput, match="records none"):
        _spec(
            recipe="pottery-redlock",
            backend="redlock",
            nemesis=["kill-one"],
            fault_target=SHARED_MASTER,
        )
    with pytest.raises(BadInput, match="names one server"):
        _spec(recipe="redlock", nemesis=["partition-redlock-restart"], fault_target=SHARED_MASTER)
    with pytest.raises(BadInput):  # a client's fault: the role names a server
        _spec(recipe="redlock", nemesis=["kill-client"], fault_target=SHARED_MASTER)
