"""Power loss on etcd and Redis under the power-loss layer (issue 34), real servers, through
the nemesis' own `power-loss-all` (its schedule detail: `lost_bytes`, `failed_to_start`).

etcd: as shipped (strict) every write is in the fsynced WAL before its answer, so nothing
acknowledged is lost; with `--unsafe-no-fsync` (relaxed, etcd 3.5) the layer drops what was
written since start-up. Redis: one server, its AOF fsync policy changed at run time (CONFIG
SET appendfsync): `always` keeps every acknowledged SET, `everysec` loses what the last second
wrote. One single-member cluster per etcd preset, one Redis server for both; ~10 s each."""

from __future__ import annotations

import random
from typing import Any

import pytest

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.etcd.cluster import EtcdBackend
from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.redis.cluster import RedisBackend
from zkjepsen.backends.registry import backend_info
from zkjepsen.docker import resources
from zkjepsen.nemesis.disk import PowerLoss, settle
from zkjepsen.nemesis.targets import NemesisContext

pytestmark = pytest.mark.integration
KEYS = 20
TRIES = 3  # Redis everysec: a background fsync may land between the last SET and the loss


def _power_loss_all(backend: Any) -> dict[str, Any]:
    """The nemesis' power-loss-all on `backend`: drop, kill, boot; its schedule detail."""
    ctx = NemesisContext(backend=backend)
    kind = PowerLoss()
    targets, detail = kind.resolve(ctx, "all", random.Random(1), {})
    kind.apply(ctx, targets, detail)
    kind.undo(ctx, targets, detail)
    return detail


def _etcd_put(backend: EtcdBackend, key: str) -> None:
    body = {"key": gateway.b64(key), "value": gateway.b64("x" * 100)}
    gateway.call(backend.nodes[0].address, "v3/kv/put", body, timeout=10)


def _etcd_has(backend: EtcdBackend, key: str) -> bool:
    out = gateway.call(backend.nodes[0].address, "v3/kv/range", {"key": gateway.b64(key)}, 10)
    return bool(out.get("kvs"))


def _etcd(docker_client, image: str, tmp_path, settings: EtcdSettings) -> EtcdBackend:
    info = backend_info("etcd")
    backend = EtcdBackend(
        1, tmp_path, backend=info, server_image=image, client_image=image, client=docker_client
    )
    backend.settings = settings.settled()
    backend.power_layer = True
    return backend


@pytest.mark.parametrize("fsync", ["strict", "relaxed"])
def test_etcd_power_loss_all_keeps_acknowledged_puts_only_when_strict(
    docker_client, etcd_image, etcd_next_image, tmp_path, fsync
):
    image = etcd_next_image if fsync == "relaxed" else etcd_image
    version = "3.5" if fsync == "relaxed" else None
    backend = _etcd(docker_client, image, tmp_path, EtcdSettings(version=version, fsync=fsync))
    with backend:
        _etcd_put(backend, "/before")
        settle(NemesisContext(backend=backend))  # start-up's writes and /before on disk
        for i in range(KEYS):
            _etcd_put(backend, f"/power{i}")  # acknowledged
        detail = _power_loss_all(backend)
        assert "failed_to_start" not in detail, detail["failed_to_start"]
        backend.wait_ready(backend.info.ready_timeout_s)
        kept = _etcd_has(backend, "/before")
        after = [_etcd_has(backend, f"/power{i}") for i in range(KEYS)]
    assert resources.leftovers(docker_client, backend.run_id) == []
    assert kept  # settled before the loss: on disk whatever the preset
    lost = detail["lost_bytes"]["n1"]
    if fsync == "strict":
        assert all(after), (detail, after)  # each put was in the fsynced WAL before its answer
    else:
        assert lost > 0 and not any(after), (detail, after)  # nothing was fsynced


def _redis_round(backend: RedisBackend, policy: str, tag: str) -> tuple[dict, list[bool]]:
    r = backend._redis(backend.nodes[0], timeout=10)
    try:
        r.config_set("appendfsync", policy)
        r.set(f"{tag}-before", "x")
        settle(NemesisContext(backend=backend))  # everything so far is on disk
        for i in range(KEYS):
            r.set(f"{tag}{i}", "x" * 100)  # acknowledged
    finally:
        r.close()
    detail = _power_loss_all(backend)
    assert "failed_to_start" not in detail, detail["failed_to_start"]
    backend.wait_ready(backend.info.ready_timeout_s)
    r = backend._redis(backend.nodes[0], timeout=10)
    try:
        assert r.exists(f"{tag}-before")  # settled before the loss
        return detail, [bool(r.exists(f"{tag}{i}")) for i in range(KEYS)]
    finally:
        r.close()


def test_redis_aof_always_keeps_acknowledged_sets_and_everysec_loses_them(
    docker_client, redis_image, tmp_path
):
    info = backend_info("redis")
    backend = RedisBackend(
        1, tmp_path, backend=info, server_image=redis_image, client_image=redis_image,
        client=docker_client,
    )  # fmt: skip
    backend.fsync = "strict"  # appendonly yes; each round sets appendfsync itself
    backend.power_layer = True
    with backend:
        strict, kept = _redis_round(backend, "always", "always")
        relaxed: list[tuple[dict, list[bool]]] = []
        while len(relaxed) < TRIES and not any(d["lost_bytes"]["n1"] for d, _ in relaxed):
            relaxed.append(_redis_round(backend, "everysec", f"everysec{len(relaxed)}"))
    assert resources.leftovers(docker_client, backend.run_id) == []
    assert all(kept), (strict, kept)  # each SET's AOF record fsynced before its reply
    detail, after = relaxed[-1]
    # everysec: the layer dropped what the last second appended, and those SETs with it
    assert detail["lost_bytes"]["n1"] > 0 and not all(after), relaxed
