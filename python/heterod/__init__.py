"""heterod from Python: its runtime in process, or a client of the daemon.

    import heterod, numpy as np
    with heterod.Core.connect() as core, core.open_model("demo") as model:
        probabilities = model.infer({"image": np.zeros((1, 3, 32, 32), np.float32)})["probabilities"]

A pure-Python binding of the C ABI (libhetero.so.0, include/hetero/hetero.h)
through ctypes: see heterod._lib for which library it loads.
"""

from ._lib import lib, library_path
from .core import (Core, Device, Driver, DriverFailure, ModelSource, QueryNode, ServedModel,
                   describe_blob)
from .dtypes import DType
from .errors import (BlobError, BusyError, CancelledError, DeadlineError, DriverError, HeteroConnectionError,
                     HeteroError, HeteroIOError, HeteroPermissionError, InternalError, InvalidArgumentError,
                     InvalidModelError, ModelFileNotFoundError, NotFoundError, NotSupportedError, OutOfMemoryError,
                     ProtocolError, Status)
from .model import CompiledModel, Model, Port
from .request import InferRequest, Inputs, OutputNames
from .sequence import Sequence

__version__ = "0.1.0"


def api_version() -> tuple[int, int]:
    """The C API version of the loaded library, (major, minor)."""
    v: int = lib.hetero_api_version()
    return v >> 16, v & 0xFFFF


def library_version() -> str:
    """The release of the loaded library ("0.1.0")."""
    version: bytes = lib.hetero_library_version()
    return version.decode()


__all__ = [
    "BlobError", "BusyError", "CancelledError", "CompiledModel", "Core", "DType", "DeadlineError", "Device",
    "Driver", "DriverError", "DriverFailure", "HeteroConnectionError", "HeteroError", "HeteroIOError",
    "HeteroPermissionError", "InferRequest", "Inputs", "InternalError", "InvalidArgumentError", "InvalidModelError",
    "Model", "ModelFileNotFoundError", "ModelSource", "NotFoundError", "NotSupportedError", "OutOfMemoryError",
    "OutputNames", "Port", "ProtocolError", "QueryNode", "Sequence", "ServedModel", "Status", "api_version",
    "describe_blob", "library_path", "library_version",
]
