"""One opener (issue 48): every file a command is handed or reads back goes through
store/regular.py (regular files only, bounded in size, JSON and TOML nested at most 64 levels).

Checked on the source with `ast`: in the rooms where commands read what they are given (cli,
report, run, history, store), a read that does not go through the opener (`open()` for reading,
`Path.read_text`/`read_bytes`/`open`, `json.load(s)`, `tomllib.load(s)`, `orjson.loads`) fails
here unless it is listed in ALLOWED with why it is not a file the user hands over. A write (`open`
with a mode that writes) is not a read. The opener's own behaviour on each kind of file, size and
nesting is test_opener_properties.py's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import zkjepsen

ROOT = Path(zkjepsen.__file__).resolve().parent
ROOMS = ("cli", "report", "run", "history", "store")
OPENER = ("zkjepsen.store.regular", "zkjepsen.store.config")  # the opener, and its TOML

# (module, the read as written) -> why it may read without the opener. A file read is named by
# its call up to its first argument (`open('/proc/self/statm')`); a JSON or TOML decoder by its
# name (`json.loads`), called or handed on. A new read of a file handed to a command belongs in
# store/regular.py.
ALLOWED: dict[tuple[str, str], str] = {
    ("zkjepsen.cli.check", "open('/proc/self/statm')"): "the kernel's own file: our memory",
    ("zkjepsen.history", "json.loads"): "the message of a history line the scanner refused "
    "(the line's nesting was checked before)",
    ("zkjepsen.history.formats", "json.loads"): "one EDN string token: a JSON string, never nested",
    ("zkjepsen.history.jsonl", "json.loads"): "a line of a client's file, its nesting checked "
    "before",
    ("zkjepsen.history.stream", "json.loads"): "the lines of a block whose nesting was checked "
    "first (refuse_deep_lines); json where a number may pass 64 bits",
    ("zkjepsen.history.stream", "orjson.loads"): "the same, where no number passes 64 bits",
    ("zkjepsen.run.dask_builds", "f.read_bytes()"): "zkjepsen's own build context, hashed to "
    "name its image",
}
WRITE = set("wax+")  # an open mode with one of these writes
DECODERS = ("json.load", "json.loads", "tomllib.load", "tomllib.loads", "orjson.loads")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _writes(call: ast.Call, at: int) -> bool:
    """`open(path, "w")`, `path.open("a")`, `os.open(path, os.O_WRONLY | ...)`: a write (`at`:
    where the mode is among the arguments)."""
    given = call.args[at : at + 1] + [k.value for k in call.keywords if k.arg in ("mode", "flags")]
    text = " ".join(ast.unparse(a) for a in given)
    return any(
        isinstance(a, ast.Constant) and isinstance(a.value, str) and bool(set(a.value) & WRITE)
        for a in given
    ) or any(flag in text for flag in ("O_WRONLY", "O_RDWR", "O_CREAT"))


def _file_read(node: ast.Call) -> bool:
    f = node.func
    if isinstance(f, ast.Name) and f.id == "open":
        return not _writes(node, 1)
    if isinstance(f, ast.Attribute) and f.attr in ("read_text", "read_bytes"):
        return True
    if isinstance(f, ast.Attribute) and f.attr == "open":
        if ast.unparse(f) == "tarfile.open":
            return False
        return not _writes(node, 1 if ast.unparse(f.value) == "os" else 0)
    return False


def reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, the read as written) of every read that bypasses the opener: a file read (the
    call up to its first argument) or a decoder's name (`orjson`'s as imported from it)."""
    found = []
    orjson_names = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "orjson"
        for a in n.names
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _file_read(node):
            text = ast.unparse(node)
            first = ast.unparse(node.args[0]) if node.args else ""
            found.append((node.lineno, text.split("(", 1)[0] + f"({first})"))
        elif isinstance(node, ast.Attribute) and ast.unparse(node) in DECODERS:
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Name) and node.id in orjson_names and node.id == "loads":
            found.append((node.lineno, "orjson.loads"))
    return found


def bypasses() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        m = module_name(path)
        room = m.split(".")[1] if "." in m else ""
        if room not in ROOMS or m in OPENER:
            continue
        for line, read in reads(ast.parse(path.read_text(), str(path))):
            if (m, read) not in ALLOWED:
                out.setdefault(m, []).append(f"line {line}: {read}")
    return out


def test_every_read_in_the_commands_rooms_goes_through_the_opener():
    found = bypasses()
    assert not found, (
        "reads that bypass store/regular.py (route them through it, or list them in ALLOWED "
        f"with why): {found}"
    )


def test_every_allowed_read_still_exists():
    """An entry whose read is gone is dead weight that could hide a new one of the same text."""
    seen = set()
    for path in sorted(ROOT.rglob("*.py")):
        m = module_name(path)
        seen |= {(m, call) for _, call in reads(ast.parse(path.read_text(), str(path)))}
    assert set(ALLOWED) <= seen, sorted(set(ALLOWED) - seen)


def test_the_scan_sees_a_read_and_not_a_write():
    tree = ast.parse(
        "import json\n"
        "from orjson import loads\n"
        "def f(p):\n"
        "    a = open(p)\n"
        "    b = open(p, 'w')\n"
        "    c = p.read_text()\n"
        "    d = json.loads(c)\n"
        "    e = p.open('a')\n"
        "    g = p.open()\n"
        "    h = json.load if a else loads\n"
    )
    assert sorted(reads(tree)) == [
        (4, "open(p)"),
        (6, "p.read_text()"),
        (7, "json.loads"),
        (9, "p.open()"),
        (10, "json.load"),
        (10, "orjson.loads"),
    ]
