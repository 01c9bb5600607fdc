"""A `TestSpec` read from a table (a stored `test.json`, a TOML config, the command line's
settings, the pytest plugin's), its service's settings read by that service.

The spec's type and its own fields' checks live on the ground floor (`zkjepsen/spec.py`), which
knows no service; reading a service's table needs the registry of services (which service a
table or a flag belongs to) and of recipes (which service the run's servers are, so a flag
several services declare, `--fsync`, is read by the run's service alone). Both are here.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from zkjepsen.backends.registry import backend_info, read_service, settings_from_table
from zkjepsen.errors import BadInput
from zkjepsen.recipes import resolve_backend
from zkjepsen.spec import FAULT_TRIGGERS, IMAGE_REF, TestSpec

__all__ = ["FAULT_TRIGGERS", "IMAGE_REF", "TestSpec", "read_spec"]


def read_spec(d: Any) -> TestSpec:
    """A TestSpec from a table: its service's settings (test.json's `service` table, a
    config's `[etcd]`, the flat keys older runs stored) read by the service its servers are;
    an unknown setting refused."""
    if not isinstance(d, dict):
        raise BadInput(f"a test spec must be a table of settings, not {type(d).__name__}")
    d = read_service(d, _family(d))
    known = {f.name for f in fields(TestSpec)}
    unknown = set(d) - known
    if unknown:
        raise BadInput(
            f"unknown test setting(s) {', '.join(sorted(map(str, unknown)))}; "
            f"valid ones: {', '.join(sorted(known))}"
        )
    table = d.get("service")
    if isinstance(table, dict):
        d["service"] = settings_from_table(table, "service")
    return TestSpec(**d)


def _family(d: dict[str, Any]) -> str | None:
    """The service of the spec's servers, as its recipe and backend say; None when they do not
    name one yet (an unknown name is refused by run/resolve.py, which names it)."""
    recipe, backend = d.get("recipe"), d.get("backend")
    if recipe is None:
        recipe = "exec" if d.get("client_cmd") is not None else "kazoo"
    if not isinstance(recipe, str) or not (backend is None or isinstance(backend, str)):
        return None
    try:
        return backend_info(resolve_backend(recipe, backend)).family
    except BadInput:
        return None
