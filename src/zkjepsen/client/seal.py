"""What a client container may do, so that the history is beyond the reach of the code under test.

A client container holds two processes: the recorder (PID 1, `zkjepsen.client.main`, our code),
which writes the history, and, behind the client wire protocol, the program under test (a
driver, or the user's `--client-cmd`), which the recorder starts as its child. The program must
not be able to rewrite what the recorder wrote, stop or trace the recorder, or undo its faults:
- It runs as `PROGRAM_UID` (`nobody`, present in every Debian image; numeric, so an image
  without it works too) with no supplementary group, and `no-new-privileges`: the image's
  set-uid binaries (su, mount, passwd, ...) cannot give it root back.
- The recorder's directory `/out` is `OUT_MODE` (owner and group only), so to the program's uid
  the history cannot be opened, appended to, truncated, renamed or deleted; it cannot even be
  listed. The recorder is uid 0 without CAP_DAC_OVERRIDE, so it writes /out as its owner (a
  root zkjepsen) or through the group of the zkjepsen user that created it
  (`group_add`), which the program leaves behind when it starts.
- Every capability is dropped; the recorder gets back only `RECORDER_CAPS`, and only when it
  runs a program (the in-process loop gets none). The program starts as another uid, so the
  kernel clears its capabilities at that `setuid`: none reach it. Without NET_RAW no raw or
  packet socket opens (they would bypass the iptables rules that isolate a client); without
  NET_ADMIN no iptables rule changes; a different uid without CAP_KILL and CAP_SYS_PTRACE can
  neither signal nor trace the recorder, nor open its memory or file descriptors in /proc.
- A wire proxy (`proxy = true`) runs in the recorder, and its control port is in the program's
  network namespace: it obeys only commands carrying the run's token, which reaches the
  recorder in its environment and is taken out of it before the program starts (client/main.py;
  the recorder's /proc environ is closed to the program's uid).
- Each client container mounts only its own control directory at /control (`CONTROL_MODE`):
  its spec and its start barrier (`CONTROL_FILE_MODE`) are the recorder's to read, by owner or
  group as /out is; to the program's uid the directory cannot be listed and those files cannot
  be opened, so it sees no spec (its own, with the host paths in it, or another client's).
  Its libfaketime file (`FAKETIME_MODE`) must stay readable: libfaketime reads it inside the
  program's own process, so the program can read the clock it is given (only its own), though
  not list that it is there; a clock skew applied from outside the process would need no file.
- The program can write only to small memory-backed scratch directories (`SCRATCH`: its HOME
  and TMPDIR are /tmp): nothing it writes reaches the disk the history is on, and it counts
  against the container's memory limit.

Limits, said plainly: a recipe run in-process (the in-process loop: `client_mode =
"in-process"`, and the workloads the wire protocol does not cover) is Python code inside the
recorder itself, so none of this separates it from the history. And a program can still make
its own client fail (exhaust the container's memory or pids), which leaves a short history,
not a false one.
"""

from __future__ import annotations

import os
from pathlib import Path

PROGRAM_UID = 65534  # nobody:nogroup
PROGRAM_HOME = "/tmp"
OUT_MODE = 0o770
# The recorder's capabilities, each for one thing it does (all else is dropped):
RECORDER_CAPS = (
    "SETUID",  # start the program as PROGRAM_UID (setresuid in the child, before exec); and
    # read its descriptors in /proc as its uid, one thread's setfsuid (client/holders.py)
    "SETGID",  # ...with PROGRAM_UID's group and no supplementary group (setgroups, setresgid)
    "KILL",  # signal the program it started, a different uid (stop it, kill it on a fault)
)
# World-writable directories of the image (found with `find / -xdev -perm -0002`), each
# replaced by a small tmpfs: the program's only writable places. /dev/shm is Docker's own.
SCRATCH = {
    "/tmp": "rw,nosuid,nodev,size=64m,mode=1777",
    "/var/tmp": "rw,nosuid,nodev,size=16m,mode=1777",
    "/run/lock": "rw,nosuid,nodev,noexec,size=1m,mode=1777",
}
SHM_SIZE = "16m"
CONTROL_MODE = 0o751  # owner and group list and read; others (the program) only pass through
CONTROL_FILE_MODE = 0o640  # the spec, the start barrier: the recorder's
FAKETIME_MODE = 0o644  # read by libfaketime in the program's process, by its name


def seal_control_dir(path: Path) -> None:
    """A client's own control directory, closed to its program but for what it must read."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(CONTROL_MODE)


def write_control_file(path: Path, text: str, mode: int = CONTROL_FILE_MODE) -> None:
    """A control file written whole (a reader never sees half of it) with its mode set before
    it appears under its name."""

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.replace(tmp, path)


def host_config(runs_program: bool, out_dir: Path | None = None) -> dict:
    """create_host_config keywords confining a client container (above) whose /out is
    `out_dir` (None: no /out of ours)."""
    gid = out_dir.stat().st_gid if out_dir is not None else 0
    return {
        "cap_drop": ["ALL"],
        "cap_add": list(RECORDER_CAPS) if runs_program else [],
        "security_opt": ["no-new-privileges"],
        "tmpfs": dict(SCRATCH),
        "shm_size": SHM_SIZE,
        # A non-root zkjepsen owns /out: the recorder writes it through its group (the program
        # starts with no supplementary group).
        "group_add": [str(gid)] if gid != 0 else [],
    }


def seal_out_dir(path: Path) -> None:
    """The client's own output directory, closed to everyone but its owner and group."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(OUT_MODE)


def open_out_dir(path: Path) -> None:
    """Once its client stopped: the store's folder, readable like the rest of the run's."""
    try:
        path.chmod(0o755)
    except OSError:
        pass  # gone, or not ours: the folder stays as it was


def docker_run_args() -> list[str]:
    """The same confinement as `docker run` options, for a program run alone (`client check
    --in-image`): as it will run in a test, so a program that passes there runs here."""
    out = ["--user", f"{PROGRAM_UID}:{PROGRAM_UID}", "--cap-drop", "ALL"]
    out += ["--security-opt", "no-new-privileges", "--shm-size", SHM_SIZE]
    for where, options in SCRATCH.items():
        out += ["--tmpfs", f"{where}:{options}"]
    return [*out, "-e", f"HOME={PROGRAM_HOME}", "-e", f"TMPDIR={PROGRAM_HOME}"]
