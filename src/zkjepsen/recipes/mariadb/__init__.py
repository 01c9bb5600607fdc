"""MariaDB locks, one module each, run by the service driver (workloads/driver/service.py)
with PyMySQL through the client wire protocol; the session they share is
backends/mariadb/session.py."""
