# Types of the compiled history scanner (_fastjsonl.c) for the type checker; stream.py's
# Python path reads what it gives up on.
from typing import Any

def scan(
    block: bytes, pending: Any, retired: Any, /
) -> tuple[list[Any], list[Any], Any, Any] | None: ...
