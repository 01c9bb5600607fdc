#!/usr/bin/env python3
"""etcd control: the lock of zoo_etcd.py as written (a lease kept alive every third of its TTL,
the belief ended once a refresh has not succeeded for a TTL, a release that deletes only its
own key), run with `--param resource=fenced`: every write compares the lock key's create
revision with the writer's token in its own transaction. Judged by effect (`--param
property=effect`) no fault should break it."""

from zoo_etcd import LeaseLock, serve

if __name__ == "__main__":
    serve(LeaseLock)
