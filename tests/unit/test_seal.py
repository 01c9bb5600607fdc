"""client/seal.py's confinement of a client container, as the engine is asked for it (what it
does to a hostile program is tests/integration/test_least_privilege.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zkjepsen.client import seal


def test_every_capability_is_dropped_and_only_the_recorders_come_back() -> None:
    program = seal.host_config(runs_program=True)
    assert program["cap_drop"] == ["ALL"] and program["security_opt"] == ["no-new-privileges"]
    assert set(program["cap_add"]) == {"SETUID", "SETGID", "KILL"}
    assert seal.host_config(runs_program=False)["cap_add"] == []  # the in-process loop


def test_scratch_is_memory_and_small() -> None:
    config = seal.host_config(runs_program=True)
    assert set(config["tmpfs"]) == {"/tmp", "/var/tmp", "/run/lock"}
    assert all("size=" in options for options in config["tmpfs"].values())
    args = seal.docker_run_args()  # `client check --in-image`: the same confinement
    assert ["--cap-drop", "ALL"] == args[2:4] and f"{seal.PROGRAM_UID}:{seal.PROGRAM_UID}" in args
    assert sum(a == "--tmpfs" for a in args) == len(seal.SCRATCH)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")
def test_a_non_root_owner_lends_its_group_to_the_recorder(tmp_path: Path) -> None:
    out = tmp_path / "c1"
    seal.seal_out_dir(out)
    assert out.stat().st_mode & 0o777 == 0o770
    assert seal.host_config(runs_program=True, out_dir=out)["group_add"] == []  # root's own
    os.chown(out, 1000, 1000)
    assert seal.host_config(runs_program=True, out_dir=out)["group_add"] == ["1000"]
    seal.open_out_dir(out)
    assert out.stat().st_mode & 0o777 == 0o755
