"""The ZooKeeper versions zkjepsen can run: one Debian suite each, so no registry is needed.

Why a table: the Debian mirror the image is built from serves three suites, each with its own
ZooKeeper and Curator (checked in the suites' package indexes with apt, 2026-11-23):
- bullseye: libzookeeper-java 3.4.13-6+deb11u1, libcurator-*-java 2.7.1-3, JDK 11 (default;
  the image installs the suite's JDK 17 instead, see below), Go 1.15;
- bookworm: 3.8.0, Curator 5.4.0, JDK 17, Go 1.19 (the image zkjepsen always had);
- trixie: libzookeeper-java 3.9.3-1+deb13u1, libcurator-*-java 5.7.1+ds-1, JDK 21, Go 1.24.
`--zk-version` picks the servers' suite, `--client-suite` the clients' (Curator and
go-zookeeper are compiled against the suite's own jars; kazoo is the host's, bind-mounted).

What differs between the versions, and what the harness does about it:
- 3.4 has no `4lw.commands.whitelist` (every four-letter word is always on) and no admin
  server, no `standaloneEnabled`: zoo.cfg leaves those lines out (3.4 would turn unknown keys
  into `zookeeper.*` system properties with a warning; we keep its log clean);
- 3.4's zookeeper.jar has no Class-Path manifest naming its jars, so the launch names
  slf4j-api and log4j itself;
- Debian's Curator 2.7.1 does not declare its guava and ZooKeeper dependencies: listed here;
- Curator 2.7 has no `transactionOp()`/`CuratorOp` (added in 3.0): the Java driver's fenced
  write goes through a small shim (client/drivers/curator2/Compat.java) for that suite only;
- bullseye's default JDK 11 would make the clock faults miss ZooKeeper's session clock: JDK 11
  reads the monotonic clock through a `clock_gettime` it looks up in librt with dlsym, which
  the preloaded libfaketime never sees (libfaketime issue #144), so `System.nanoTime()` runs
  at the real rate while `currentTimeMillis()` and timed waits run at the faked one (measured
  in the image: 515 ms of nanoTime, 2062 ms of currentTimeMillis over the same 0.5 s at x4).
  3.4.13's SessionTrackerImpl expires sessions by `Time.currentElapsedTime()` = nanoTime, so a
  4x-fast leader expired nothing. JDK 17 calls clock_gettime directly (interposed: 2045 ms of
  both): the 3.4 image runs bullseye's openjdk-17-jre-headless, and a test checks every
  version's JVM sees the faked rate on both clocks;
- but the ZooKeeper 3.4 *client* (in Curator 2.7.1's driver) cannot connect on JDK 14+: it
  takes `InetSocketAddress.toString()` apart, whose format JDK 14 changed ("host/<unresolved>:
  port"; fixed in 3.5.8/3.6.1 by ZOOKEEPER-3779), and fails with UnresolvedAddressException.
  So that suite's Java driver runs on JDK 11 (installed beside 17): a clock fault on a Curator
  2.7.1 client reaches its wall clock and timed waits but not its nanoTime.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkjepsen.errors import BadInput


@dataclass(frozen=True)
class ZkVersion:
    name: str  # what users type: "3.4"
    suite: str  # the Debian suite its image is bootstrapped from
    zookeeper: str  # the server (and Java client library) version in that suite
    curator: str  # Apache Curator in that suite
    java_release: str  # javac --release for the Java driver: the suite's default JDK
    four_lw_whitelist: bool = True  # zoo.cfg needs `4lw.commands.whitelist=*` (3.5+)
    admin_server: bool = True  # zoo.cfg must switch the admin server off (3.5+)
    reconfig: bool = True  # dynamic reconfiguration (3.5+: `reconfig -add/-remove`)
    extra_packages: tuple[str, ...] = ()  # runtime packages the suite's packages forget
    extra_jars: tuple[str, ...] = ()  # jars the server's classpath needs beyond its manifest
    curator_shim: str = ""  # client/drivers/<dir> overriding the driver's newer-API parts
    jre: str = "default-jre-headless"  # the JRE package: one whose nanoTime libfaketime reaches
    client_java: str = "java"  # the JVM the Java driver runs on (its ZooKeeper client's needs)


VERSIONS: dict[str, ZkVersion] = {
    "3.4": ZkVersion(
        name="3.4",
        suite="bullseye",
        zookeeper="3.4.13",
        curator="2.7.1",
        java_release="11",
        four_lw_whitelist=False,
        admin_server=False,
        reconfig=False,
        extra_packages=("libguava-java", "openjdk-11-jre-headless"),
        extra_jars=("slf4j-api.jar",),
        curator_shim="curator2",
        jre="openjdk-17-jre-headless",  # not the suite's default 11: see the docstring
        client_java="/usr/lib/jvm/java-11-openjdk-amd64/bin/java",  # 3.4's client: JDK <= 13
    ),
    "3.8": ZkVersion(
        name="3.8", suite="bookworm", zookeeper="3.8.0", curator="5.4.0", java_release="17"
    ),
    "3.9": ZkVersion(
        name="3.9", suite="trixie", zookeeper="3.9.3", curator="5.7.1", java_release="17"
    ),
}
DEFAULT = "3.8"
# A rolling upgrade's next version (their images' zoo.cfg keys agree): a version not here has
# none, and rolling-upgrade is refused on it (ZooKeeperSettings.lacks).
UPGRADES = {"3.8": "3.9"}
SUITES = {v.suite: v for v in VERSIONS.values()}


def get(name: str | None) -> ZkVersion:
    """The version `name` ("3.4", "3.8", "3.9"; None: the default)."""
    v = VERSIONS.get(DEFAULT if name is None else str(name))
    if v is None:
        raise BadInput(f"unknown ZooKeeper version {name!r}; choose from {', '.join(VERSIONS)}")
    return v


def client_suite(name: str | None, zk_version: str | None = None) -> ZkVersion:
    """The version whose image runs the clients: `name` may be a suite (bullseye, bookworm,
    trixie) or a ZooKeeper version; None follows the servers' version."""
    if name is None:
        return get(zk_version)
    if name in SUITES:
        return SUITES[name]
    if name in VERSIONS:
        return VERSIONS[name]
    raise BadInput(
        f"unknown client suite {name!r}; choose from {', '.join(SUITES)} "
        f"(or a ZooKeeper version: {', '.join(VERSIONS)})"
    )


def parse_list(text: str) -> list[str]:
    """`3.4,3.8,3.9` -> the version names, each checked; duplicates and empties refused."""
    names = [p.strip() for p in str(text).split(",")]
    if not names or any(not n for n in names):
        raise BadInput(f"--zk-versions {text!r} has an empty entry; write e.g. 3.4,3.8,3.9")
    for n in names:
        get(n)
    if len(set(names)) != len(names):
        raise BadInput(f"--zk-versions {text!r} names a version twice")
    return names
