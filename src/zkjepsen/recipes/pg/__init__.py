"""PostgreSQL locks (seed 003's database locks), one module each, run by the psycopg driver
(client/drivers/pg) through the client wire protocol. schema.py holds the tables they share."""
