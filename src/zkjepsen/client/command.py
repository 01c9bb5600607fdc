"""Which program a client container runs, on the host's side: the Python driver for a Python
recipe, a registered driver's own command (Java, Go, ...), or the user's program (`--client-cmd`,
`--recipe exec:PATH`), whose directory is mounted read-only at `PROGRAM_DIR`.

`None` means the in-process loop (a Python recipe with `client_mode = "in-process"`, or a
workload the wire protocol does not cover: rwlock, queue, register, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput

PROGRAM_DIR = "/opt/zkjepsen/program"
PROTOCOL_WORKLOADS = ("lock", "counter", "election")
ZOOKEEPER_BACKENDS = ("zookeeper",)
PYTHON_DRIVER = ("python3", "-m", "zkjepsen.workloads.driver")
# Python recipes of other lock services (Redis, PostgreSQL): workloads/driver/service.py.
SERVICE_DRIVER = ("python3", "-m", "zkjepsen.workloads.driver.service")


@dataclass(frozen=True)
class ProgramPlan:
    argv: tuple[str, ...]  # inside the client container
    mount: str | None = None  # host directory mounted read-only at PROGRAM_DIR
    cwd: str | None = None  # the program's working directory in the container
    language: str = "python"


def program_for(
    recipe: str,
    workload: str,
    client_cmd: str | None = None,
    client_dir: str | None = None,
    client_mode: str = "protocol",
) -> ProgramPlan | None:
    from zkjepsen.recipes import RECIPES

    if recipe == "exec":
        mount = str(Path(client_dir or os.getcwd()).resolve())
        return ProgramPlan(("/bin/sh", "-c", client_cmd or ""), mount, PROGRAM_DIR, "user")
    if recipe.startswith("exec:"):
        path = Path(recipe[len("exec:") :]).resolve()
        mount = Path(client_dir).resolve() if client_dir else path.parent
        try:
            rel = path.relative_to(mount)
        except ValueError:
            rel = Path(path.name)
        return ProgramPlan((f"{PROGRAM_DIR}/{rel.as_posix()}",), str(mount), PROGRAM_DIR, "user")
    info = RECIPES.get(recipe)
    if info is not None and info.command:
        return ProgramPlan(tuple(info.command), None, None, info.language)
    if info is not None and info.backends[0] not in ZOOKEEPER_BACKENDS:
        return ProgramPlan((*SERVICE_DRIVER, recipe))  # the wire protocol whatever the mode
    if workload in PROTOCOL_WORKLOADS and client_mode == "protocol":
        return ProgramPlan((*PYTHON_DRIVER, recipe))
    return None


def is_foreign(recipe: str) -> bool:
    """A program zkjepsen cannot run in-process (the user's, another language's, or a Python
    recipe of another lock service, which runs only behind the wire protocol)."""
    from zkjepsen.recipes import RECIPES

    info = RECIPES.get(recipe)
    return (
        recipe == "exec"
        or recipe.startswith("exec:")
        or bool(info and (info.command or info.backends[0] not in ZOOKEEPER_BACKENDS))
    )


def validate_program(spec: Any) -> None:
    """Bad input, on the host: a program that cannot be found or cannot serve the workload."""
    if spec.recipe == "exec" and not spec.client_cmd:
        raise BadInput("recipe exec runs the program given with --client-cmd; give one")
    if spec.client_cmd and spec.recipe != "exec":
        raise BadInput(f"give either --recipe ({spec.recipe}) or --client-cmd, not both")
    if is_foreign(spec.recipe) and spec.workload not in PROTOCOL_WORKLOADS:
        raise BadInput(
            f"a client program (recipe {spec.recipe}) serves the "
            f"{', '.join(PROTOCOL_WORKLOADS)} workloads, not {spec.workload}"
        )
    if is_foreign(spec.recipe) and spec.client_mode == "in-process":
        raise BadInput(f"recipe {spec.recipe} is a program, it cannot run in-process")
    if spec.client_dir is not None and not Path(spec.client_dir).is_dir():
        raise BadInput(f"client dir {spec.client_dir} is not a directory")
    if spec.recipe.startswith("exec:"):
        path = Path(spec.recipe[len("exec:") :])
        if not path.is_file() or not os.access(path, os.X_OK):
            raise BadInput(f"{path} is not an executable file (recipe exec:PATH)")
    plan = program_for(spec.recipe, spec.workload, spec.client_cmd, spec.client_dir)
    if plan is not None and plan.mount is not None:
        # Only what it surely needs: deeper files may be private on purpose (a secret it never
        # reads); one it does need shows as its own error in the client's log.
        entry = Path(plan.mount) / plan.argv[0][len(PROGRAM_DIR) + 1 :]
        for p in (Path(plan.mount), *([entry] if plan.argv[0].startswith(PROGRAM_DIR) else [])):
            if not _open_to_others(p):
                raise BadInput(
                    f"{p} is not readable by other users, and the program under test runs as "
                    f"an unprivileged user in its container; run `chmod o+rx {p}`"
                )


def _open_to_others(path: Path) -> bool:
    """Can a user who is neither its owner nor in its group read (and enter, or run) it?"""
    import stat

    need = stat.S_IROTH | stat.S_IXOTH
    try:
        return path.stat().st_mode & need == need
    except OSError:
        return True  # missing: reported elsewhere
