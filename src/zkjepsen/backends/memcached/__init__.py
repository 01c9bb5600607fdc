"""memcached as a lock service (service.py, cluster.py, session.py)."""
