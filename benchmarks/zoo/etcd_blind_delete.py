#!/usr/bin/env python3
"""etcd, ONE bug: a blind delete. The release deletes the lock key by name, not only if it is
still ours (Debian's etcd 3.4 `concurrency.Mutex.Unlock` deletes by key name; a hand-written
lock that calls `delete(key)` does the same): a holder whose lease ran out while it was paused
deletes the next holder's key on its way out, and a third client is granted beside the second.
Exposed by: pause-client on the holder past its TTL, then its release. Shows as lock:belief
between the second and third holders, beyond a lease's nature; a fence on the resource masks
it (the second holder's token is still the key's create revision: its writes fail)."""

from zoo_etcd import LeaseLock, serve


class BlindDelete(LeaseLock):
    def delete_key(self) -> None:
        self.etcd.delete(self.key)  # BUG: whoever's key it is now


if __name__ == "__main__":
    serve(BlindDelete)
