#!/usr/bin/env python3
"""Redis, ONE bug: a blind delete. The release is a plain `DEL key`, not a compare-and-delete:
a holder whose TTL ran out while it was paused deletes the NEXT holder's key on its way out,
and a third client is granted while the second still holds (the mistake Redis's own SET
documentation warns of; Kleppmann 2016 on why a lease needs more than a TTL). The holder's
belief is the TTL counted by its own clock, as in the control.
Exposed by: pause-client on the holder past its TTL, then its release. Shows as lock:belief
between the second and third holders: beyond a lease's nature."""

from zoo_redis import TtlLock, serve


class BlindDelete(TtlLock):
    def release(self) -> None:
        self.stop.set()
        self.valid_until = 0.0
        self.r.delete(self.key)  # BUG: whoever's key it is now


if __name__ == "__main__":
    serve(BlindDelete)
