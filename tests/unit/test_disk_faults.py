"""Disk faults without Docker (issue 34): the layer's answers read back, corrupt-file's damage,
the lock checker naming the power loss before a violation, and what a disk fault declares.
The layer itself is proven against ZooKeeper in tests/integration/test_power_loss.py."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest
from test_checker_lock import H

from zkjepsen.backends.postgres.service import PostgresSettings
from zkjepsen.backends.registry import backend_info
from zkjepsen.checker.lock import LockChecker
from zkjepsen.docker import powerfs
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS, unmet
from zkjepsen.nemesis import disk
from zkjepsen.nemesis.disk import corrupt


def test_the_layers_answer_is_read_back_and_its_absence_is_empty():
    line = '{"lost_bytes": 914, "lost_writes": 2, "lost_names": 0, "torn_bytes_kept": 0}\n'
    assert powerfs.parse("noise\n" + line)["lost_bytes"] == 914
    assert powerfs.parse("powerfs: connect: No such file or directory") == {}
    assert powerfs.command("drop", 30)[-2:] == ["drop", "30"]
    assert powerfs.command("stat")[-1] == "stat"


def test_corrupt_flips_bytes_of_the_written_part_or_cuts_it(tmp_path):
    path = tmp_path / "log.1"
    written = bytes(range(1, 101))
    path.write_bytes(written + b"\0" * 900)  # preallocated with zeros, as ZooKeeper's logs
    flipped = corrupt(path, "flip", random.Random(1))
    data = path.read_bytes()
    assert flipped["flipped_offsets"] and all(o < 100 for o in flipped["flipped_offsets"])
    assert data != written + b"\0" * 900 and data[100:] == b"\0" * 900
    path.write_bytes(written + b"\0" * 900)
    assert corrupt(path, "truncate", random.Random(1))["truncated_to"] == 50
    assert path.read_bytes() == written[:50]


def test_a_split_holder_after_a_power_loss_names_it():
    h = H()
    h.fault(1, 3, "power-loss-all", "start", targets=("n1", "n2", "n3"))
    h.call(0, 2, 1, "acquire", "/l", out={"token": 10, "seq": 0, "node": "/l/n0"}, client=1)
    h.fault(4, 3, "power-loss-all", "end", targets=("n1", "n2", "n3"))
    # the lock node was lost with the power: another client gets the lock while 1 holds it
    h.call(5, 6, 2, "acquire", "/l", out={"token": 10, "seq": 0, "node": "/l/n0"}, client=2)
    h.call(7, 8, 2, "release", "/l", client=2)
    h.call(9, 10, 1, "release", "/l", client=1)
    r = LockChecker().check(h.history())
    assert r.valid is False
    overlap = r.details["belief_overlaps"][0]
    assert overlap["faults"] == []  # the overlap began after the fault's window
    assert overlap["after_disk_fault"]["f"] == "power-loss-all"
    assert r.violations[0].evidence["after_disk_fault"]["fault_id"] == 3


def test_disk_faults_apply_only_where_the_servers_name_their_data():
    for name in ("power-loss-one", "power-loss-all", "torn-write", "corrupt-file"):
        assert KINDS[name].family == "disk"
        assert unmet(KINDS[name], backend_info("zookeeper").abilities, "zookeeper") is None
        assert "name no data files" in (unmet(KINDS[name], frozenset(), "redis") or "")


class _Files:
    """A run's client histories (ClientFiles), written by the test."""

    def __init__(self, root):
        self.root = root

    def client_history(self, client):
        return self.root / f"c{client}" / f"client-{client}.jsonl"

    def client_histories(self):
        return sorted(self.root.glob("c*/client-*.jsonl"))


def _history(files, client, records):
    path = files.client_history(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_power_loss_on_an_acquire_waits_for_the_acquirers_acknowledged_write(
    tmp_path, monkeypatch
):
    files = _Files(tmp_path)
    ctx = SimpleNamespace(run_dir=files)
    _history(
        files,
        3,
        [
            {"time": 5, "f": "add", "type": "ok", "process": 3},  # before the acquire
            {"time": 10, "f": "acquire", "type": "ok", "process": 3},
            {"time": 11, "f": "add", "type": "invoke", "process": 3},
            {"time": 12, "f": "read", "type": "ok", "process": 3},
            {"time": 13, "f": "add", "type": "ok", "process": 3},
        ],
    )
    assert disk._acquirer(ctx, "client:3") == (3, 10)
    assert disk._acquirer(ctx, "holder") == (3, 10)
    assert disk._acquirer(ctx, "client:4") is None  # not holding: nothing to wait for
    assert disk.await_ack(ctx, 3, 10) == {"client": "c3", "f": "add", "ok_ns": 13}
    monkeypatch.setattr(disk, "ACK_WAIT_S", 0.05)
    assert disk.await_ack(ctx, 3, 13) is None  # none after it: bounded, then lands anyway


def test_postgres_presets_and_the_targets_one_server_cannot_mean():
    assert PostgresSettings().settled().server_args()[-1] == "synchronous_commit=on"
    assert PostgresSettings(fsync="relaxed").server_args()[-1] == "synchronous_commit=off"
    with pytest.raises(BadInput, match="strict or relaxed"):
        PostgresSettings(fsync="off")
    for name in ("power-loss-majority", "power-loss-leader"):
        with pytest.raises(BadInput, match="its one server is the majority"):
            PostgresSettings().check(SimpleNamespace(nemesis=[name]), "python")
    PostgresSettings().check(SimpleNamespace(nemesis=["power-loss-all"]), "python")
    assert unmet(KINDS["power-loss-all"], backend_info("postgres").abilities, "postgres") is None
