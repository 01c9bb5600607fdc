"""A server killed and restarted inside its container, not with the container.

`docker kill` + `docker start` tears down and rebuilds the container (its network namespace,
mounts and cgroup) around every server restart: 0.6-6 s of `docker start` on a loaded 2-core
machine (load 40-50), before the JVM even begins. A scenario that kills a leader as often as
it can (the gate's `leader-kill`) spends most of each cycle there. Under this supervisor the
container's PID 1 is a small shell that runs the image's own entrypoint as its child:

- SIGUSR1 (`docker kill --signal USR1`): the server gets SIGKILL at once, as `docker kill`
  gives it. The kernel closes its sockets (its peers and clients see resets, as on a process
  crash), its files stay as they were written. The container and its network namespace live
  on, so the host's view is that of a process crash on a machine that stays up (`docker kill`
  is that of a machine going away: its address stops answering);
- SIGUSR2: the server starts again (a new process, a cold JVM), if it was killed;
- a server that exits on its own ends the supervisor, and so the container, as without it
  (start-up failures stay visible as an exited container).

It is a per-run choice (ZooKeeper's `restart = "process"` setting), recorded in test.json.
"""

from __future__ import annotations

# POSIX sh (dash). `wait` returns early when a trapped signal arrives (status > 128); `sig`
# tells that from the server's own end. `killed`: SIGUSR1 came since the server started, so
# its end was ours; `want`: SIGUSR2 came since, start it again. The sleep that waits for it is
# ended with SIGKILL: a SIGTERM can reach its shell before it is `sleep` and be lost there,
# and the `wait` for it would never end (a restart lost under load).
SCRIPT = r"""
want=1 killed=0 sig=0 pid=0
trap 'sig=1; killed=1; want=0; kill -KILL "$pid" 2>/dev/null' USR1
trap 'sig=1; want=1' USR2
trap 'kill -KILL "$pid" 2>/dev/null; exit 143' TERM INT
"$@" & pid=$!
while :; do
  sig=0
  wait "$pid"; rc=$?
  [ "$sig" = 1 ] && continue
  [ "$killed" = 1 ] || exit "$rc"
  sleep infinity & s=$!
  until [ "$want" = 1 ]; do wait "$s"; done
  kill -KILL "$s" 2>/dev/null; wait "$s" 2>/dev/null
  killed=0
  "$@" & pid=$!
done
"""
KILL_SIGNAL = "SIGUSR1"
START_SIGNAL = "SIGUSR2"


def entrypoint(inner: list[str]) -> list[str]:
    """The container's entrypoint that runs `inner` (the image's own) under the supervisor."""
    return ["/bin/sh", "-c", SCRIPT, "zk-supervise", *inner]
