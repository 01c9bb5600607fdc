"""A Python program under the client-clock preload keeps a working time.sleep
(client/faketime_site/sitecustomize.py): libfaketime 0.9.10 with FAKETIME_DONT_FAKE_MONOTONIC=1
refuses Python 3.11's clock_nanosleep, and every time.sleep raised OSError (Errno 22)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time

from zkjepsen.client.main import SLEEP_FIX_DIR, program_environment
from zkjepsen.client.spec import ClientSpec


def _load_fix():
    spec = importlib.util.spec_from_file_location(
        "faketime_sitecustomize", f"{SLEEP_FIX_DIR}/sitecustomize.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_broken_sleep_is_replaced_by_one_that_sleeps(monkeypatch) -> None:
    def refused(seconds: float) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(time, "sleep", refused)
    fix = _load_fix()
    assert time.sleep is fix._select_sleep
    waited: list[tuple] = []
    monkeypatch.setattr(fix.select, "select", lambda *a: waited.append(a) or ([], [], []))
    time.sleep(0.05)  # raises nothing: the wait is select's timeout
    assert waited == [([], [], [], 0.05)]
    try:
        time.sleep(-1)
    except ValueError:
        pass
    else:
        raise AssertionError("a negative sleep is refused, as time.sleep refuses it")


def test_a_working_sleep_is_kept(monkeypatch) -> None:
    def works(seconds: float) -> None:
        return None

    monkeypatch.setattr(time, "sleep", works)
    _load_fix()
    assert time.sleep is works


def test_only_a_python_program_under_the_preload_gets_the_fix(monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/opt/zkjepsen/src")
    preload = {"LD_PRELOAD": "libfaketime.so.1", "FAKETIME_TIMESTAMP_FILE": "/control/f"}
    python = ClientSpec(
        1,
        3,
        "",
        3.0,
        "lock",
        "kazoo",
        0,
        program_env={**preload, "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
    )
    assert program_environment(python)["PYTHONPATH"].split(os.pathsep) == [
        SLEEP_FIX_DIR,
        "/opt/zkjepsen/src",
    ]
    java = dataclasses.replace(python, program_env=preload)  # Java's preload fakes monotonic
    assert program_environment(java)["PYTHONPATH"] == "/opt/zkjepsen/src"
    plain = dataclasses.replace(python, program_env={})
    assert program_environment(plain)["PYTHONPATH"] == "/opt/zkjepsen/src"
