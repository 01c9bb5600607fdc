"""A client program that closes its stdout and goes on running (issue 48):
`python3 closes_stdout.py [CLIENTS] [before-init]`.

The clients named (comma-separated numbers; default: all) answer `init` with a made-up session,
then close their stdout and keep reading their requests, answering none (`before-init`: they
close it before answering anything). The others serve the protocol with zkjepsen's Python driver
and kazoo's lock. Given as `--client-cmd "python3 closes_stdout.py; true"`, the shell that runs it
waits for it and keeps the pipe open, so no EOF comes: the recorder must see the close all the
same (client/holders.py), a protocol fault of that client at once, not a hang that the liveness
checker would call a stuck lock.
"""

import itertools
import json
import os
import sys
import time

chosen = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "before-init" else "all"
before_init = "before-init" in sys.argv[1:]
first = sys.stdin.buffer.readline()
init = json.loads(first) if first.strip() else {}
if chosen != "all" and str(init.get("client")) not in chosen.split(","):
    from zkjepsen.workloads.driver.server import PythonDriver

    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # as the driver's own main: a print must not reach the protocol
    sys.exit(PythonDriver("kazoo", out).serve(itertools.chain([first], sys.stdin.buffer)))
if not before_init:
    answer = {"session_id": f"0x{os.getpid():x}", "timeout_ms": init.get("session_timeout_ms")}
    sys.stdout.write(json.dumps({"in_reply_to": init.get("id"), "type": "ok", "value": answer}))
    sys.stdout.write("\n")
    sys.stdout.flush()
sys.stdout.close()
try:
    os.close(1)  # the descriptor itself (sys.stdout does not own it)
except OSError:
    pass
for _ in sys.stdin:  # every request read, none answered, until the recorder gives up on us
    pass
time.sleep(3600)
