# Types of the compiled Jepsen log reader (_fastlog.c) for the type checker; formats.py reads
# the lines it stops at.
from typing import Any

def scan(
    text: str, pos: int, n: int, ops: list[Any], lines: list[int], op_type: type, /
) -> tuple[int, int] | None: ...
