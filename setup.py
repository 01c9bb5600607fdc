"""The compiled fast paths, built by the package build itself (pip install, python -m build, and
./run's `setup.py build_ext --inplace` for the editable checkout); everything else is in
pyproject.toml.

They are optional: the pure-Python code gives the same answers, slower. Without a C compiler or
Python's headers the build still succeeds, and says so once (not once per extension);
`zkjepsen --version` says which ones the installed package has.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:  # setuptools vendors distutils since 60; the names moved with it
    from setuptools.errors import CCompilerError, ExecError, PlatformError
except ImportError:  # pragma: no cover - setuptools < 59
    from distutils.errors import CCompilerError
    from distutils.errors import DistutilsExecError as ExecError
    from distutils.errors import DistutilsPlatformError as PlatformError

# optional: one that does not build is left out (and an in-place build copies only the others).
EXTENSIONS = [
    # The history reader's line scanner.
    Extension("zkjepsen.history._fastjsonl", ["src/zkjepsen/history/_fastjsonl.c"], optional=True),
    # The Jepsen log reader's usual lines.
    Extension("zkjepsen.history._fastlog", ["src/zkjepsen/history/_fastlog.c"], optional=True),
    # The linearizability checker's sweep, and its pairing and grouping of ops.
    Extension(
        "zkjepsen.checker.linear._fastsweep",
        ["src/zkjepsen/checker/linear/_fastsweep.c"],
        depends=[
            "src/zkjepsen/checker/linear/_fastsweep_parts.h",
            "src/zkjepsen/checker/linear/_fastwgl.h",
        ],  # rebuilt when they change
        optional=True,
    ),
    Extension(
        "zkjepsen.checker.linear._fastgroup",
        ["src/zkjepsen/checker/linear/_fastgroup.c"],
        optional=True,
    ),
]
FAILURES = (CCompilerError, ExecError, PlatformError, OSError)


class OptionalBuildExt(build_ext):
    """build_ext where an extension that does not compile is left out with one message for all
    (setuptools' own handling of optional ones warns once per extension, with a traceback's
    worth of compiler output)."""

    def run(self) -> None:
        self._failed: list[tuple[str, str]] = []
        try:
            super().run()
        except FAILURES as e:  # no compiler at all: nothing could be tried
            self._failed = [(ext.name, str(e)) for ext in self.extensions]
        if self._failed:
            names = ", ".join(name.rsplit(".", 1)[1] for name, _ in self._failed)
            cc = getattr(self.compiler, "compiler_so", None) or ["the C compiler"]
            print(
                f"zkjepsen: {names} not built (`{cc[0]}` could not compile them; a C compiler "
                "and Python's headers are needed, e.g. apt-get install gcc python3-dev, then "
                "reinstall): zkjepsen runs in pure Python, same answers, slower.",
                file=sys.stderr,
            )

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except FAILURES as e:
            self._failed.append((ext.name, str(e)))


setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": OptionalBuildExt})
