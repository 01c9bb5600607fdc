"""Heal per family: each family of fault kinds brings its own prepare and heal (as a Jepsen
nemesis package does), and the executor reaches them only through `faults.families()` and a
bound fault's `family`: it names no family, so a new family needs no edit of the executor."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

from zkjepsen.faultkinds.declare import FAMILIES
from zkjepsen.nemesis import schedule
from zkjepsen.nemesis.family import FaultFamily
from zkjepsen.nemesis.faults import FAULTS, IMPLEMENTATIONS, families

NEMESIS = Path(schedule.__file__).parent
# The executor: planning, running, recording and reading back a fault op.
EXECUTOR = ("schedule.py", "executed.py", "generator.py", "nemesis_log.py", "recorded.py")
# Every module that implements a family; "none" is the baseline kind, not a family.
FAMILY_MODULES = {
    "process", "partition", "clock", "client_clock", "proxy", "disk", "membership", "pg",
    "redlock",
}  # fmt: skip


def family_words() -> set[str]:
    return (set(FAMILIES) - {"none"}) | {f.name for f in families()} | FAMILY_MODULES


def named_families(source: str) -> list[str]:
    """Every family a module names: a family module it imports, a family's name in a string
    (but a table's key: a history op's `process` field is Jepsen's process, not a family)."""
    words, found = family_words(), []
    tree = ast.parse(source)
    keys = {id(k) for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys if k}
    for node in ast.walk(tree):
        if id(node) in keys:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            mods = [node.module.rsplit(".", 1)[-1]] + [a.name for a in node.names]
            found += [m for m in mods if m in FAMILY_MODULES]
        elif isinstance(node, ast.Import):
            found += [a.name.rsplit(".", 1)[-1] for a in node.names]
            found = [m for m in found if m in FAMILY_MODULES]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [node.value] if node.value in words else []
    return found


def test_the_checker_sees_a_family_named_by_import_or_string():
    src = (
        "from zkjepsen.nemesis import partition\n"
        "from zkjepsen.nemesis.disk import settle\n"
        "import zkjepsen.nemesis.clock\n"
        "if kind.family == 'process': pass\n"
        "x = 'heal'\n"
        "record = {'process': 'nemesis'}\n"
    )
    assert sorted(named_families(src)) == ["clock", "disk", "partition", "process"]


def test_the_executor_names_no_family():
    named = {m: named_families((NEMESIS / m).read_text()) for m in EXECUTOR}
    assert {m: n for m, n in named.items() if n} == {}


def test_every_implementation_brings_its_family_and_the_heals_have_an_order():
    for name, impl in IMPLEMENTATIONS.items():
        assert isinstance(impl.family, FaultFamily), name
    fams = families()
    assert len({f.rank for f in fams}) == len(fams)  # one order, no tie left to chance
    rank = {f.name: f.rank for f in fams}
    # A frozen container must be thawed before iptables can run in it, and clocks read.
    assert rank["process"] < rank["partition"] < rank["clock"]
    assert {f.name for f in fams} >= set(FAMILIES) - {"none"}


def test_heal_runs_every_familys_heal_in_rank_order(monkeypatch):
    calls: list[tuple[str, bool]] = []

    def fam(name: str, rank: int, problems: list[str]) -> FaultFamily:
        def heal(ctx: object, everything: bool) -> list[str]:
            calls.append((name, everything))
            return problems

        return FaultFamily(name, heal=heal, rank=rank)

    fakes = [fam("b", 1, ["b: stuck"]), fam("a", 0, []), fam("c", 2, ["c: gone"])]
    monkeypatch.setattr(schedule, "families", lambda: sorted(fakes, key=lambda f: f.rank))
    assert schedule.heal_context(SimpleNamespace(), everything=True) == ["b: stuck", "c: gone"]
    assert calls == [("a", True), ("b", True), ("c", True)]


def test_setup_prepares_each_family_of_the_runs_faults_once(monkeypatch):
    prepared: list[str] = []
    fam = FaultFamily("disk", heal=lambda c, e: [], rank=5, prepare=lambda c: prepared.append("x"))
    other = FaultFamily(
        "other", heal=lambda c, e: [], rank=9, prepare=lambda c: prepared.append("o")
    )
    for name, f in (("power-loss-one", fam), ("torn-write", fam), ("kill-one", other)):
        bound = FAULTS[name]
        monkeypatch.setitem(FAULTS, name, type(bound)(bound.kind, SimpleNamespace(family=f)))
    schedule.FaultNemesis(SimpleNamespace(), ["power-loss-one", "torn-write"]).setup()
    assert prepared == ["x"]  # once for both disk kinds; kill-one is not in this run


def test_the_proxy_familys_heal_disarms_a_proxy_whose_undo_failed():
    """A real proxy (in-process) armed by a fault whose undo was refused stays armed until the
    family's heal, which disarms it; a proxy whose client is not running is left alone."""
    from zkjepsen.client.zkproxy import ZkProxy
    from zkjepsen.nemesis import NemesisError, proxy

    token = "s3cret"
    p = ZkProxy(["127.0.0.1:1"], base_port=0).start()
    p.serve_control("127.0.0.1", 0, token=token)
    try:
        control = f"127.0.0.1:{p.listeners_control.getsockname()[1]}"
        handle = SimpleNamespace(proxy_token=token, status=lambda: "running")
        ctx = SimpleNamespace(client=lambda name: handle, run_dir=None, state={})
        detail = {"command": {"fault": "lose-create-reply", "n": 2}, "control": control}
        kind = FAULTS["proxy-lose-create"]
        kind.apply(ctx, ["c1"], detail)
        handle.proxy_token = "wrong"  # the undo is refused: the proxy stays armed
        try:
            kind.undo(ctx, ["c1"], detail)
        except NemesisError:
            pass
        assert p.plan.lose_create_reply == 2
        handle.proxy_token = token
        stopped = SimpleNamespace(proxy_token=token, status=lambda: "exited")
        ctx.state[proxy.ARMED]["c9"] = "127.0.0.1:1"  # its container gone: nothing to ask
        ctx.client = lambda name: stopped if name == "c9" else handle
        assert proxy.PROXY.heal(ctx, False) == []
        assert p.plan.lose_create_reply is None
        assert proxy.PROXY.heal(ctx, False) == []  # nothing armed is left
    finally:
        p.stop()
