"""A program that fakes its lock (issue 48): it speaks the client protocol
(docs/client-protocol.md) well, never opens a connection to the service, and answers every
`acquire` with a grant. Its resource lives in its own memory, so its writes "land" too. Only
the service's own view of who holds (run/observer.py) can tell: every grant is a phantom.

`python3 fake_grant.py`; any service (it never reads `servers`).
"""

import json
import os
import sys

out = sys.stdout
lock_path = "/zkjepsen/lock"
tokens = 0
held = False
data, version = "{}", 0


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    value = None
    if op == "init":
        lock_path = req.get("lock_path") or lock_path
        send({"event": "session-state", "value": "CONNECTED"})
        value = {"session_id": f"0x{os.getpid():x}", "timeout_ms": req.get("session_timeout_ms")}
    elif op == "acquire":
        tokens += 1
        held = True
        value = {"token": tokens, "node": f"{lock_path}/fake-{tokens:010d}"}
    elif op == "release":
        held = False
    elif op == "holding":
        value = held
    elif op == "read":
        value = {"data": data, "version": version}
    elif op == "write":
        if req.get("version", -1) not in (-1, version):
            send({"in_reply_to": rid, "type": "fail", "error": "BadVersion"})
            continue
        data, version = req.get("data", ""), version + 1
        value = {"version": version}
    send({"in_reply_to": rid, "type": "ok", "value": value})
    if op == "close":
        break
