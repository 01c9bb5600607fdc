"""The client wire protocol's messages (docs/client-protocol.md): JSON Lines, one request at a
time. Both sides use this module: the recorder (client/program.py) and the Python driver
(client/drivers/python). Stdlib only: it runs inside the client containers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

VERSION = 1
OPS = ("init", "acquire", "release", "holding", "read", "write", "close")
REPLY_TYPES = ("ok", "fail", "info")
MAX_LINE = 1 << 20  # a longer line is junk, not an answer


class ProtocolFault(Exception):
    """The program broke the protocol; `str(e)` is one sentence saying how."""


@dataclass(frozen=True)
class Reply:
    in_reply_to: int
    type: str  # ok | fail | info
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.type == "ok"


@dataclass(frozen=True)
class Event:
    name: str
    value: Any = None


def encode(msg: dict[str, Any]) -> bytes:
    """One message as one line (compact JSON, no embedded newline)."""
    return (json.dumps(msg, separators=(", ", ": ")) + "\n").encode()


def _short(line: str | bytes, limit: int = 80) -> str:
    text = line.decode(errors="replace") if isinstance(line, bytes) else line
    text = text.rstrip("\n")
    return repr(text if len(text) <= limit else text[:limit] + "…")


def parse_line(line: bytes) -> Reply | Event:
    """A line the program wrote to stdout, as a Reply or an Event; ProtocolFault otherwise."""
    if len(line) > MAX_LINE:
        raise ProtocolFault(f"malformed message from the program: a line of {len(line)} bytes")
    try:
        msg = json.loads(line)
    except ValueError:
        raise ProtocolFault(
            f"malformed message from the program: {_short(line)} is not JSON"
        ) from None
    if not isinstance(msg, dict):
        raise ProtocolFault(
            f"malformed message from the program: {_short(line)} is not a JSON object"
        )
    if "event" in msg:
        name = msg["event"]
        if not isinstance(name, str) or not name:
            raise ProtocolFault(
                f"malformed message from the program: {_short(line)} has an "
                "event that is not a name"
            )
        problem = session_problem(msg.get("value")) if name == "session" else ""
        if problem:
            raise ProtocolFault(f"malformed message from the program: {problem}")
        return Event(name, msg.get("value"))
    rid, type_ = msg.get("in_reply_to"), msg.get("type")
    if not isinstance(rid, int) or isinstance(rid, bool):
        raise ProtocolFault(
            f"malformed message from the program: {_short(line)} has neither "
            "an integer in_reply_to nor an event"
        )
    if type_ not in REPLY_TYPES:
        raise ProtocolFault(
            f"malformed message from the program: {_short(line)} has type "
            f"{type_!r}, not ok, fail or info"
        )
    error = msg.get("error")
    return Reply(rid, type_, msg.get("value"), None if error is None else str(error))


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and x != float("inf")


def session_problem(value: Any) -> str:
    """What is wrong with a session's description (the `init` answer's value, a `session`
    event's): '' when nothing. Its optional `renew_ms` (the longest gap between two renewals
    of the program's lease) must be a number > 0 and no more than its `timeout_ms`."""
    if not isinstance(value, dict) or "renew_ms" not in value:
        return ""
    r, t = value["renew_ms"], value.get("timeout_ms")
    if not _number(r) or r <= 0:
        return f"a session's renew_ms must be a number of ms > 0, not {r!r}"
    if not _number(t) or r > t:
        return f"a session's renew_ms ({r!r}) must be no more than its timeout_ms ({t!r})"
    return ""


def request(rid: int, op: str, **fields: Any) -> dict[str, Any]:
    return {"id": rid, "op": op, **fields}


def reply(rid: int, type_: str, value: Any = None, error: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"in_reply_to": rid, "type": type_, "value": value}
    if error is not None:
        msg["error"] = error
    return msg


def seq_of(node: str | None) -> int | None:
    """The 10-digit sequence suffix of a sequential node's name (None if it has none)."""
    if not isinstance(node, str) or len(node) < 10 or not node[-10:].isdigit():
        return None
    return int(node[-10:])
