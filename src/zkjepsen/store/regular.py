"""Opening a file the tool is handed, safely: regular files only.

A run folder, a history or a config comes from the user (or from a copy of someone else's run):
a named pipe where `history.jsonl` should be would block `open()` for ever, a device
(`/dev/zero`) would be read without end, and a symlink loop makes `pathlib` raise its own
RuntimeError. So the path is looked at first (`stat`, following links, which turns a loop into
ELOOP), opened without blocking, and looked at again through the open descriptor (the file may
have been swapped in between): anything but a regular file is one sentence, exit 254.
Only `os` and `stat` are imported: `zkjepsen check` uses this on its fast start-up path.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO, Any

from zkjepsen.errors import BadInput

KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _kind(mode: int) -> str:
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "a symbolic link loop"
    return e.strerror or type(e).__name__


def check_path(path: str | os.PathLike[str], what: str) -> None:
    """Refuse `path` unless it is (a link to) a regular file."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {_why(e)}") from None
    except ValueError as e:  # an embedded NUL byte
        raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(
            f"{what} {os.fspath(path)!r} is {_kind(st.st_mode)}, not a regular file; "
            "give a file written by zkjepsen"
        )


def open_regular(path: str | os.PathLike[str], what: str, text: bool = False) -> IO[Any]:
    """`path` opened for reading (binary, or UTF-8 text), only if it is a regular file."""
    check_path(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {_why(e)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for something else since the stat
            raise BadInput(
                f"{what} {os.fspath(path)!r} is {_kind(st.st_mode)}, not a regular file; "
                "give a file written by zkjepsen"
            )
        os.set_blocking(fd, True)
        if text:
            return open(fd, encoding="utf-8", closefd=True)  # noqa: SIM115 - the caller closes
        return open(fd, "rb", closefd=True)  # noqa: SIM115 - the caller closes
    except BaseException:
        os.close(fd)
        raise


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The whole of a regular file as UTF-8 text (BadInput for anything else)."""
    with open_regular(path, what, text=True) as fh:
        try:
            return fh.read()
        except UnicodeDecodeError as e:
            raise BadInput(f"{what} {os.fspath(path)!r} is not UTF-8 text ({e.reason})") from None
        except OSError as e:
            raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {_why(e)}") from None
