"""pytest plugin (entry point `pytest11`): fixtures for testing your own lock against real
ZooKeeper, and a failure message a CI gate can act on.

    def test_my_lock_survives_a_client_pause(zkjepsen_run):
        result = zkjepsen_run(recipe="mypkg.locks:MyLock", workload="counter",
                              nemesis=["pause-client"], time_limit_s=30)
        result.assert_valid()

A lock in another language: `zkjepsen_run(client_cmd="java -cp 'lib/*:.' ZkjepsenDriver",
client_dir="build/", workload="lock", ...)` (a program speaking the client wire protocol,
docs/client-protocol.md; `client_dir` is mounted read-only as its working directory).

Options: `--zk-nodes N` (default 3), `--zk-image NAME` (default: zkjepsen's own image, built on
first use), `--zk-version 3.4|3.8|3.9` (default 3.8; `zkjepsen_run(zk_version=...)` wins) and
`--zk-client-suite SUITE` (the clients' Curator/go-zookeeper; default the servers').
Marker: `@pytest.mark.zkjepsen_faults(max_faults=N)` caps the faults a test may run.

A gate that stops as soon as the answer is known: `zkjepsen_run(..., stop_on_violation=True)`
ends the main phase at the first violation the online checker confirms; `until_power=0.05` ends
it once the bound on the per-fault violation rate is below 5 % (the time limit caps both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zkjepsen.store import RunDir


def pytest_addoption(parser) -> None:
    group = parser.getgroup("zkjepsen")
    group.addoption("--zk-nodes", type=int, default=3, help="ZooKeeper servers per ensemble")
    group.addoption("--zk-image", default=None, help="use this local image for the servers")
    group.addoption("--zk-store", default=None, help="store root for zkjepsen runs")
    group.addoption("--zk-version", default=None, help="ZooKeeper version: 3.4, 3.8, 3.9")
    group.addoption(
        "--zk-client-suite", default=None, help="the clients' suite (bullseye, bookworm, trixie)"
    )


def pytest_configure(config) -> None:
    from zkjepsen.backends.zookeeper import versions as zkversions
    from zkjepsen.errors import BadInput

    try:
        zkversions.get(config.getoption("--zk-version"))
        if config.getoption("--zk-client-suite") is not None:
            zkversions.client_suite(config.getoption("--zk-client-suite"))
    except BadInput as e:
        raise pytest.UsageError(str(e)) from None
    config.addinivalue_line(
        "markers", "zkjepsen_faults(max_faults=N): a fault budget for zkjepsen_run in this test"
    )


class ZkJepsenFailure(AssertionError):
    """Raised by `RunOutcome.assert_valid`: names the violations and where the evidence is."""


class RunOutcome:
    def __init__(self, run) -> None:
        self.run = run
        self.valid = run.valid
        self.results: dict[str, Any] = run.results
        self.store_dir: Path = run.store_dir

    @property
    def power_line(self) -> str:
        """How much the verdict is worth: the faults that landed where the lock could break and
        the bound they put on its violation rate ('' for a run without faults or lock, or
        none landed: the failure message names that as why it is unknown)."""
        from zkjepsen.report.summary import power_of_results

        power = power_of_results(self.results)
        return power.line() if power is not None and power.opportunities() else ""

    def violations(self) -> list[str]:
        """One line per checker that did not say valid: its violations, or why unknown."""
        from zkjepsen.checker import as_result
        from zkjepsen.report.summary import summarise

        parts = as_result(self.results).parts
        return [f"{name}: {summarise(res)}" for name, res in parts.items() if res.valid is not True]

    def _early(self) -> str:
        early = self.results.get("early_stop") if isinstance(self.results, dict) else None
        if not early or not early.get("stopped_early"):
            return ""
        return f"\n  stopped early, {early['after_main_start_s']:g}s in: {early['why']}"

    def assert_valid(self) -> None:
        if self.valid is not True:
            d = RunDir(self.store_dir)
            word = "INVALID" if self.valid is False else "UNKNOWN"
            raise ZkJepsenFailure(
                f"zkjepsen verdict {word} for {self.run.spec.test_name}:\n  "
                + "\n  ".join(self.violations())
                + (f"\npower: {self.power_line}" if self.power_line else "")
                + self._early()
                + f"\nevidence: {d.timeline}, {d.history.name}, {d.results.name}"
            )


@pytest.fixture(scope="session")
def zk_ensemble(request, tmp_path_factory):
    """A running ensemble for the whole session (nodes and image from the command line)."""
    from zkjepsen.backends.zookeeper.config import ZkSettings
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker import resources
    from zkjepsen.docker.image import ensure_image

    client = resources.docker_client()
    version = request.config.getoption("--zk-version") or "3.8"
    recipe = zookeeper_recipe(version)
    image = ensure_image(client, request.config.getoption("--zk-image"), recipe=recipe).tag
    spec = EnsembleSpec(
        nodes=request.config.getoption("--zk-nodes"),
        image=image,
        settings=ZkSettings(zk_version=version),
    )
    with ZooKeeperEnsemble(spec, tmp_path_factory.mktemp("zk_ensemble"), client=client) as ens:
        yield ens


@pytest.fixture
def zkjepsen_run(request):
    """`zkjepsen_run(spec=None, schedule=None, gen=None, **settings) -> RunOutcome`: one full
    test run (its own ensemble, clients, faults, checks); `schedule` replays an executed fault
    schedule, `gen` runs a fault generator (what `zkjepsen shrink` emits: `steps(...)`); the
    run's store dir is named on failure."""
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    marker = request.node.get_closest_marker("zkjepsen_faults")
    store = request.config.getoption("--zk-store")

    def run(
        spec: TestSpec | None = None, schedule: dict | None = None, gen: Any = None, **settings: Any
    ) -> RunOutcome:
        if spec is None:
            settings.setdefault("nodes", request.config.getoption("--zk-nodes"))
            settings.setdefault("image", request.config.getoption("--zk-image"))
            settings.setdefault("zk_version", request.config.getoption("--zk-version"))
            settings.setdefault("client_suite", request.config.getoption("--zk-client-suite"))
            spec = TestSpec(**settings)
        if marker is not None:
            budget = marker.kwargs.get("max_faults")
            if budget is not None:
                spec.max_faults = (
                    budget if spec.max_faults is None else min(budget, spec.max_faults)
                )
        outcome = RunOutcome(
            run_test(spec, Path(store) if store else None, schedule=schedule, gen=gen)
        )
        request.node.user_properties.append(("zkjepsen_store", str(outcome.store_dir)))
        return outcome

    return run
