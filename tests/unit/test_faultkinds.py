"""A fault kind is declared once (`zkjepsen.faultkinds`): a kind added in one declaration gets its
power rule, its refusal on the services that lack what it needs (one sentence, exit 254, before
anything is created; n/a in a matrix) and its `list nemeses` line, with no other table to edit."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from zkjepsen.backends import registry
from zkjepsen.checker.power import power_of, rule_of
from zkjepsen.cli.app import cli
from zkjepsen.cli.matrix import cell_refusal
from zkjepsen.faultkinds import (
    ABILITIES,
    KINDS,
    PEERS,
    WIRE_PROXY,
    during,
    instant,
    kind,
    silence,
)
from zkjepsen.faultkinds.abilities import DATA_FILES
from zkjepsen.faultkinds.facts import RunFacts, refusal
from zkjepsen.history import History, Op
from zkjepsen.nemesis import faults
from zkjepsen.report import findings
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from landed import observation  # noqa: E402
from test_bad_input import assert_refused, here, run_cli  # noqa: E402, F401 - fixtures

S = 1_000_000_000
NEW = "disk-corrupt"


@pytest.fixture
def declared(monkeypatch):
    """One new kind, in one declaration: it needs peers and the servers' data files, which
    only ZooKeeper is made to have here (etcd's and Redis's taken away)."""
    new = kind(
        NEW,
        "process",
        "one",
        "flip bytes in one server's data files",
        instant("corruption", "corruptions", "corruption"),
        PEERS,
        DATA_FILES,
        observer="corrupted",
    )
    monkeypatch.setitem(KINDS, NEW, new)
    zk = registry.backend_info("zookeeper")
    more = dataclasses.replace(zk, abilities=zk.abilities | {DATA_FILES})
    monkeypatch.setitem(registry.backends(), "zookeeper", more)
    for name in ("etcd", "redis"):
        info = registry.backend_info(name)
        less = dataclasses.replace(info, abilities=info.abilities - {DATA_FILES})
        monkeypatch.setitem(registry.backends(), name, less)
    return new


def held_then_hit(f: str, hit_s: float) -> History:
    """Client 1 holds from 1 s to 6 s; fault `f` hits server n1 from 2 s for `hit_s`, and its
    nemesis saw it land (its declared observer's observation, landed.py)."""
    end = {"fault_id": 1, "phase": "end", "targets": ["n1"], **observation(f, ["n1"])}
    ops = [
        (0.9, 1, "invoke", "acquire", None),
        (1.0, 1, "ok", "acquire", {"token": 1}),
        (2.0, "nemesis", "info", f, {"fault_id": 1, "phase": "start", "targets": ["n1"]}),
        (2.0 + hit_s, "nemesis", "info", f, end),
        (6.0, 1, "invoke", "release", None),
        (6.1, 1, "ok", "release", None),
    ]
    return History(
        [
            Op(i, int(t * S), p, typ, fn, "/l", v, None if p == "nemesis" else 1)
            for i, (t, p, typ, fn, v) in enumerate(ops)
        ]
    )


def test_a_new_kind_gets_its_power_rule_from_its_declaration(declared, monkeypatch):
    assert rule_of(NEW) == "instant"
    p = power_of(held_then_hit(NEW, 0.5), session_timeout_s=2.0)
    assert p.line() == (
        "0 violations in 1 landed corruption: per-corruption violation rate ≤ 95.0 % (95 %)"
    )
    # The same history under a silence rule: 0.5 s of fault is no session timeout (2 s).
    monkeypatch.setitem(KINDS, NEW, declared._replace(power=silence()))
    assert rule_of(NEW) == "silence"
    assert power_of(held_then_hit(NEW, 0.5), session_timeout_s=2.0).opportunities() == 0
    assert power_of(held_then_hit(NEW, 2.5), session_timeout_s=2.0).opportunities() == 1


def test_a_new_kind_is_refused_where_the_service_lacks_what_it_needs(declared, here, capsys):  # noqa: F811
    validate_spec(TestSpec(recipe="kazoo", nemesis=[NEW]))  # ZooKeeper has both here
    code, err = run_cli(["test", "--recipe", "etcd3-python", "--nemesis", NEW], capsys)
    assert_refused(code, err, here, f"{NEW} does not apply to backend etcd", ABILITIES[DATA_FILES])
    code, err = run_cli(["test", "--recipe", "redis-set-px", "--nemesis", NEW], capsys)
    assert_refused(code, err, here, ABILITIES[PEERS], ABILITIES[DATA_FILES])
    cells = [(f"{r}|{NEW}", TestSpec(recipe=r, nemesis=[NEW])) for r in ("kazoo", "redis-set-px")]
    na = {cell: why for cell, spec in cells if (why := cell_refusal(spec))}
    assert list(na) == [f"redis-set-px|{NEW}"]
    assert findings.cell_text({"na": na[f"redis-set-px|{NEW}"]}).startswith("n/a (its servers")


def test_a_new_kind_has_its_list_line(declared):
    out = CliRunner().invoke(cli, ["list", "nemeses"]).output
    (line,) = [x for x in out.splitlines() if x.startswith(NEW + " ")]
    assert line.split(None, 1)[1] == (
        "flip bytes in one server's data files  [needs: data-files, peers]"
    )


def test_a_new_kind_needing_the_wire_proxy_is_refused_without_it(monkeypatch, here, capsys):  # noqa: F811
    monkeypatch.setitem(
        KINDS, "proxy-x", kind("proxy-x", "proxy", "holder", "x", during(), clients=(WIRE_PROXY,))
    )
    code, err = run_cli(["test", "--nemesis", "proxy-x"], capsys)
    assert_refused(
        code, err, here, "proxy-x does not apply to backend zookeeper with these clients",
        "wire proxy", "proxy = true",
    )  # fmt: skip


def test_a_refusal_names_every_ability_it_lacks_in_one_sentence():
    k = kind("k", "clock", "leader", "d", during(), "server-clock", "leader")
    assert refusal(k, RunFacts("zookeeper", 3, frozenset({"leader", "server-clock"}))) is None
    assert refusal(k, RunFacts("redis", 1, frozenset({"leader"}))) == (
        "k does not apply to backend redis: its servers run under neither libfaketime nor "
        "zkj-timewarp"
    )
    assert refusal(k, RunFacts("redlock", 5, frozenset())) == (
        "k does not apply to backend redlock: it has no leader and its servers run under "
        "neither libfaketime nor zkj-timewarp"
    )


def test_a_declaration_with_an_unknown_ability_or_family_is_refused():
    with pytest.raises(ValueError, match="unknown ability"):
        kind("k", "process", "one", "d", instant(), "pears", observer="killed")
    with pytest.raises(ValueError, match="k"):
        kind("k", "floppy", "one", "d", instant())


def test_a_declaration_says_how_its_fault_is_seen_to_land():
    """A fault counts only when its effect was observed at its target (faultkinds/landing.py):
    a kind whose family shares no observer must name its own, and a known one."""
    with pytest.raises(ValueError, match="no observer says how it lands"):
        kind("k", "process", "one", "d", instant())
    with pytest.raises(ValueError, match="no observer says how it lands"):
        kind("k", "process", "one", "d", instant(), observer="hoped")
    assert kind("k", "partition", "one", "d", silence()).observer == "dropped"
    assert kind("k", "process", "one", "d", instant(), observer="frozen").observer == "frozen"
    assert kind("none", "none", "all", "baseline", None).observer == ""  # not a fault


def test_every_service_declares_abilities_the_faults_know():
    for name, info in registry.backends().items():
        assert info.abilities and info.abilities <= set(ABILITIES), name


def test_every_declared_kind_is_implemented_and_every_implementation_declared(monkeypatch):
    assert set(faults.FAULTS) == set(KINDS)
    assert all(b.impl is not None for n, b in faults.FAULTS.items() if KINDS[n].power)
    monkeypatch.setitem(KINDS, NEW, kind(NEW, "process", "one", "d", instant(), observer="killed"))
    with pytest.raises(ImportError, match=NEW):
        faults._bind()  # declared without an implementation: the nemesis does not load


def test_the_declarations_import_nothing_heavy():
    """`check --model lock` reads which kinds kill a client: this room must stay light."""
    code = (
        "import sys, zkjepsen.faultkinds; print([m for m in sys.modules if m in "
        "('dataclasses', 'inspect') or m.startswith('zkjepsen.') and 'faultkinds' not in m])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_rules_table_in_verdicts_md_says_what_the_declarations_say():
    import fnmatch
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "verdicts.md").read_text()
    rows = re.findall(r"^\| (silence|instant|during) \| (.+?) \|", doc, re.M)
    listed = set()
    for rule, cell in rows:
        for pattern in re.findall(r"`([a-z*-]+)`", cell):
            names = fnmatch.filter(KINDS, pattern)
            assert names and all(rule_of(n) == rule for n in names), (rule, pattern)
            listed.update(names)
    assert listed == set(KINDS) - {"none"}
