"""docker/freeze.py: a failed freeze is asked again; any other engine error is not."""

from __future__ import annotations

import docker.errors
import pytest

from zkjepsen.docker import freeze


class _Container:
    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        self.calls = 0

    def pause(self) -> None:
        self.calls += 1
        if self.errors:
            raise docker.errors.APIError(self.errors.pop(0))


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(freeze.time, "sleep", lambda s: None)


def test_a_failed_freeze_is_asked_again_until_it_freezes():
    c = _Container(["OCI runtime pause failed: unable to freeze: unknown"] * 2)
    freeze.pause(c)
    assert c.calls == 3 and not c.errors


def test_a_freeze_that_keeps_failing_raises_the_engines_error():
    c = _Container(["OCI runtime pause failed: unable to freeze: unknown"] * freeze.TRIES)
    with pytest.raises(docker.errors.APIError, match="unable to freeze"):
        freeze.pause(c)
    assert c.calls == freeze.TRIES


def test_another_engine_error_is_not_retried():
    c = _Container(["Container abc is not running"])
    with pytest.raises(docker.errors.APIError, match="not running"):
        freeze.pause(c)
    assert c.calls == 1
