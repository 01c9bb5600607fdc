"""Can zkjepsen write there? Asked before anything is created (a store folder, a container, a
cell of a matrix), so that a bad output path is one sentence and exit 254 up front instead of an
internal error after the work is done.

It is asked by trying, not with `os.access`: as root, `os.access` says yes to `/proc`, `/sys`
and read-only mounts, where creating a file then fails. A probe file is created and removed at
once, in the nearest directory that exists; nothing is left behind and nothing else is made.
Only `os` is imported: `zkjepsen check --html` uses this on its fast start-up path.
"""

from __future__ import annotations

import os

from zkjepsen.errors import BadInput


def nearest_existing(path: str | os.PathLike[str]) -> str:
    """`path`, or its closest ancestor that exists (what a `mkdir -p` would start from)."""
    p = os.path.abspath(os.fspath(path))
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    return p


def can_create_in(directory: str) -> bool:
    """True if a new file can be created in `directory` (tried, then removed)."""
    probe = os.path.join(directory, f".zkjepsen-probe-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return True


def check_directory(
    path: str | os.PathLike[str], what: str, fix: str, shown: str | None = None
) -> None:
    """`path` is a directory we can create files in, or can be made one (its nearest existing
    ancestor is such a directory). The sentence names it as `what shown` (`shown`: default
    `path`), and `fix` says what to give instead."""
    probe = nearest_existing(path)
    name = f"{what} {shown or os.fspath(path)}"
    if not os.path.isdir(probe):
        raise BadInput(f"{name} cannot be made: {probe} is a file, not a directory; {fix}")
    if not can_create_in(probe):
        raise BadInput(f"{name} is not writable (nothing can be created in {probe}); {fix}")


def check_output_file(path: str | os.PathLike[str], what: str) -> None:
    """`path` can be written as a file: not a directory, writable if it exists, and its folder
    exists or can be made and lets us create files in it (for writes that go through a
    temporary file beside it, and files written next to it)."""
    text = os.fspath(path)
    fix = f"give {what} a file path you can write to"
    if not text.strip():  # "" is no file: abspath would make it the current directory
        raise BadInput(f"{what} is empty; {fix}")
    if os.path.isdir(text) or text.endswith(os.sep):
        raise BadInput(f"{what} {text} names a directory; {fix}")
    if os.path.lexists(text):
        try:  # opened for appending, without creating or truncating: nothing changes
            os.close(os.open(text, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        except OSError as e:
            raise BadInput(f"{what} {text} cannot be written ({e.strerror}); {fix}") from None
    check_directory(os.path.dirname(os.path.abspath(text)), what, fix, shown=text)
