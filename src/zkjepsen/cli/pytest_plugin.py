"""pytest plugin (entry point `pytest11`): fixtures for testing your own lock against real
ZooKeeper, and a failure message a CI gate can act on.

    def test_my_lock_survives_a_client_pause(zkjepsen_run):
        result = zkjepsen_run(recipe="mypkg.locks:MyLock", workload="counter",
                              nemesis=["pause-client"], time_limit_s=30)
        result.assert_valid()

A lock in another language: `zkjepsen_run(client_cmd="java -cp 'lib/*:.' ZkjepsenDriver",
client_dir="build/", workload="lock", ...)` (a program speaking the client wire protocol,
docs/client-protocol.md; `client_dir` is mounted read-only as its working directory).

Options: `--zkjepsen-nodes N` (default 3), `--zkjepsen-image NAME` (default: zkjepsen's own
image, built on first use), `--zkjepsen-store DIR`, and each service's own options, as `zkjepsen
test` takes them (`--zk-version 3.4|3.8|3.9`, `--client-suite SUITE`, `--etcd-version 3.4|3.5`;
what a test passes to `zkjepsen_run` wins). The old spellings `--zk-nodes`, `--zk-image`,
`--zk-store` and `--zk-client-suite` still work for one release, with a deprecation line.
Marker: `@pytest.mark.zkjepsen_faults(max_faults=N)` caps the faults a test may run.

A gate that stops as soon as the answer is known: `zkjepsen_run(..., stop_on_violation=True)`
ends the main phase at the first violation the online checker confirms; `until_power=0.05` ends
it once the bound on the per-fault violation rate is below 5 % (the time limit caps both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zkjepsen.checker import Verdict
from zkjepsen.store import RunDir

# The old spellings, from when ZooKeeper was the only service: kept one release, deprecated.
RENAMED = {
    "--zk-nodes": "--zkjepsen-nodes",
    "--zk-image": "--zkjepsen-image",
    "--zk-store": "--zkjepsen-store",
    "--zk-client-suite": "--client-suite",
}


def _service_options() -> list:
    from zkjepsen.backends.registry import services
    from zkjepsen.backends.shared import unique

    pairs = [(svc, o) for svc in services().values() for o in svc.options if "test" in o.commands]
    return [o for _, o in unique(pairs)]  # a flag several services declare (--fsync): once


def pytest_addoption(parser) -> None:
    group = parser.getgroup("zkjepsen")
    old = {new: o for o, new in RENAMED.items()}
    group.addoption("--zkjepsen-nodes", "--zk-nodes", type=int, default=3, dest="zkj_nodes",
                    help="servers per cluster")  # fmt: skip
    group.addoption("--zkjepsen-image", "--zk-image", default=None, dest="zkj_image",
                    help="use this local image for the servers")  # fmt: skip
    group.addoption("--zkjepsen-store", "--zk-store", default=None, dest="zkj_store",
                    help="store root for zkjepsen runs")  # fmt: skip
    for opt in _service_options():
        names = [opt.flag, *([old[opt.flag]] if opt.flag in old else [])]
        group.addoption(*names, default=None, dest=f"zkj_{opt.dest}", help=opt.help)


def pytest_configure(config) -> None:
    from zkjepsen.errors import BadInput

    try:
        for opt in _service_options():
            value = config.getoption(f"zkj_{opt.dest}")
            if value is not None:
                opt.parse(value)
    except BadInput as e:
        raise pytest.UsageError(str(e)) from None
    given = [a.split("=")[0] for a in config.invocation_params.args if isinstance(a, str)]
    for old, new in RENAMED.items():
        if old in given:
            config.issue_config_time_warning(
                pytest.PytestDeprecationWarning(f"{old} is deprecated; use {new}"), stacklevel=2
            )
    config.addinivalue_line(
        "markers", "zkjepsen_faults(max_faults=N): a fault budget for zkjepsen_run in this test"
    )


def _command_line_tables(config) -> dict[str, dict[str, Any]]:
    """The services' settings tables the command line's options give."""
    from zkjepsen.cli.versions import service_tables

    values = {o.dest: config.getoption(f"zkj_{o.dest}") for o in _service_options()}
    return service_tables("test", values)


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
            word = Verdict.of(self.valid).word
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
    from zkjepsen.backends.registry import image_recipe, service, settings_for
    from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble
    from zkjepsen.backends.zookeeper.service import ZooKeeperSettings, ensemble_spec
    from zkjepsen.docker import resources
    from zkjepsen.docker.image import ensure_image

    client = resources.docker_client()
    table = _command_line_tables(request.config).get("zookeeper", {})
    settings = settings_for("zookeeper", service("zookeeper").settings(**table))
    recipe = image_recipe("zookeeper", settings)
    image = ensure_image(client, request.config.getoption("zkj_image"), recipe=recipe).tag
    assert isinstance(settings, ZooKeeperSettings)  # the zookeeper service's own type
    spec = ensemble_spec(settings, request.config.getoption("zkj_nodes"), image)
    with ZooKeeperEnsemble(spec, tmp_path_factory.mktemp("zk_ensemble"), client=client) as ens:
        yield ens


def _with_command_line(settings: dict[str, Any], config) -> dict[str, Any]:
    """A test's own settings over the command line's service options (the test's win; its
    service's settings may come as `service=`, a `zookeeper={...}` table or the old keys)."""
    from zkjepsen.backends.registry import read_service

    own = read_service(settings)
    mine = own.get("service")
    name = getattr(mine, "name", None) if hasattr(mine, "name") else (mine or {}).get("name")
    for svc, table in _command_line_tables(config).items():
        if name is None:
            own["service"], name = {"name": svc, **table}, svc
        elif name == svc and isinstance(mine, dict):
            own["service"] = {**table, **mine}
    return own


@pytest.fixture
def zkjepsen_run(request):
    """`zkjepsen_run(spec=None, schedule=None, gen=None, **settings) -> RunOutcome`: one full
    test run (its own ensemble, clients, faults, checks); `schedule` replays an executed fault
    schedule, `gen` runs a fault generator (what `zkjepsen shrink` emits: `steps(...)`), which
    test.json records with the faults it names (run/recording.py); the run's store dir is named
    on failure."""
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import read_spec
    from zkjepsen.spec import TestSpec

    marker = request.node.get_closest_marker("zkjepsen_faults")
    store = request.config.getoption("zkj_store")

    def run(
        spec: TestSpec | None = None, schedule: dict | None = None, gen: Any = None, **settings: Any
    ) -> RunOutcome:
        if spec is None:
            settings.setdefault("nodes", request.config.getoption("zkj_nodes"))
            settings.setdefault("image", request.config.getoption("zkj_image"))
            spec = read_spec(_with_command_line(settings, request.config))
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
