"""Errors that the CLI turns into one clear sentence and a distinct exit status.

Exit statuses follow Jepsen's CLI: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or input,
255 internal error (including "the Docker engine is not usable").
"""

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_INTERNAL = 255


class ZkJepsenError(Exception):
    """An error with a one-sentence message meant for the user (no traceback)."""

    exit_code = EXIT_INTERNAL


class BadInput(ZkJepsenError):
    """The user gave us something wrong: an option, a file, a history line."""

    exit_code = EXIT_BAD_INPUT


class EnvironmentProblem(ZkJepsenError):
    """The machine cannot do what was asked: no Docker engine, no permission, a subnet clash."""

    exit_code = EXIT_INTERNAL
