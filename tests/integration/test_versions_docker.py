"""ZooKeeper 3.4, 3.8 and 3.9 (backends/zookeeper/versions.py), each from its own Debian suite's
image: the parametrised subset of the harness, nemesis and workload tests that runs on every version
(the full integration suite on three versions would triple CI's ~20 min; this subset takes a
few minutes). Per version:
- the ensemble reaches quorum with the version's zoo.cfg, `srvr` names the version and `mntr`
  answers (3.4 has no whitelist: every word is on; 3.8/3.9 need ours);
- (3.4 and 3.9; the default 3.8 runs the whole suite) one full run of the suite's real Curator
  (2.7.1 / 5.7.1; fenced resource) through the kill-leader nemesis: the leader is really
  killed, the run records the version, Curator holds the lock, and the fence holds;
- a 4x fast clock reaches both of the image's Java clocks (nanoTime is ZooKeeper's session clock).
Quorum times are printed (run with -s); bounds are generous: a loaded 2-core machine starts
three JVMs slowly, and what is tested is that quorum comes, not how fast."""

from __future__ import annotations

import json
import os
import time

import pytest
from kazoo.client import KazooClient

from zkjepsen.backends.zookeeper import versions as zkversions
from zkjepsen.backends.zookeeper.config import ZkSettings
from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.backends.zookeeper.fourlw import four_letter
from zkjepsen.backends.zookeeper.service import ZooKeeperSettings
from zkjepsen.docker.image import SMALL_JVM_OPTIONS
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

VERSIONS = list(zkversions.VERSIONS)
# The whole integration suite runs its lock runs (kill-leader, Curator) on the default version
# already; repeating them here would only add CI time, so the run tests take the other two.
OTHERS = [v for v in VERSIONS if v != zkversions.DEFAULT]


@pytest.fixture(scope="module", params=VERSIONS)
def version(request, zk_version_image) -> str:
    zk_version_image(request.param)  # built in the background if missing (conftest.py)
    return request.param


@pytest.fixture(scope="module", params=OTHERS)
def other_version(request, zk_version_image) -> str:
    zk_version_image(request.param)
    return request.param


def test_ensemble_reaches_quorum_and_answers_four_letter_words(version, docker_client, tmp_path):
    from zkjepsen.backends.zookeeper.image import zookeeper_tag

    spec = EnsembleSpec(
        nodes=3, image=zookeeper_tag(version), settings=ZkSettings(zk_version=version)
    )
    t0 = time.monotonic()
    with ZooKeeperEnsemble(spec, tmp_path, client=docker_client) as ens:
        print(f"\nZooKeeper {version}: 3 nodes to quorum in {time.monotonic() - t0:.1f} s")
        want = zkversions.get(version).zookeeper
        for node in ens.nodes:
            srvr = four_letter(node.ip, node.port, "srvr", 2.0) or ""
            assert f"Zookeeper version: {want}" in srvr, srvr
            mntr = four_letter(node.ip, node.port, "mntr", 2.0) or ""
            assert "zk_server_state" in mntr, mntr  # refused words answer "not in the whitelist"
        zk = KazooClient(hosts=ens.nodes[0].address, timeout=5.0)
        zk.start(timeout=20)
        zk.create("/v", version.encode())
        zk.stop()
        zk.close()
        zk = KazooClient(hosts=ens.nodes[2].address, timeout=5.0)
        zk.start(timeout=20)
        zk.sync("/v")
        assert zk.get("/v")[0] == version.encode()
        zk.stop()
        zk.close()
        cfg = (tmp_path / "nodes" / "n1" / "zoo.cfg").read_text()
        assert ("4lw.commands.whitelist" in cfg) is (version != "3.4")


def test_the_suites_curator_holds_a_fence_through_kill_leader(other_version, store_root):
    """The suite's own Curator (2.7.1 on 3.4, 5.7.1 on 3.9) serves a lock run on its version
    while the leader is killed (one run for both questions: CI's 30 minutes)."""
    spec = TestSpec(
        recipe="curator-java",
        workload="lock",
        nemesis=["kill-leader"],
        nodes=3,
        clients=3,
        time_limit_s=20,
        recovery_s=5,
        interval_s=4,
        fault_duration_s=4,
        session_timeout_s=4,
        params={"resource": "fenced"},
        seed=3,
        service=ZooKeeperSettings(version=other_version),
    )
    run = run_test(spec, store_root)
    assert run.spec.service.version == other_version
    stored = json.loads((run.store_dir / "test.json").read_text())
    assert stored["service"]["name"] == "zookeeper"
    assert stored["service"]["version"] == other_version
    faults = (run.store_dir / "nemesis.jsonl").read_text()
    assert "kill-leader" in faults, "the nemesis did nothing"
    assert f"ZooKeeper {other_version}" in (run.store_dir / "timeline.html").read_text()
    # Not `valid`: when a failover outlasts the session timeout (it does on a loaded machine,
    # and on 3.4, whose elections take seconds), the lock shows a belief overlap or a half-done
    # update on every version (docs/findings.md, "Across ZooKeeper versions"). What must hold is the
    # fence: the resource never took a write out of lock order, and the run held the lock
    # enough to say so.
    # (`exercised` is not asked: a client whose write hangs past 15 s in the failover makes it
    # unknown; seen once on 3.4 under load. The holds below show the lock was exercised.)
    res = run.results
    assert res["lock"]["holds"] >= 5, res["lock"]
    assert res["fencing"]["valid"] is True, res["fencing"]
    assert res["lock"]["effect_overlap_count"] == 0, res["lock"]


# A JVM in the version's image, started under libfaketime as the harness starts the servers,
# its control file flipped to 4x: both Java clocks must run ~4x over the same real interval
# (real time from /proc/uptime, which libfaketime does not touch). JDK 11 (bullseye's default)
# failed this: its nanoTime, which ZooKeeper's session tracker reads, stayed at 1x.
CLOCK_PROBE = """
public class ClockProbe {
    static double uptime() throws Exception {
        return Double.parseDouble(new String(java.nio.file.Files.readAllBytes(
            java.nio.file.Paths.get("/proc/uptime"))).split(" ")[0]);
    }
    public static void main(String[] a) throws Exception {
        while (!new java.io.File("/tmp/flipped").exists()) Thread.sleep(50);
        Thread.sleep(1500);  // past libfaketime's 1 s cache of the control file
        double r0 = uptime();
        long n0 = System.nanoTime(), m0 = System.currentTimeMillis();
        Object o = new Object();
        synchronized (o) { o.wait(4000); }
        long n1 = System.nanoTime(), m1 = System.currentTimeMillis();
        double real = uptime() - r0;
        System.out.println((n1 - n0) / 1e9 / real + " " + (m1 - m0) / 1e3 / real + " " + real);
    }
}
"""


@pytest.fixture(scope="module")
def clock_probe(tmp_path_factory):
    """The probe's folder, compiled once for every version (javac takes seconds under load)."""
    import shutil
    import subprocess

    javac = shutil.which("javac")
    assert javac, "javac (JDK 17) is needed to compile the probe"
    d = tmp_path_factory.mktemp("clock-probe")
    (d / "ClockProbe.java").write_text(CLOCK_PROBE)
    # CI runs under an address-space limit (ulimit -v), where a JVM's default reservations fail
    # before javac starts; the image builds' javac is started the same way.
    subprocess.run(
        [javac, "--release", "11", "ClockProbe.java"],
        cwd=d,
        check=True,
        env={**os.environ, "JAVA_TOOL_OPTIONS": SMALL_JVM_OPTIONS},
    )
    return d


def test_a_fast_clock_reaches_both_java_clocks(version, docker_client, clock_probe):
    from zkjepsen.backends.zookeeper.image import zookeeper_tag

    script = (
        'echo "+0 x1" > /tmp/ft; (sleep 1; echo "+0 x4" > /tmp/ft; touch /tmp/flipped) & '
        "FAKETIME_TIMESTAMP_FILE=/tmp/ft FAKETIME_CACHE_DURATION=1 FAKETIME_XRESET=1 "
        "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 java -cp /p ClockProbe"
    )
    out = docker_client.containers.run(
        zookeeper_tag(version),
        ["-c", script],
        entrypoint="bash",
        volumes={str(clock_probe): {"bind": "/p", "mode": "ro"}},
        labels={"zkjepsen.test": "clock-probe"},
        remove=True,
    )
    # Rates (fake seconds per real second over the same interval), not durations: load stretches
    # the interval, not the ratio.
    nano, millis, real = (float(x) for x in out.decode().split())
    print(
        f"\nZooKeeper {version}'s JVM at x4: nanoTime x{nano:.2f}, currentTimeMillis "
        f"x{millis:.2f} over {real} s"
    )
    assert 3.0 <= nano <= 5.0 and 3.0 <= millis <= 5.0, (nano, millis, real)
