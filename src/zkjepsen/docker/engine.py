"""Engines: which Docker engine a run lives on.

A run lives entirely on one engine: its servers, its clients, its faults and the monotonic clock
its history is stamped with are one kernel's. An engine is named the way Docker users name one:
`default` (whatever `DOCKER_HOST` / the default socket says), a docker context name, or a
`DOCKER_HOST` URL (`unix://`, `tcp://`, `ssh://`). Several engines serve a matrix, a replay
series or a shrink (`zkjepsen.run.fanout`: `--parallel` runs on one engine; `--cluster` runs
on Dask workers, each with its own host's engine: run/dask_executor.py).

Files do not tie a run to this machine: the files containers read and write (node config,
faketime control files, the client code, histories, logs) are bind mounts on an engine that
shares this machine's filesystem and copies through the engine's API on one that does not, which
each run asks of the engine itself (docker/mounts.py). Networks do not either: the runner
reaches containers by their IPs (`srvr` queries, its own kazoo session) and stamps the history
with one kernel's clock, so an engine on another host is refused here: runs go there as Dask
tasks, each on the worker next to its engine (`--cluster`).

Images are never pulled: an engine that lacks one builds it (the node image from Debian
packages, docker/image.py); a user's `--image` must be on the engine already.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from zkjepsen.docker.resources import docker_client
from zkjepsen.errors import BadInput, EnvironmentProblem

SCHEMES = ("unix", "tcp", "ssh")
DEFAULT = "default"


@dataclass(frozen=True)
class Engine:
    """One Docker engine. `name` is what the user wrote (also what a run records); `host` is its
    DOCKER_HOST-style URL, None for the environment's default."""

    name: str = DEFAULT
    host: str | None = None
    tls: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str) -> Engine:
        """`default`, a docker context name, or a unix:// tcp:// ssh:// URL."""
        text = (text or "").strip()
        if not text or text == DEFAULT:
            return cls()
        if "://" in text:
            scheme = text.partition("://")[0]
            if scheme not in SCHEMES:
                raise BadInput(
                    f"--engine {text}: unknown scheme {scheme}://; give a docker "
                    "context name or a unix://, tcp:// or ssh:// URL"
                )
            if scheme == "unix" and not urlsplit(text).path:
                raise BadInput(f"--engine {text}: a unix:// URL needs a socket path")
            return cls(text, text)
        # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
        from docker.context import ContextAPI

        try:
            ctx = ContextAPI.get_context(text)
        except Exception as e:  # noqa: BLE001 - a broken context store: say which
            raise BadInput(f"--engine {text}: cannot read docker context ({e})") from None
        if ctx is None:
            raise BadInput(
                f"--engine {text}: no docker context by that name (`docker context "
                "ls` lists them) and not a unix://, tcp:// or ssh:// URL"
            )
        return cls(text, ctx.Host, ctx.TLSConfig)

    @property
    def url(self) -> str:

        return self.host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"

    @property
    def key(self) -> str:
        """How runs record this engine (scratch dirs, `cleanup --engine`): the URL, or
        `default` for the environment's own engine however it was named."""
        return DEFAULT if self.url == Engine().url else self.url

    @property
    def local(self) -> bool:
        """True if the engine runs on this machine (its container IPs are routed from here):
        a unix socket, or a tcp/ssh address that is one of this machine's own. (Whether it
        shares our files is asked of the engine per run: docker/mounts.py.)"""
        parts = urlsplit(self.url)
        if parts.scheme in ("unix", "npipe", ""):
            return True
        return is_local_address(parts.hostname or "")

    def require_local(self) -> None:
        """An engine on another machine is refused: the runner reaches its containers by their
        IPs, so it runs on the engine's host (a Dask worker there: `--cluster`)."""
        if not self.local:
            raise BadInput(
                f"engine {self.name} ({self.url}) is on another machine, whose containers' IPs "
                "the runner cannot reach from here; run there: a Dask worker on that host and "
                "--cluster tcp://SCHEDULER:8786 (docs/ci.md)"
            )

    def client(self, timeout: int = 120):
        """A docker.DockerClient for this engine (pinged), or one sentence about why not."""
        if self.host is None:
            return docker_client()
        # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
        import docker

        try:
            client = docker.DockerClient(
                base_url=self.host,
                tls=self.tls,
                timeout=timeout,
                use_ssh_client=self.host.startswith("ssh://"),
            )
            client.ping()
            return client
        except Exception as e:  # noqa: BLE001 - the SDK raises many kinds here
            reason = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
            raise EnvironmentProblem(
                f"cannot reach Docker engine {self.name} ({self.host}): {reason}"
            ) from None


def is_local_address(host: str) -> bool:
    """Whether `host` names this machine (binding a socket to it succeeds only then)."""
    if host in ("localhost", ""):
        return True
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    for family, _, _, _, addr in infos:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((addr[0], 0))
            return True
        except OSError:
            continue
    return False


def parse_engines(texts: Iterable[str]) -> list[Engine]:
    """`--engine` values (repeatable, also comma-separated), duplicates dropped; [default]
    when none."""
    out: list[Engine] = []
    for text in texts:
        for part in text.split(","):
            e = Engine.parse(part)
            if all(e.url != o.url for o in out):
                out.append(e)
    return out or [Engine()]


# ---- images ---------------------------------------------------------------------------------
def provide_image(
    engines: list[Engine],
    image: str | None = None,
    on_build: Callable[[str], None] = lambda line: None,
    *,
    recipe,
) -> str:
    """Make `recipe`'s image (a docker.image.ImageRecipe: the node image, a backend's server
    image), or the user's `image`, present on every engine of `engines`; returns its tag.
    zkjepsen's own image is built on an engine that lacks it; a user's `--image` must be
    there already. Never pulled from a registry."""

    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.docker.image import default_tag, ensure_image, image_exists

    tag = image or default_tag(recipe)
    for e in engines:
        client = e.client()
        if not image_exists(client, tag):
            ensure_image(client, image, on_progress=on_build, recipe=recipe)  # BadInput: no --image
    return tag
