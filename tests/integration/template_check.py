"""`zkjepsen client check` of one of docs/templates' programs, in a client container as a run
mounts it, against a server a test module started: what each one-server service's module asks
of its template (test_mariadb, test_tooz)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parents[2] / "docs" / "templates"


def check_template(backend: str, hosts: str, program: str) -> Any:
    """The CLI's result (click's Result) of checking `python3 <program>` on `backend` at
    `hosts`; it writes its folder under the current directory (store/client-check/)."""
    from click.testing import CliRunner

    from zkjepsen.cli.app import cli

    args = ["client", "check", "--backend", backend, "--hosts", hosts, "--in-image"]
    return CliRunner().invoke(cli, [*args, f"python3 {program}", "--client-dir", str(TEMPLATES)])
