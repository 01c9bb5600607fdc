"""zkjepsen: shows, with evidence, where ZooKeeper locks break atomicity."""

__version__ = "0.1.0"
