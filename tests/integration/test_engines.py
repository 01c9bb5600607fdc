"""Runs fanned out over two real Docker engines: the machine's own and a second `dockerd` started
for this module (tests/second_engine.py), which stands in for a remote host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zkjepsen.docker import resources

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from second_engine import second_engine_or_skip  # noqa: E402

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
ENV = {**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}"}
NOLOCK = "subjects.nolock:NoLock"
SMALL = ["--nodes", "3", "--clients", "2", "--time-limit", "4", "--session-timeout", "3"]
# kazoo holds, the lock that excludes nobody breaks: verdicts that do not depend on timing.
# (No fault fires in 4 s: the first comes after the 10 s interval.)
# Matrices run one server per ensemble: 4 runs at once on a 2-core machine are 4 JVMs, not 12.
CELLS = [
    "--recipes",
    f"kazoo,{NOLOCK}",
    "--nemeses",
    "none,kill-client",
    "--runs",
    "1",
    "--workload",
    "lock",
    *SMALL[2:],
    "--nodes",
    "1",
    # One write per hold: a client killed between two writes leaves a half-done update, a real
    # finding (atomicity) but one that depends on where the kill lands, not on the engine.
    "--param",
    "writes=1",
]
EXPECTED = {
    "kazoo|none": 0,
    "kazoo|kill-client": 0,
    f"{NOLOCK}|none": 1,
    f"{NOLOCK}|kill-client": 1,
}


pytestmark = pytest.mark.usefixtures("sigint_default")


@pytest.fixture(scope="module")
def engine2(zk_image):
    with second_engine_or_skip() as url:
        yield url


class Tracked:
    """A zkjepsen process and every process it starts (its run workers), remembered while they
    live: other helpers share the machine's engine, so "what this test left" means the runs
    whose owner was one of these processes."""

    def __init__(self, argv: list[str], env: dict | None = None, **kw) -> None:
        self.proc = subprocess.Popen(
            [*ZKJEPSEN, *argv],
            env=env or ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )
        self.pids = {str(self.proc.pid)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            for d in Path("/proc").iterdir():
                if d.name.isdigit():
                    try:
                        ppid = (d / "stat").read_text().rsplit(")", 1)[1].split()[1]
                    except (OSError, IndexError):
                        continue
                    if ppid in self.pids:
                        self.pids.add(d.name)
            time.sleep(0.1)

    def communicate(self, timeout: float = 300) -> tuple[int, str]:
        out, err = self.proc.communicate(timeout=timeout)
        self._stop.set()
        return self.proc.returncode, out + err


def zkj(*argv: str, timeout: float = 300) -> tuple[int, str, set[str]]:
    t = Tracked(list(argv))
    code, err = t.communicate(timeout)
    return code, err, t.pids


def client_of(url: str):
    from zkjepsen.docker.engine import Engine

    return Engine.parse(url).client()


def leftovers(url: str, pids: set[str] | None = None) -> list[str]:
    """Runs on the engine (containers, networks or scratch dirs) owned by one of `pids`
    (None: any owner, for the second engine, which only this module uses)."""
    runs = resources.find_runs(client_of(url), client_of_key(url))
    return sorted(
        r for r, v in runs.items() if pids is None or any(o.split(":")[0] in pids for o in v.owners)
    )


def client_of_key(url: str) -> str:
    from zkjepsen.docker.engine import Engine

    return Engine.parse(url).key


def matrix_on_both(engine2: str, tmp_path: Path) -> tuple[list[dict], set[str]]:
    """The 4 CELLS on the machine's engine and `engine2` (one slot each), their verdicts as
    EXPECTED, every run's result in the local store; (its manifest's runs, its pids)."""
    code, err, pids = zkj(
        "matrix", *CELLS, "--engine", "default", "--engine", engine2, "--parallel", "1",
        "--store", str(tmp_path / "m"), "--out", str(tmp_path / "m.md"),
    )  # fmt: skip
    assert code == 0, err
    cells = json.loads((tmp_path / "m.json").read_text())
    assert {k: c["invalid"] for k, c in cells.items()} == EXPECTED
    runs = json.loads((tmp_path / "m" / "matrix-runs.json").read_text())["runs"]
    assert {r["engine"] for r in runs} == {"default", engine2}
    for r in runs:
        assert (tmp_path / "m" / r["store"] / "results.json").exists()
    assert leftovers("default", pids) == [] and leftovers(engine2) == []
    return runs, pids


def table_rows(md: Path) -> list[str]:
    return [line for line in md.read_text().splitlines() if line.startswith("| ")]


def test_a_run_on_the_second_engine_ships_the_image_and_stores_locally(engine2, tmp_path):
    code, err, _ = zkj(
        "test",
        "--engine",
        engine2,
        "--recipe",
        NOLOCK,
        "--workload",
        "lock",
        "--nemesis",
        "none",
        *SMALL,
        "--store",
        str(tmp_path),
    )
    assert code == 1, err
    assert f"shipped the node image to engine {engine2}" in err
    (latest,) = tmp_path.glob("*/latest")
    spec = json.loads((latest / "test.json").read_text())
    assert spec["engine"] == engine2
    assert (latest / "nodes" / "n1" / "zookeeper.log").exists()
    assert (latest / "history.jsonl").stat().st_size > 0
    # Its replays, two at once on that engine, also land in the local store.
    code, err, _ = zkj(
        "replay", str(latest.resolve()), "--runs", "2", "--engine", engine2, "--parallel", "2",
        "--store", str(tmp_path / "replays"),
    )  # fmt: skip
    assert code == 0 and "recurred in 2/2" in err, err
    assert len(list((tmp_path / "replays").glob("*/2*/results.json"))) == 2
    assert leftovers(engine2) == []


def test_matrix_on_two_engines_and_its_shards_merge_to_the_same_table(engine2, tmp_path):
    code, err, pids = zkj(
        "matrix",
        *CELLS,
        "--engine",
        "default",
        "--engine",
        engine2,
        "--parallel",
        "2",
        "--store",
        str(tmp_path / "full"),
        "--out",
        str(tmp_path / "full.md"),
    )
    assert code == 0, err
    cells = json.loads((tmp_path / "full.json").read_text())
    assert {k: c["invalid"] for k, c in cells.items()} == EXPECTED
    manifest = json.loads((tmp_path / "full" / "matrix-runs.json").read_text())
    assert {r["engine"] for r in manifest["runs"]} == {"default", engine2}
    for r in manifest["runs"]:  # every run's folder is in the local store
        assert (tmp_path / "full" / r["store"] / "results.json").exists()
    # Two CI jobs at once (two processes sharing both engines), then one merge.
    shards = [
        Tracked(
            [
                "matrix",
                *CELLS,
                "--shard",
                f"{i}/2",
                "--engine",
                "default",
                "--engine",
                engine2,
                "--store",
                str(tmp_path / f"s{i}"),
                "--out",
                str(tmp_path / f"s{i}.md"),
            ]
        )
        for i in (1, 2)
    ]
    for t in shards:
        code, err = t.communicate()
        assert code == 0, err
        pids |= t.pids
    code, err, _ = zkj(
        "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "merged.md")
    )
    assert code == 0, err
    assert table_rows(tmp_path / "merged.md") == table_rows(tmp_path / "full.md")
    assert leftovers("default", pids) == [] and leftovers(engine2) == []


def _start_matrix(engine2: str, store: Path) -> Tracked:
    return Tracked(
        [
            "matrix",
            "--recipes",
            "kazoo",
            "--nemeses",
            "none",
            "--runs",
            "4",
            "--nodes",
            "1",
            "--clients",
            "2",
            "--time-limit",
            "60",
            "--session-timeout",
            "3",
            "--engine",
            "default",
            "--engine",
            engine2,
            "--parallel",
            "2",
            "--store",
            str(store),
            "--out",
            str(store / "m.md"),
        ],
        start_new_session=True,
        env={**ENV, "TMPDIR": str(store)},
    )  # a SIGKILLed matrix leaves its job files


def _wait_for_clients(engine2: str, t: Tracked, timeout: float = 150) -> None:
    """Until both engines have a run of ours with its clients started (the main phase)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = []
        for url in ("default", engine2):
            runs = resources.find_runs(client_of(url), client_of_key(url))
            ready.append(
                any(
                    sum(c["Labels"].get(resources.ROLE_LABEL) == "client" for c in r.containers)
                    >= 2
                    for r in runs.values()
                    if any(o.split(":")[0] in t.pids for o in r.owners)
                )
            )
        if all(ready):
            return
        time.sleep(0.5)
    pytest.fail("the matrix did not reach its main phase on both engines")


def test_sigint_mid_matrix_leaves_nothing_on_either_engine(engine2, tmp_path):
    t = _start_matrix(engine2, tmp_path)
    _wait_for_clients(engine2, t)
    t.proc.send_signal(signal.SIGINT)
    code, err = t.communicate(timeout=240)
    assert code == 130, err
    assert "Traceback" not in err
    assert leftovers("default", t.pids) == [] and leftovers(engine2) == []


def test_sigkill_mid_matrix_then_cleanup_on_each_engine_leaves_nothing(engine2, tmp_path):
    t = _start_matrix(engine2, tmp_path)
    _wait_for_clients(engine2, t)
    os.killpg(t.proc.pid, signal.SIGKILL)  # the matrix and all its workers: no teardown at all
    t.communicate(timeout=30)
    # A container create the killed process had sent still completes inside dockerd a moment
    # later; a user runs cleanup after the crash, not within the same second.
    time.sleep(5)
    mine = leftovers("default", t.pids)
    assert mine and leftovers(engine2), "SIGKILL should have left the runs behind"
    # Other helpers share the machine's engine: there, clean only the runs this test left.
    said = []
    for argv in (["--engine", "default", *mine], ["--engine", engine2]):
        code, err, _ = zkj("cleanup", *argv)
        assert code == 0, err
        said.append(err)
    assert leftovers("default", t.pids) == [] and leftovers(engine2) == [], said
