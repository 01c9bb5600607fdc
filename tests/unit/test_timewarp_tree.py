"""zkj-timewarp reaches every process of the program's tree, however the program runs its
real work (issue 47: `sh -c CMD` used to be patched and CMD not), and its observation page says
what each process read. Native: the launcher and probes are built here with this machine's cc
(the same build.sh the images run); no Docker.

Each form runs the C clock probe (its own log: raw monotonic, then each clock as read) under a
control file set to `+3600 x4` before the start: every clock runs 4x, REALTIME 3600 s ahead."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import cpu_bounded

from zkjepsen.docker import timewarp as tw

SRC = Path(tw.__file__).resolve().parents[1] / "client" / "drivers" / "timewarp"
S = 1_000_000_000
RATE = 4
SPEC = f"+3600 x{RATE}"
ROWS = ("3", "100")  # the probe: 3 rows, 100 ms apart

# A program whose second thread execs the probe (the exec'd image takes the process's pid).
THREAD_EXEC = r"""
#include <pthread.h>
#include <unistd.h>
static char **args;
static void *run(void *unused) { (void)unused; execv(args[0], args); return 0; }
int main(int argc, char **argv) {
    (void)argc; args = argv + 1;
    pthread_t t; pthread_create(&t, 0, run, 0); pthread_join(t, 0); return 1;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler on this machine (the images compile the launcher themselves)")
    out = tmp_path_factory.mktemp("timewarp-tree")
    subprocess.run(["sh", str(SRC / "build.sh"), str(out)], check=True, capture_output=True)
    static = subprocess.run(
        ["cc", "-O2", "-static", str(SRC / "probe.c"), "-o", str(out / "clockprobe-static")],
        capture_output=True,
        text=True,
    )
    assert static.returncode == 0, static.stderr
    (out / "thread_exec.c").write_text(THREAD_EXEC)
    subprocess.run(
        ["cc", "-O2", "-pthread", str(out / "thread_exec.c"), "-o", str(out / "thread_exec")],
        check=True,
        capture_output=True,
    )
    return out


def _forms(built: Path, tmp: Path) -> dict[str, tuple[list[str], str]]:
    """Form -> (argv under the launcher, the probe binary it ends up running)."""
    probe, static = str(built / "clockprobe"), str(built / "clockprobe-static")
    script = tmp / "run_probe.py"
    script.write_text(f"import subprocess\nsubprocess.run({[probe, *ROWS]!r}, check=True)\n")
    return {
        "sh-exec": (["/bin/sh", "-c", f"exec {probe} {' '.join(ROWS)}"], probe),
        "sh-fork-exec": (["/bin/sh", "-c", f"{probe} {' '.join(ROWS)}; true"], probe),
        "python-subprocess": ([sys.executable, str(script)], probe),
        "static": ([static, *ROWS], static),
        "exec-from-a-thread": ([str(built / "thread_exec"), probe, *ROWS], probe),
    }


FORMS = ["sh-exec", "sh-fork-exec", "python-subprocess", "static", "exec-from-a-thread"]


def _run(built: Path, control: Path, argv: list[str], seen: Path | None = None):
    env = dict(os.environ)
    env.pop("ZKJ_TIMEWARP_OBSERVE", None)
    if seen is not None:
        env["ZKJ_TIMEWARP_OBSERVE"] = str(seen)
    return subprocess.run(
        [str(built / "zkj-timewarp"), str(control), *argv],
        capture_output=True,
        text=True,
        **cpu_bounded(60),  # a hang fails; a busy machine does not
        env=env,
    )


@pytest.mark.parametrize("form", FORMS)
def test_every_form_of_the_program_reads_the_skewed_clocks_and_the_page_agrees(
    built, tmp_path, form
):
    argv, probe = _forms(built, tmp_path)[form]
    control, seen = tmp_path / "ctl", tmp_path / "seen"
    tw.blank(control)
    gen = tw.apply(control, SPEC)
    before = time.clock_gettime_ns(time.CLOCK_REALTIME)
    run = _run(built, control, argv, seen)
    assert run.returncode == 0, run.stderr
    assert "real time" not in run.stderr  # no exec of the tree was left unpatched
    rows = [[int(x) for x in line.split()] for line in run.stdout.splitlines()]
    assert len(rows) == int(ROWS[0])
    first, last = rows[0], rows[-1]
    # the probe's own log: monotonic runs RATE x real, REALTIME is more than an hour ahead
    rate = (last[2] - first[2]) / (last[0] - first[0])
    assert abs(rate - RATE) <= 0.01 * RATE, rate
    assert first[1] >= before + 3600 * S
    assert first[5] >= (before + 3600 * S) // S  # time()
    assert first[4] >= (before + 3600 * S) // 1000  # gettimeofday()

    page = tw.observed(seen)
    exes = [exe for _, exe in page.injected]
    assert probe[-55:] in exes and not page.missed, page  # a long path: its last 55 bytes
    if form == "sh-exec":  # one process: the shell, then the probe in its place
        assert len({pid for pid, _ in page.injected}) == 1 and len(exes) == 2
    if form == "sh-fork-exec":  # two: the shell, and its child that ran the probe
        assert len({pid for pid, _ in page.injected}) == 2
    lines = tw.read(control)
    for i, name in enumerate(tw.CLOCK_NAMES):
        got = page.clocks[name]
        assert got.gen == gen  # read under the change, and as the line says
        assert got.read_ns == tw.reading(lines[i], got.real_ns), (name, got)
    mono = page.clocks["monotonic"]
    # the page's rate against the probe's own first row: the same 4x, within 1 %
    page_rate = (mono.read_ns - first[2]) / (mono.real_ns - first[0])
    assert abs(page_rate - RATE) <= 0.01 * RATE, page_rate
    if form != "python-subprocess":  # the probe made the tree's last monotonic reading
        assert mono.read_ns == last[2]
    assert page.clocks["realtime"].offset_ns >= 3600 * S


def test_without_an_observation_page_the_tree_is_still_skewed_and_no_page_is_made(built, tmp_path):
    argv, _ = _forms(built, tmp_path)["sh-fork-exec"]
    control = tmp_path / "ctl"
    tw.blank(control)
    tw.apply(control, SPEC)
    run = _run(built, control, argv)
    assert run.returncode == 0, run.stderr
    rows = [[int(x) for x in line.split()] for line in run.stdout.splitlines()]
    rate = (rows[-1][2] - rows[0][2]) / (rows[-1][0] - rows[0][0])
    assert abs(rate - RATE) <= 0.01 * RATE, rate
    assert not list(tmp_path.glob("seen*"))


FORKED = """
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:  # a fork without exec: it inherits the patched pages
    os.close(w)
    os.read(r, 1)
    print(time.time_ns(), flush=True)
    os._exit(0)
os.close(r)
sys.stdin.readline()
os.write(w, b"x")
os.wait()
"""


def test_a_change_made_while_the_tree_runs_reaches_a_forked_child_and_is_seen(built, tmp_path):
    """A change made after a fork reaches the forked process (no exec: it reads through the
    pages it inherited), and the page's readings carry the change's seq (what a nemesis
    waits for)."""
    control, seen = tmp_path / "ctl", tmp_path / "seen"
    tw.blank(control)
    p = subprocess.Popen(
        [str(built / "zkj-timewarp"), str(control), sys.executable, "-c", FORKED],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "ZKJ_TIMEWARP_OBSERVE": str(seen)},
    )
    _child_of(p.pid)
    gen = tw.apply(control, "+3600")
    before = time.clock_gettime_ns(time.CLOCK_REALTIME)
    out, _ = p.communicate("go\n", timeout=30)
    assert p.returncode == 0
    assert int(out) >= before + 3600 * S
    got = tw.observed(seen).clocks["realtime"]
    assert got.gen == gen and got.offset_ns == 3600 * S


@pytest.mark.parametrize(
    ("script", "status"),
    [("exit 3", 3), ("kill -9 $$", 128 + 9), ("kill -TERM $$", 128 + 15), ("true", 0)],
)
def test_the_launcher_exits_with_the_programs_status(built, tmp_path, script, status):
    control = tmp_path / "ctl"
    tw.blank(control)
    assert _run(built, control, ["/bin/sh", "-c", script]).returncode == status


def test_a_missing_program_is_127_and_said(built, tmp_path):
    control = tmp_path / "ctl"
    tw.blank(control)
    run = _run(built, control, [str(tmp_path / "nothing-here")])
    assert run.returncode == 127 and "cannot run" in run.stderr


def _child_of(launcher: int) -> int:
    """The launcher's child (PROGRAM's process), once it has one (bounded wait)."""
    for _ in range(1000):
        kids = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    raise AssertionError("the launcher never started its program")


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_sigterm_to_the_launcher_reaches_the_program(built, tmp_path):
    control = tmp_path / "ctl"
    tw.blank(control)
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('term', flush=True), sys.exit(7)))\n"
        "print('ready', flush=True)\n"
        "signal.pause()\n"
    )
    p = subprocess.Popen(
        [str(built / "zkj-timewarp"), str(control), sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGTERM)
    assert p.stdout.read() == "term\n"
    assert p.wait(30) == 7


def test_a_stopped_program_stays_stopped_until_it_is_continued(built, tmp_path):
    """A stop signal stops the program as it would without a tracer (the launcher does not
    run it on), and SIGCONT to the launcher lets it go on."""
    control = tmp_path / "ctl"
    tw.blank(control)
    p = subprocess.Popen(
        [
            str(built / "zkj-timewarp"),
            str(control),
            "/bin/sh",
            "-c",
            "echo stopping; kill -STOP $$; echo on",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    child = _child_of(p.pid)
    assert p.stdout.readline() == "stopping\n"  # past its exec: a 't' now is its stop
    for _ in range(1000):  # bounded wait for the stop
        if p.poll() is not None or _state(child) in ("t", "T"):
            break
        time.sleep(0.01)
    time.sleep(0.2)  # a launcher that ran it on would let it print and end meanwhile
    assert p.poll() is None and _state(child) in ("t", "T")
    p.send_signal(signal.SIGCONT)
    assert p.stdout.read() == "on\n"
    assert p.wait(30) == 0


def test_a_sigpwr_to_the_launcher_stops_the_program_and_not_the_launcher(built, tmp_path):
    """A power loss stops a server by a signal to its container's PID 1; under the launcher
    that is the tracer, whose own stop would leave the server running (and acknowledging), so
    SIGPWR makes the launcher stop its program instead (docker/servers.py `halt`)."""
    control = tmp_path / "ctl"
    tw.blank(control)
    p = subprocess.Popen(
        [
            str(built / "zkj-timewarp"),
            str(control),
            "/bin/sh",
            "-c",
            "echo up; while :; do :; done",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    try:
        child = _child_of(p.pid)
        assert p.stdout.readline() == "up\n"
        p.send_signal(signal.SIGPWR)
        for _ in range(1000):  # bounded wait for the stop
            if p.poll() is not None or _state(child) in ("t", "T"):
                break
            time.sleep(0.01)
        assert p.poll() is None  # the launcher lives on (SIGPWR would otherwise end it)
        assert _state(child) in ("t", "T")
        assert _state(p.pid) not in ("t", "T")
    finally:
        p.kill()
        p.wait(30)
