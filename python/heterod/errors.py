"""Errors: every failing C ABI call becomes a HeteroError carrying the call's
hetero_status (as Status) and the library's message (hetero_last_error)."""

from __future__ import annotations

import enum

from ._lib import lib


class Status(enum.IntEnum):
    """hetero_status (include/hetero/status.h); the values are the ABI's."""

    OK = 0
    INVALID_ARGUMENT = 1
    INVALID_MODEL = 2
    NOT_FOUND = 3
    NOT_SUPPORTED = 4
    OUT_OF_MEMORY = 5
    IO_ERROR = 6
    DRIVER_ERROR = 7
    BLOB_MISMATCH = 8
    BLOB_CORRUPT = 9
    BUSY = 10
    TIMEOUT = 11
    PROTOCOL_ERROR = 12
    CONNECTION_ERROR = 13
    PERMISSION_DENIED = 14
    INTERNAL = 15
    CANCELLED = 16


class HeteroError(Exception):
    """A call into heterod failed.

    `status` is the C ABI's status: a Status, or a plain int for a code added
    by a newer library than this package knows. `message` says what was wrong
    and names the thing at fault (file, node, input, field)."""

    def __init__(self, status: Status | int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        name = self.status.name if isinstance(self.status, Status) else str(int(self.status))
        return f"{self.message} [{name}]"


def to_status(code: int) -> Status | int:
    try:
        return Status(code)
    except ValueError:
        return code


def last_error() -> str:
    """This thread's hetero_last_error()."""
    return (lib.hetero_last_error() or b"").decode(errors="replace")


def check(code: int) -> None:
    """Raises HeteroError for a failing status (hetero_last_error is per
    thread, and read here on the thread that made the call)."""
    if code != Status.OK:
        raise HeteroError(to_status(code), last_error())
