"""The MariaDB backend: a Debian-built image (image.py) and a one-server cluster in Docker
(cluster.py) that implements the `Backend` protocol, so every fault and client works unchanged."""
