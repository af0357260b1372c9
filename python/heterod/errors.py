"""Errors: every failing C ABI call raises a HeteroError carrying the call's
hetero_status (as Status) and the library's message (hetero_last_error).

Each status has its own subclass, which is also the built-in exception a
Python user already catches for that kind of failure: a missing model file is
a FileNotFoundError, a wrong input a ValueError, a passed deadline a
TimeoutError, a refused peer a PermissionError. `except heterod.HeteroError`
still catches them all."""

from __future__ import annotations

import enum
import errno
import os
import re

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
    and names the thing at fault (file, node, input, field). Raised as the
    subclass for its status (see error)."""

    def __init__(self, status: Status | int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        name = self.status.name if isinstance(self.status, Status) else str(int(self.status))
        return f"{self.message} [{name}]"


class InvalidArgumentError(HeteroError, ValueError):
    """A wrong argument: an input's name, dtype or shape, a config key, a
    device string. Missing inputs are one too, as in ONNX Runtime."""


class InvalidModelError(HeteroError, ValueError):
    """A model file that is not valid ONNX, or that heterod cannot read."""


class NotFoundError(HeteroError, LookupError):
    """No such model, input, output, device or driver."""


class ModelFileNotFoundError(NotFoundError, FileNotFoundError):
    """No such file: a model, blob or config path (`.filename` names it)."""


class NotSupportedError(HeteroError, NotImplementedError):
    """A device cannot run what was asked (an op, a dtype), or a daemon
    connection cannot (compiling in process)."""


class OutOfMemoryError(HeteroError, MemoryError):
    """The runtime, a device or a daemon limit refused the memory."""


class HeteroIOError(HeteroError, OSError):
    """Reading or writing a file failed."""


class DriverError(HeteroError, RuntimeError):
    """A device driver failed."""


class BlobError(HeteroError, ValueError):
    """A compiled blob that does not match this build or device
    (BLOB_MISMATCH), or is damaged (BLOB_CORRUPT)."""


class BusyError(HeteroError, RuntimeError):
    """The request, model or daemon is busy: retry, or use another request."""


class DeadlineError(HeteroError, TimeoutError):
    """An inference's deadline passed (a daemon model's timeout_ms)."""


class ProtocolError(HeteroError, RuntimeError):
    """The daemon said something this library cannot read."""


class HeteroConnectionError(HeteroError, ConnectionError):
    """No daemon at the socket, or the connection was lost."""


class HeteroPermissionError(HeteroError, PermissionError):
    """The daemon refused this user, or this user may not change that model."""


class InternalError(HeteroError, RuntimeError):
    """A bug in heterod: please report it with the message."""


class CancelledError(HeteroError, RuntimeError):
    """The inference was cancelled (InferRequest.cancel, or a cancelled
    awaiting task)."""


_CLASSES: dict[int, type[HeteroError]] = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.INVALID_MODEL: InvalidModelError,
    Status.NOT_FOUND: NotFoundError,
    Status.NOT_SUPPORTED: NotSupportedError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.IO_ERROR: HeteroIOError,
    Status.DRIVER_ERROR: DriverError,
    Status.BLOB_MISMATCH: BlobError,
    Status.BLOB_CORRUPT: BlobError,
    Status.BUSY: BusyError,
    Status.TIMEOUT: DeadlineError,
    Status.PROTOCOL_ERROR: ProtocolError,
    Status.CONNECTION_ERROR: HeteroConnectionError,
    Status.PERMISSION_DENIED: HeteroPermissionError,
    Status.INTERNAL: InternalError,
    Status.CANCELLED: CancelledError,
}


def error(status: Status | int, message: str) -> HeteroError:
    """The exception for `status`: its HeteroError subclass (HeteroError
    itself for a code this package does not know)."""
    return _CLASSES.get(int(status), HeteroError)(status, message)


def to_status(code: int) -> Status | int:
    try:
        return Status(code)
    except ValueError:
        return code


# The library's messages name its C functions where they point at another
# call; a Python user is told the method instead.
_PYTHON_NAMES = {
    "hetero_core_load_model": "Core.load_model",
    "hetero_core_load_model_memory": "Core.load_model",
    "hetero_compiled_model_open": "Core.open_model",
    "hetero_core_connect": "Core.connect",
    "hetero_core_create": "Core",
    "hetero_compile": "Core.compile_model",
    "hetero_compile_file": "Core.compile_model",
    "hetero_model_read_file": "Core.read_model",
    "hetero_compiled_model_import": "Core.import_model",
    "hetero_compiled_model_import_file": "Core.import_model",
    "hetero_compiled_model_export": "CompiledModel.export",
    "hetero_infer_request_create": "CompiledModel.create_infer_request",
    "hetero_infer_request_set_input": "InferRequest.set_input",
    "hetero_infer_request_infer": "InferRequest.infer",
    "hetero_infer_request_cancel": "InferRequest.cancel",
}
_C_FUNCTION = re.compile(r"\b(hetero_[a-z_]+)\(\)")


def pythonic(message: str) -> str:
    """`message` with the C functions it names replaced by their methods."""
    return _C_FUNCTION.sub(lambda m: f"{_PYTHON_NAMES[m[1]]}()" if m[1] in _PYTHON_NAMES else m[0], message)


def last_error() -> str:
    """This thread's hetero_last_error()."""
    return pythonic((lib.hetero_last_error() or b"").decode(errors="replace"))


def check(code: int, path: str | bytes | None = None) -> None:
    """Raises the HeteroError for a failing status (hetero_last_error is per
    thread, and read here on the thread that made the call). `path` is the
    file the call was given: a NOT_FOUND when it does not exist is a
    ModelFileNotFoundError naming it."""
    if code == Status.OK:
        return
    status, message = to_status(code), last_error()
    if status == Status.NOT_FOUND and path is not None and not os.path.lexists(path):
        missing = ModelFileNotFoundError(status, message)
        missing.errno, missing.filename = errno.ENOENT, path
        raise missing
    raise error(status, message)
