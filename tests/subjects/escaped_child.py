"""A client program whose child escapes into a session of its own (issue 48):
`python3 escaped_child.py [CLIENTS] [LINGER_S]`.

The clients named (comma-separated numbers; default: all) read `init`, fork, and the child calls
setsid (so a kill of the program's process group misses it), keeps stdin and stdout open and
sleeps LINGER_S (default an hour); the parent exits without answering. No answer comes and no EOF
either (the child holds the pipe): the client never initializes, and the run must say so
(UNKNOWN naming it), not go on without it to a verdict on the others. The other clients serve
the protocol with zkjepsen's Python driver and kazoo's lock.
"""

import itertools
import json
import os
import sys
import time

chosen = sys.argv[1] if len(sys.argv) > 1 else "all"
linger_s = float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0
first = sys.stdin.buffer.readline()
init = json.loads(first) if first.strip() else {}
if chosen != "all" and str(init.get("client")) not in chosen.split(","):
    from zkjepsen.workloads.driver.server import PythonDriver

    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # as the driver's own main: a print must not reach the protocol
    sys.exit(PythonDriver("kazoo", out).serve(itertools.chain([first], sys.stdin.buffer)))
if os.fork() == 0:
    os.setsid()
    time.sleep(linger_s)
    os._exit(0)
os._exit(0)
