"""etcd 3.4 (Debian bookworm's `etcd-server`), the fourth lock service: image, cluster, session."""
