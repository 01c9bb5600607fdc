"""A client program for the wire-protocol tests that needs no ZooKeeper: an in-memory lock and
resource. `python3 fake_program.py MODE`; MODE `good` follows the protocol, the others break it
on purpose (docs/client-protocol.md, "Protocol faults").

Modes: good | silent-init | out-of-order | junk | endless-line | die-mid-answer |
hang-acquire:N (the N-th acquire never answers) | slow-holding (answers holding after 0.3 s) |
crash-write:N (exit on the N-th write) | junk-write:N.
The side a request names (`mode`, the rwlock's) goes into the acquired node's name, and a
release or holding naming another side than the one held finds nothing held.
"""

import json
import os
import sys
import time

mode, _, arg = (sys.argv[1] if len(sys.argv) > 1 else "good").partition(":")
nth = int(arg or 1)
out = sys.stdout
counts = {"acquire": 0, "write": 0}
held = False
side = None  # the `mode` the held lock was acquired with
version = 0
data = "{}"
czxid = 100


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    counts[op] = counts.get(op, 0) + 1
    if op == "init":
        if mode == "silent-init":
            continue
        if mode == "junk":
            out.write("hello, I am starting up\n")
            out.flush()
            continue
        if mode == "endless-line":  # 4 MiB of a line that never ends, then silence
            out.write("x" * (4 << 20))
            out.flush()
            time.sleep(3600)
        if mode == "die-mid-answer":
            out.write('{"in_reply_to": 1, "type": "o')
            out.flush()
            os._exit(3)
        send({"event": "session-state", "value": "CONNECTED"})
        send(
            {
                "in_reply_to": rid,
                "type": "ok",
                "value": {"session_id": f"0x{os.getpid():x}", "timeout_ms": 4000},
            }
        )
    elif op == "acquire":
        if mode == "out-of-order":
            send({"in_reply_to": rid + 7, "type": "ok", "value": None})
            continue
        if mode == "hang-acquire" and counts["acquire"] == nth:
            time.sleep(3600)
        czxid += 1
        held, side = True, req.get("mode")
        send(
            {
                "in_reply_to": rid,
                "type": "ok",
                "value": {"token": czxid, "node": f"/zkjepsen/lock/{side or 'x'}-{czxid:010d}"},
            }
        )
    elif op == "release":
        if not held or req.get("mode") != side:
            send({"in_reply_to": rid, "type": "fail", "error": "NotHeld"})
            continue
        held = False
        send({"in_reply_to": rid, "type": "ok", "value": None})
    elif op == "holding":
        if mode == "slow-holding":
            time.sleep(0.3)
        send({"in_reply_to": rid, "type": "ok", "value": held and req.get("mode") == side})
    elif op == "read":
        send({"in_reply_to": rid, "type": "ok", "value": {"data": data, "version": version}})
    elif op == "write":
        if mode == "crash-write" and counts["write"] == nth:
            os._exit(5)
        if mode == "junk-write" and counts["write"] == nth:
            out.write("[1, 2, 3]\n")
            out.flush()
            continue
        if req.get("fenced") and not held:
            send({"in_reply_to": rid, "type": "fail", "error": "Fenced"})
            continue
        if req.get("version", -1) not in (-1, version):
            send({"in_reply_to": rid, "type": "fail", "error": "BadVersion"})
            continue
        version += 1
        data = req["data"]
        send({"in_reply_to": rid, "type": "ok", "value": {"version": version}})
    elif op == "close":
        send({"in_reply_to": rid, "type": "ok", "value": None})
        break
