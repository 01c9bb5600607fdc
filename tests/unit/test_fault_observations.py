"""What each family's nemesis records as its observation (issue 47), on fake backends: the
reads are bounded and never raise (a failed read is a miss with why), and what they record is
what `faultkinds.landing` reads. The real engines: tests/integration (a run's schedule.json)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from zkjepsen.checker.recovery import recovery_of
from zkjepsen.errors import EnvironmentProblem
from zkjepsen.faultkinds import landing
from zkjepsen.nemesis import membership, partition, process
from zkjepsen.nemesis.targets import NemesisContext

# `iptables -S CHAIN -v` as iptables 1.8.9 (nf_tables) prints it in the ZooKeeper image.
LISTING = """-N zkj-t
-A zkj-t -s 10.9.9.2/32 -c 17 1020 -j DROP
-A zkj-t -d 10.9.9.2/32 -c 5 300 -j DROP
-A zkj-t -d 10.9.9.3/32 -m statistic --mode random --probability 0.10000000000 -c 40 2400 -j DROP
"""


def ctx_of(**backend) -> NemesisContext:
    nodes = [SimpleNamespace(name=n, ip=f"10.9.9.{i}") for i, n in enumerate(("n1", "n2"), 1)]
    return NemesisContext(SimpleNamespace(nodes=nodes, run_id="zkj-t", **backend))


def test_a_pause_records_who_was_seen_frozen_and_how_the_others_were_found():
    states = {"n1": "paused", "n2": "exited"}
    ctx = ctx_of(state=lambda node: states[node.name])
    detail: dict = {}
    process.observe(ctx, ["n1", "n2"], detail, "frozen", clients=False)
    assert detail == {"frozen": ["n1"], "not_frozen": {"n2": "exited"}}
    assert landing("pause-server", {}, {"targets": ["n1", "n2"], "detail": detail}) == (
        False,
        "never seen frozen (exited)",
    )


def test_a_kill_is_read_again_until_the_process_is_gone_and_for_a_bounded_time(monkeypatch):
    reads = iter(["running", "running", "exited"])
    ctx = ctx_of(state=lambda node: next(reads))
    detail: dict = {}
    process.observe(ctx, ["n1"], detail, "killed", clients=False)
    assert detail == {"killed": ["n1"]}
    monkeypatch.setattr(process, "OBSERVE_S", 0.1)  # one that never goes: given up, not waited
    ctx = ctx_of(state=lambda node: "running")
    process.observe(ctx, ["n2"], detail, "killed", clients=False)
    assert detail["killed"] == [] and detail["not_killed"] == {"n2": "running"}


def test_a_state_that_cannot_be_read_is_recorded_not_raised(monkeypatch):
    def broken(node):
        raise ConnectionError("engine gone")

    monkeypatch.setattr(process, "OBSERVE_S", 0.0)
    detail: dict = {}
    process.observe(ctx_of(state=broken), ["n1"], detail, "frozen", clients=False)
    assert detail == {"frozen": [], "not_frozen": {"n1": "unreadable: ConnectionError"}}


def test_a_cut_counts_only_the_packets_its_own_rules_dropped():
    cut = partition.drop_both_ways(["10.9.9.2"])
    assert partition.dropped_by(LISTING, cut) == 22  # not the loss rule's 40
    loss = [["-d", "10.9.9.3", "-m", "statistic", "--probability", "0.1", "-j", "DROP"]]
    assert partition.dropped_by(LISTING, loss) == 40
    assert partition.dropped_by("", cut) == 0


class Counted(partition.IptablesFault):
    def rules(self, ctx, targets, detail):
        return {t: partition.drop_both_ways(["10.9.9.2"]) for t in targets}


def test_a_cuts_undo_reads_its_counters_before_it_deletes_its_rules(monkeypatch):
    scripts: list[str] = []

    def run(ctx, name, script):
        scripts.append(script)
        if name == "n2":
            raise partition.NemesisError("iptables in n2 failed (1): is not running")
        return LISTING + partition.COUNTED + "\n"

    monkeypatch.setattr(partition, "_run", run)
    detail: dict = {}
    with pytest.raises(partition.NemesisError, match="n2"):
        Counted().undo(ctx_of(), ["n1", "n2"], detail)
    assert detail["dropped"] == {"n1": 22} and "is not running" in detail["dropped_unread"]["n2"]
    assert scripts[0].index("-S zkj-t -v") < scripts[0].index("-D zkj-t")
    assert landing("partition-one", {}, {"targets": ["n1"], "detail": detail}).landed


def test_a_member_change_records_the_members_served_and_the_ones_asked_for():
    members = {"members": ["n1", "n2", "n3"], "version": "0x1"}
    be = SimpleNamespace(
        nodes=[SimpleNamespace(name=n) for n in ("n1", "n2", "n3")],
        membership=lambda: members,
        remove_member=lambda node: members.update(members=["n1", "n3"]),
        add_member=lambda: None,
        leader=lambda: None,
    )
    ctx = SimpleNamespace(backend=be, node=lambda n: SimpleNamespace(name=n))
    detail: dict = {}
    membership.MemberFault("remove").apply(ctx, ["n2"], detail)
    assert (detail["served"], detail["intended"]) == (["n1", "n3"], ["n1", "n3"])
    assert landing("member-remove", {}, {"targets": ["n2"], "detail": detail}).landed
    # the service kept the member it said it removed: not the configuration asked for
    stuck = {**detail, "served": ["n1", "n2", "n3"]}
    assert not landing("member-remove", {}, {"targets": ["n2"], "detail": stuck}).landed


class Roll:
    """A backend whose roll can fail: no next version, or a server that does not come back."""

    def __init__(self, upgrade_error: str = "", down: str = "") -> None:
        self.nodes = [SimpleNamespace(name=n) for n in ("n1", "n2", "n3")]
        self.version = {n.name: "3.8.4" for n in self.nodes}
        self.upgrade_error, self.down = upgrade_error, down

    def leader(self):
        return self.nodes[0]

    def server_version(self, node):
        return None if node.name == self.down else self.version[node.name]

    def upgrade_image(self):
        if self.upgrade_error:
            raise EnvironmentProblem(self.upgrade_error)
        return "zkjepsen/zookeeper:3.9"

    def restart_server(self, node, image, step):
        if node.name == self.down:
            raise EnvironmentProblem(f"ZooKeeper on {node.name} exited during start-up")
        self.version[node.name] = "3.9.3"

    def logs(self, node):
        return "starting\nCaused by: java.io.IOException: CRC check failed\n\tat x"


def roll(be: Roll) -> tuple[dict, dict]:
    """The roll's start and end records as the nemesis writes them (an apply error in its end)."""
    ctx = SimpleNamespace(backend=be, node=lambda n: next(x for x in be.nodes if x.name == n))
    fault = membership.RollingFault(upgrade=True)
    targets, detail = fault.resolve(ctx, "all", None, {})
    end: dict = {"fault_id": 1, "phase": "end", "targets": targets, "detail": detail}
    try:
        fault.apply(ctx, targets, detail)
    except Exception as e:  # as nemesis/schedule.py records it
        end["error"] = f"{type(e).__name__}: {e}"
    return {"fault_id": 1, "phase": "start", "targets": targets}, end


def test_a_roll_lands_when_every_server_was_seen_on_the_new_version():
    start, end = roll(Roll())
    assert end["detail"]["served"] == {"n2": "3.9.3", "n3": "3.9.3", "n1": "3.9.3"}
    assert landing("rolling-upgrade", start, end) == (True, "every server seen on the new version")


def test_the_issues_second_upgrade_is_missed_with_the_services_words():
    start, end = roll(Roll(upgrade_error="no upgrade from ZooKeeper 3.9.3; 3.8 has"))
    got = landing("rolling-upgrade", start, end)
    assert got == (
        False,
        "never went in: EnvironmentProblem: no upgrade from ZooKeeper 3.9.3; 3.8 has",
    )


def test_a_server_a_roll_left_down_is_missed_and_a_recovery_finding():
    from zkjepsen.history import History, Op

    start, end = roll(Roll(down="n3"))
    got = landing("rolling-upgrade", start, end)
    assert not got.landed and got.why.startswith("n3 did not come back: EnvironmentProblem")
    assert end["detail"]["why_not_started"] == {
        "n3": "Caused by: java.io.IOException: CRC check failed"
    }
    ops = [Op(0, 1, "nemesis", "info", "rolling-upgrade", None, start, None)]
    ops.append(Op(1, 9, "nemesis", "info", "rolling-upgrade", None, end, None))
    r = recovery_of(History(ops))
    assert r is not None and r.valid is False
    (v,) = r.violations
    assert (v.kind, v.evidence["server"], v.evidence["fault"]) == (
        "could-not-boot",
        "n3",
        "rolling-upgrade",
    )
    # a roll that brought every server back: the recovery part says so, in its own words
    start, end = roll(Roll())
    ops = [Op(0, 1, "nemesis", "info", "rolling-upgrade", None, start, None)]
    ops.append(Op(1, 9, "nemesis", "info", "rolling-upgrade", None, end, None))
    back = recovery_of(History(ops))
    assert back is not None and back.details["note"] == "every server came back after 1 roll"
