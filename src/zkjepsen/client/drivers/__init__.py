"""Programs that serve the client wire protocol (docs/client-protocol.md). `python/` serves every
Python recipe with kazoo; drivers in other languages live beside it as their own directories."""
