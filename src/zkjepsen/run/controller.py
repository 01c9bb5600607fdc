"""Runs on an engine the runner cannot reach: the whole run inside a controller container there.

A run reaches its containers by their IPs (`srvr` queries, its own kazoo session, the proxy
faults' control port) and stamps its history with one kernel's monotonic clock, so the runner
must sit next to the ensemble. On an engine on another host (or in another network namespace of
this one) the runner itself goes there, as Jepsen's control node or testcontainers' Ryuk do: a
container of `zkjepsen/controller:<hash>` (the node image plus our code, run/shipping.py)
on the engine's host network (`network_mode=host`: the bridges are that host's), with the
engine's own socket bind-mounted, runs `run_test` for the same spec and schedule, with the
store inside the container. It needs no privilege: faults go through the Docker API
(sidecars, pause, kill) and files (faketime control files, histories) through copies.

This side (the inside is run/inside.py): creates the controller labelled with the run id
(and this process as owner, with this machine's id), streams its output, turns Ctrl-C/SIGTERM
into one SIGTERM to it (the run tears itself down inside) and waits, fetches the run's folder
into the local store (`get_archive`), renders the reports here, and removes the controller. If
this process is SIGKILLed, the controller still finishes and tears down its run, and `cleanup
--engine X` removes it (and anything of its run) once its owner is dead; a live owner's is kept.

Which engines: `ZKJEPSEN_CONTROLLER` = auto (default: an engine whose URL is another host's, or
whose default bridge's gateway is no address of this machine, i.e. another network namespace),
always, or never (remote engines are refused). The engine's socket on its host: the unix://
path of a unix URL, else /var/run/docker.sock; `ZKJEPSEN_CONTROLLER_SOCKET` overrides it, and
the controller checks that the socket it got is the engine's own (engine ID) before any run.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from zkjepsen.docker import resources, signals
from zkjepsen.errors import EXIT_BAD_INPUT, BadInput, EnvironmentProblem

MODE_ENV = "ZKJEPSEN_CONTROLLER"
MODES = ("auto", "always", "never")
SOCKET_ENV = "ZKJEPSEN_CONTROLLER_SOCKET"
JOB_ENV = "ZKJEPSEN_CONTROLLER_JOB"
REPORTS_ENV = "ZKJEPSEN_REPORTS"  # "off" in a controller: rendered here after the fetch
STORE = "/store"
INNER_SOCKET = "/var/run/docker.sock"
DEFAULT_SOCKET = "/var/run/docker.sock"
TEARDOWN_WAIT_S = 180.0
# Settings of ours that mean the same inside a controller (not ZKJEPSEN_FILES, ZKJEPSEN_SCRATCH:
# paths and mounts are the controller's own there).
FORWARDED = ("ZKJEPSEN_WATCHDOG_MARGIN_S",)
_reach: dict[str, bool] = {}


def mode() -> str:
    """ZKJEPSEN_CONTROLLER, checked: one sentence for a bad value (before anything exists)."""
    value = os.environ.get(MODE_ENV, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise BadInput(
            f"{MODE_ENV}={os.environ[MODE_ENV]!r} is not one of {', '.join(MODES)} (auto: a "
            "controller container runs the run on engines this machine cannot reach)"
        )
    return value


def reaches(engine, client) -> bool:
    """Whether this machine is in the engine's network namespace: its default bridge's gateway
    is one of our addresses (asked once per engine). An engine without one: assume yes."""
    from zkjepsen.docker.engine import is_local_address

    if engine.url not in _reach:
        try:
            cfg = client.api.inspect_network("bridge")["IPAM"]["Config"] or []
            gateways = [c["Gateway"] for c in cfg if c.get("Gateway")]
        except Exception:  # noqa: BLE001 - no default bridge (`--bridge none`)
            gateways = []
        _reach[engine.url] = all(is_local_address(g) for g in gateways)
    return _reach[engine.url]


def wanted(engine, client=None) -> bool:
    """Does a run on `engine` go into a controller? (Module docstring.)"""
    m = mode()
    if m == "never":
        engine.require_local()
        return False
    if m == "always" or not engine.local:
        return True
    return not reaches(engine, client or engine.client())


def socket_path(engine) -> str:
    from urllib.parse import urlsplit

    forced = os.environ.get(SOCKET_ENV, "").strip()
    if forced:
        return forced
    parts = urlsplit(engine.url)
    return parts.path if parts.scheme == "unix" and parts.path else DEFAULT_SOCKET


def prepare(engine, client=None, on_status=lambda msg: None) -> tuple[str, dict]:
    """The controller image on `engine` (built from the node image if missing)."""
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker.engine import provide_image
    from zkjepsen.run.shipping import controller_image

    client = client or engine.client()
    base = provide_image([engine], recipe=zookeeper_recipe())  # our node image: it has python3
    return controller_image(client, base, on_status)


def user_code(spec) -> tuple[list[tuple[Path, str]], list[str]]:
    """Files of this machine a run reads besides our package: a user's recipe package and a
    client program's directory, put into the controller at the same paths; and the dirs its
    PYTHONPATH needs for the recipe's import."""
    from zkjepsen.client.pool import user_recipe_binds
    from zkjepsen.run.resolve import spec_program

    dirs = list(user_recipe_binds(spec.recipe))
    path = [str(Path(d).parent) for d in dirs]
    plan = spec_program(spec)
    if plan and plan.mount:
        dirs.append(plan.mount)
    out = []
    for d in map(Path, dirs):
        for p in [d] if d.is_file() else sorted(d.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out.append((p, str(p)))
    return out, path


def run_remote(spec, store_root, engine, schedule=None, display=None, gen=None):
    """`run_test` of `spec` inside a controller on `engine`; the folder comes back here."""
    from zkjepsen.backends.registry import provide_images
    from zkjepsen.run.shipping import SITE, SRC, put_files
    from zkjepsen.store import new_run_dir

    if gen is not None:
        raise BadInput(
            "a scenario's triggered faults need the runner next to the ensemble; run it on an "
            f"engine this machine reaches (engine {engine.name} needs a controller)"
        )
    client = engine.client()
    t0 = time.monotonic()
    provide_images(engine, spec)  # shipped from here: the controller never builds
    image, _ = prepare(engine, client)
    extra, path = user_code(spec)
    run_id = resources.new_run_id()
    job = {"spec": spec.to_json(), "schedule": schedule, "engine_id": client.info()["ID"]}
    api = client.api
    host = resources.host_id()
    cid = api.create_container(
        image,
        name=f"{run_id}-controller",
        environment={
            JOB_ENV: json.dumps(job),
            resources.RUN_ID_ENV: run_id,
            resources.INSIDE_ENV: "1",
            MODE_ENV: "never",
            REPORTS_ENV: "off",
            "DOCKER_HOST": f"unix://{INNER_SOCKET}",
            "PYTHONPATH": ":".join([SRC, SITE, *path]),
            **{k: os.environ[k] for k in FORWARDED if k in os.environ},
        },
        labels=resources.labels(run_id, resources.CONTROLLER_ROLE, **{"owner-host": host}),
        host_config=api.create_host_config(
            network_mode="host", binds={socket_path(engine): {"bind": INNER_SOCKET, "mode": "rw"}}
        ),
    )["Id"]
    local_dir = None
    try:
        if extra:
            put_files(client, cid, extra)
        local_dir = new_run_dir(spec.test_name, store_root).path
        with signals.teardown_on_signals():
            api.start(cid)
            figures = {"start_s": time.monotonic() - t0}
            figures.update(_follow(client, cid, display, t0))
        t1 = time.monotonic()
        res = _finish(client, cid, local_dir)
        figures["fetch_s"] = time.monotonic() - t1
        figures["fetch_mb"] = (
            sum(p.stat().st_size for p in local_dir.rglob("*") if p.is_file()) / 1e6
        )
        _note(local_dir, display, figures)
    except BaseException as e:
        with signals.signals_deferred():
            _stop(client, cid)
            if local_dir is not None:
                _finish(client, cid, local_dir, quiet=True)
            resources.remove_run(client, run_id)
        from zkjepsen.run.outcome import Teardown

        e.teardown = Teardown(run_id, local_dir or Path(""), resources.leftovers(client, run_id))  # type: ignore[attr-defined]
        raise
    resources.remove_run(client, run_id)
    return _result(res, spec, engine, local_dir)


def _follow(client, cid: str, display, t0: float) -> dict[str, float]:
    """Stream the controller's output (a thread) until it exits; signals stay deliverable.
    Returns when its first line came (seconds since `t0`: the controller's start-up)."""
    first: dict[str, float] = {}

    def pump() -> None:
        buf = b""
        try:
            for chunk in client.api.logs(cid, stream=True, follow=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    first.setdefault("first_line_s", time.monotonic() - t0)
                    _show(display, line.decode(errors="replace"))
        except Exception:  # noqa: BLE001 - the container went away: the wait below tells
            pass

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    while client.api.inspect_container(cid)["State"]["Running"]:
        t.join(0.5)
    t.join(5)
    return first


def _note(local_dir: Path, display, figures: dict[str, float]) -> None:
    """The controller's costs, in the run's log here (and on the display)."""
    line = (
        f"controller: images checked and controller started in {figures['start_s']:.1f} s, "
        f"first output after {figures.get('first_line_s', float('nan')):.1f} s; folder "
        f"({figures['fetch_mb']:.1f} MB) fetched in {figures['fetch_s']:.1f} s"
    )
    from zkjepsen.store import RunDir

    with RunDir(local_dir).run_log.open("a") as f:
        f.write(line + "\n")
    _show(display, line)


def _show(display, line: str) -> None:
    if display is not None and hasattr(display, "log"):
        display.log(f"[controller] {line}")
    else:
        print(f"[controller] {line}", flush=True)


def _stop(client, cid: str) -> None:
    """One SIGTERM (the run tears itself down inside), then wait for it to end."""
    try:
        client.api.kill(cid, signal="SIGTERM")
    except Exception:  # noqa: BLE001 - not started, or already gone
        return
    deadline = time.monotonic() + TEARDOWN_WAIT_S
    while time.monotonic() < deadline:
        try:
            if not client.api.inspect_container(cid)["State"]["Running"]:
                return
        except Exception:  # noqa: BLE001
            return
        time.sleep(0.5)


def _finish(client, cid: str, local_dir: Path, quiet: bool = False) -> dict[str, Any]:
    """Fetch the controller's store into `local_dir`; its result (or why there is none)."""
    from zkjepsen.run.shipping import read_tar_stream
    from zkjepsen.store import controller_result

    tmp = local_dir.parent / f".fetch-{local_dir.name}"
    try:
        try:
            chunks, _ = client.api.get_archive(cid, STORE)
            read_tar_stream(chunks, tmp)
        except Exception as e:  # noqa: BLE001
            if quiet:
                return {}
            raise EnvironmentProblem(
                f"cannot fetch the run's folder from its controller ({str(e)[:120]}); its "
                f"output ends: {_tail(client, cid)}"
            ) from None
        store = tmp / Path(STORE).name
        runs = sorted(store.glob("runs/*/2*"))
        if runs:
            for p in runs[-1].iterdir():
                shutil.move(str(p), local_dir / p.name)
        try:
            return json.loads(controller_result(store).read_text())
        except (OSError, ValueError):
            if quiet:
                return {}
            raise EnvironmentProblem(
                f"the controller ended without a result; its output ends: {_tail(client, cid)}"
            ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _tail(client, cid: str, n: int = 4) -> str:
    try:
        logs = client.api.logs(cid, tail=n).decode(errors="replace").strip()
    except Exception:  # noqa: BLE001
        return "(gone)"
    return " | ".join(logs.splitlines()) or "(nothing)"


def _result(res: dict[str, Any], spec, engine, local_dir: Path):
    import dataclasses

    from zkjepsen.run.analysis import render_reports
    from zkjepsen.run.outcome import RunResult
    from zkjepsen.run.stored import StoredRun
    from zkjepsen.store import RunDir

    if not res.get("ok"):
        if res.get("exit_code") == 143:
            raise signals.Terminated(res.get("error", "stopped"))
        cls = BadInput if res.get("exit_code") == EXIT_BAD_INPUT else EnvironmentProblem
        raise cls(f"on engine {engine.name}: {res.get('error')}")
    spec = dataclasses.replace(spec, engine=engine.name)
    RunDir(local_dir).save_spec(spec.to_json())
    run = RunResult(spec, local_dir, res["valid"], res["results"], res["stats"])
    render_reports(run, StoredRun.load(local_dir).history())
    return run
