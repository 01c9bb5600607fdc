#!/usr/bin/env python3
"""ZooKeeper control: the recipe of zoo_zk.py as written (GUID-named nodes, a re-list after
every wake-up, a release that retries its delete, SUSPENDED ends the belief), run with
`--param resource=fenced`: every write checks our own lock node in the same multi. Judged by
effect (`--param property=effect`) no fault should break it."""

from zoo_zk import QueueLock, serve

if __name__ == "__main__":
    serve(QueueLock)
