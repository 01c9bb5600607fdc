#!/usr/bin/env python3
"""Redis control: the lock of zoo_redis.py as written (SET NX PX with its fencing token from
the same script, a compare-and-delete release, the belief bounded by the TTL counted from
before the ask), run with `--param resource=fenced`: the resource refuses a token below the
highest it has seen. Judged by effect (`--param property=effect`), pauses and cuts cannot
break it; a killed master can (the fence counter restarts with an empty Redis)."""

from zoo_redis import TtlLock, serve

if __name__ == "__main__":
    serve(TtlLock)
