"""What a client container runs, as data (run/resolve.py `program_for` chooses): the Python
driver for a Python recipe, a registered driver's own command (Java, Go, ...), or the user's
program (`--client-cmd`, `--recipe exec:PATH`), whose directory is mounted read-only at
`PROGRAM_DIR`.

`None` means the in-process loop (a Python recipe with `client_mode = "in-process"`, or a
workload its Python driver does not cover: rwlock, semaphore, queue, register, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

PROGRAM_DIR = "/opt/zkjepsen/program"
PROTOCOL_WORKLOADS = ("lock", "counter", "election")
# What a program behind the wire protocol serves: those, and the semaphore (a lock with an empty
# critical section; `permits` is in init's params) and the rwlock (each acquire, release and
# holding names its `mode`; a program that ignores it is a mutex for both: stricter, still
# correct). A Python recipe runs these two in-process (PROTOCOL_WORKLOADS picks its driver).
PROGRAM_WORKLOADS = (*PROTOCOL_WORKLOADS, "semaphore", "rwlock")
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
    # Python distributions mounted into its clients beside the shared ones (a recipe's
    # RecipeInfo.distributions; client/libraries.py)
    libraries: tuple[str, ...] = ()
