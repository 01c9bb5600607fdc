#!/usr/bin/env python3
"""BUG (herd + assume): every waiter watches the lowest node (the holder's), not its own
predecessor, and when that node goes it takes the lock without listing the children again.
With two waiters or more, all of them wake at once and each believes it holds."""

import threading

from zk_base import run
from zk_seqlock import SeqLock


class WatchHeadLock(SeqLock):
    woken = False

    def wait_for(self, children, me, timeout_s):
        gone = threading.Event()
        if self.zk.exists(f"{self.path}/{children[0]}", watch=lambda _e: gone.set()):
            self.woken = gone.wait(timeout_s)
        else:
            self.woken = True  # it went before the watch was set: it is mine

    def granted(self, children, me):
        return children[0] == me or self.woken  # the bug: the head went, so it is mine

    def release(self):
        self.woken = False
        super().release()


if __name__ == "__main__":
    run(WatchHeadLock)
