#!/usr/bin/env python3
"""etcd, ONE bug: a keepalive whose failures are ignored. The lease is refreshed every third of
its TTL, but a refresh that fails (or answers TTL 0: the lease is gone) changes nothing: the
holder believes it holds for as long as it likes (what a `concurrency.Session` user does who
never reads `Session.Done()`; etcd #17470's neighbourhood).
Exposed by: isolate-client (or pause-client) on the holder past its TTL, with holds longer
than the TTL: the service lets the lease go and grants the key again; this holder works on,
past the heal. Shows as lock:belief; through a fence (`resource=fenced`, property=effect) the
fence masks it."""

from zoo_etcd import LeaseLock, serve


class KeepaliveIgnored(LeaseLock):
    def on_refresh(self, asked: float, ok: bool) -> None:
        pass  # BUG: whatever the refresh said

    def holding(self) -> bool:
        return self.held


if __name__ == "__main__":
    serve(KeepaliveIgnored)
