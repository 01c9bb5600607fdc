"""What a client loop records with: the history file's `Recorder`, the op it completes
(`PendingOp`) and the `RecordingContext` a loop sees (its client number, params, clock and stop
signal). Both client modes use them: the recorder beside a program (client/main.py) and the
in-process loop (workloads/context.py adds its own session and recipe). Stdlib only.

Timestamps are `CLOCK_MONOTONIC` nanoseconds since the test's start (`t0_ns`, taken by the runner
on the host). The monotonic clock is shared by every process and container on one kernel, and the
client's libfaketime (if any) is told to leave it alone, so histories from all clients merge on
one real time axis.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zkjepsen.client.loop import client_params
from zkjepsen.history.jsonl import Appender, mend

if TYPE_CHECKING:
    from zkjepsen.client.spec import ClientSpec


# The event a client's recorder ends its file with (`finish`), sealing the records before it
# (their count and digest, history/jsonl.py `Seal`): a file that does not end so was cut short,
# and one whose records do not match it lost, gained or changed some (run/accounting.py).
END = "client-end"


class Recorder:
    """Appends one JSON line per op or event; every line is written with one `write(2)`. A
    client's recorder ends with `finish()`: its `client-end` event seals the records the file
    holds before it (a restarted client's earlier lives included)."""

    def __init__(self, path: str, t0_ns: int, client: int, nclients: int) -> None:
        self.seal = mend(path)  # what an earlier life of this client left (a cut line: gone)
        self._out = Appender(path)
        self._count = threading.Lock()
        self.t0_ns = t0_ns
        self.client = client
        self.nclients = nclients
        self.process = client

    def now(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def write(self, record: dict[str, Any]) -> None:
        with self._count:  # the seal and the file in step: the end says what the file holds
            line = self._out.write(record)
            self.seal.add(json.loads(line))  # as a reader decodes it

    def op(
        self,
        type_: str,
        f: str,
        key: str | None,
        value: Any,
        process: int | None = None,
        **extra: Any,
    ) -> None:
        rec: dict[str, Any] = {
            "time": self.now(),
            "process": self.process if process is None else process,
            "type": type_,
            "f": f,
            "client": self.client,
        }
        if key is not None:
            rec["key"] = key
        if value is not None or type_ in ("ok", "invoke"):
            rec["value"] = value
        rec.update({k: v for k, v in extra.items() if v is not None})
        self.write(rec)

    def retire_process(self) -> None:
        """After an `info` the process may still be doing it; Jepsen gives the client a new id."""
        self.process += self.nclients

    def close(self) -> None:
        self._out.close()

    def finish(self) -> None:
        """The client's end: its `client-end` event, the file's last line (no other thread's
        record can follow it), then close. Only a recorder that ran to its end writes it."""

        def end() -> dict[str, Any]:
            return {
                "time": self.now(),
                "process": self.process,
                "type": "event",
                "f": END,
                "client": self.client,
                "value": self.seal.value(),
            }

        with self._count:
            self._out.close(last=end)


@dataclass
class PendingOp:
    """An invoked operation; exactly one of ok / fail / info completes it."""

    ctx: RecordingContext
    f: str
    key: str | None
    process: int
    done: bool = False

    def ok(self, value: Any = None, **extra: Any) -> None:
        self._complete("ok", value, extra)

    def fail(self, value: Any = None, error: str | None = None, **extra: Any) -> None:
        self._complete("fail", value, {"error": error, **extra})

    def info(self, value: Any = None, error: str | None = None, **extra: Any) -> None:
        self._complete("info", value, {"error": error, **extra})
        self.ctx.recorder.retire_process()

    def _complete(self, type_: str, value: Any, extra: dict[str, Any]) -> None:
        if self.done:
            raise RuntimeError(f"op {self.f} completed twice")
        self.done = True
        self.ctx.recorder.op(type_, self.f, self.key, value, process=self.process, **extra)


@dataclass
class RecordingContext:
    """What a client loop sees: who it is, its parameters, the recorder and the run's end."""

    client: int  # logical client number, 1..N
    nclients: int
    params: dict[str, Any]
    recorder: Recorder
    deadline: float  # time.monotonic() after which no new op is invoked
    rng: random.Random = field(default_factory=random.Random)
    stop_event: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def of_spec(
        cls, spec: ClientSpec, recorder: Recorder, stop: threading.Event, **more: Any
    ) -> Any:
        """The context of the client `spec` describes, recording into `recorder` (its process
        already drawn: the random stream is the run's seed, the client's and the process's)."""
        return cls(
            client=spec.client,
            nclients=spec.nclients,
            params=client_params(spec.workload, spec.params, spec.client),
            recorder=recorder,
            deadline=spec.deadline_monotonic,
            rng=random.Random(f"{spec.seed}:{spec.client}:{recorder.process}"),
            stop_event=stop,
            **more,
        )

    def running(self) -> bool:
        return not self.stop_event.is_set() and time.monotonic() < self.deadline

    def invoke(self, f: str, key: str | None = None, value: Any = None, **extra: Any) -> PendingOp:
        p = self.recorder.process
        self.recorder.op("invoke", f, key, value, process=p, **extra)
        return PendingOp(self, f, key, p)

    def event(self, f: str, value: Any = None, **extra: Any) -> None:
        self.recorder.op("event", f, None, value, **extra)

    def sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when the run is stopped."""
        self.stop_event.wait(max(0.0, seconds))
