"""Models (read, not compiled) and compiled models (ready to run)."""

from __future__ import annotations

import ctypes as C
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._handle import Handle, StrPath, borrowed_string, count, encode_path
from ._lib import int64_p, lib
from .dtypes import Array, DType
from .errors import check
from .request import InferRequest, Inputs, OutputNames

if TYPE_CHECKING:
    from .sequence import Sequence


@dataclass(frozen=True)
class Port:
    """An input or output: name, element type and shape. `shape` is None when
    even the rank is unknown; a dynamic dim is -1."""

    name: str
    dtype: DType
    shape: tuple[int, ...] | None

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        return self.dtype.numpy


def _ports(handle: Any, prefix: str) -> list[Port]:
    """The inputs or outputs of a model or compiled model, read through the
    getters named `prefix`_count/_name/_dtype/_shape."""
    def get(what: str) -> Callable[..., int]:
        fn: Callable[..., int] = getattr(lib, f"{prefix}_{what}")
        return fn

    ports = []
    for i in range(count(get("count"), handle)):
        dtype = C.c_int()
        check(get("dtype")(handle, C.byref(dtype), i))
        dims, rank = int64_p(), C.c_int64()
        check(get("shape")(handle, C.byref(dims), C.byref(rank), i))
        shape = None if rank.value < 0 else tuple(dims[d] for d in range(rank.value))
        ports.append(Port(borrowed_string(get("name"), handle, i), DType(dtype.value), shape))
    return ports


class _Ports:
    """inputs and outputs, read once: they are fixed for the handle's life."""

    _port_prefix: str
    _handle: C.c_void_p

    @property
    def inputs(self) -> list[Port]:
        if "_inputs" not in self.__dict__:
            self._inputs = _ports(self._handle, f"{self._port_prefix}_get_input")
        return list(self._inputs)

    @property
    def outputs(self) -> list[Port]:
        if "_outputs" not in self.__dict__:
            self._outputs = _ports(self._handle, f"{self._port_prefix}_get_output")
        return list(self._outputs)


class Model(_Ports, Handle):
    """An ONNX model read into heterod's IR (Core.read_model), to be queried,
    partitioned or compiled. In process only."""

    _release = lib.hetero_model_release
    _what = "model"
    _port_prefix = "hetero_model"

    def __repr__(self) -> str:
        return f"<heterod.Model inputs={[p.name for p in self.inputs]} outputs={[p.name for p in self.outputs]}>"


class CompiledModel(_Ports, Handle):
    """A model compiled for a device, or a model a daemon serves: make infer
    requests of it, or call infer()/infer_async(), which borrow an idle
    request from a pool (one per concurrent caller)."""

    _release = lib.hetero_compiled_model_release
    _what = "compiled model"
    _port_prefix = "hetero_compiled_model"

    def __init__(self, ptr: C.c_void_p) -> None:
        super().__init__(ptr)
        self._idle: list[InferRequest] = []
        self._idle_lock = threading.Lock()

    @property
    def device(self) -> str:
        """The device string it runs on ("CPU", "HETERO:OPENCL,CPU")."""
        return borrowed_string(lib.hetero_compiled_model_get_device, self._handle)

    @property
    def submodel_devices(self) -> list[str]:
        """The device of each submodel in execution order (one for a plain
        device, one per subgraph for HETERO)."""
        n = count(lib.hetero_compiled_model_get_submodel_count, self._handle)
        return [borrowed_string(lib.hetero_compiled_model_get_submodel_device, self._handle, i) for i in range(n)]

    @property
    def state_pairs(self) -> list[tuple[str, str]]:
        """What a sequence of this model carries, as (output, input) pairs
        (see sequence()): a daemon's model's as it serves it, a model
        compiled in process's found by their names; empty for no state."""
        n = count(lib.hetero_compiled_model_get_state_pair_count, self._handle)
        pairs = []
        for i in range(n):
            output, input_ = C.c_char_p(), C.c_char_p()
            check(lib.hetero_compiled_model_get_state_pair(self._handle, C.byref(output), C.byref(input_), i))
            pairs.append(((output.value or b"").decode(), (input_.value or b"").decode()))
        return pairs

    def export(self, path: StrPath | None = None) -> bytes | None:
        """The compiled blob (Core.import_model reads it back): returned as
        bytes, or written to `path` atomically (then None). In process only."""
        if path is not None:
            check(lib.hetero_compiled_model_export_file(self._handle, encode_path(path)))
            return None
        data, size = C.c_void_p(), C.c_size_t()
        check(lib.hetero_compiled_model_export(self._handle, C.byref(data), C.byref(size)))
        try:
            return C.string_at(data.value, size.value) if data.value else b""
        finally:
            lib.hetero_free(data)

    def create_infer_request(self) -> InferRequest:
        return InferRequest(self)

    def sequence(self) -> Sequence:
        """A stream of calls whose state the daemon keeps (or, in process,
        this compiled model) for a model with state pairs: see
        heterod.sequence."""
        from .sequence import Sequence
        return Sequence(self)

    def infer(self, inputs: Inputs = None, output_names: OutputNames = None) -> dict[str, Array]:
        """One inference on a pooled request; safe from many threads at once
        (each gets its own request). Every call gives every input (a missing
        one is an InvalidArgumentError naming it, as in ONNX Runtime);
        `output_names` picks the outputs returned (default: all)."""
        request = self._borrow()
        try:
            return request._infer(inputs, output_names, every_input=True)
        finally:
            self._give_back(request)

    async def infer_async(self, inputs: Inputs = None, output_names: OutputNames = None) -> dict[str, Array]:
        """infer(), awaited: many may be in flight at once (each on its own
        pooled request)."""
        request = self._borrow()
        try:
            return await request._infer_async(inputs, output_names, every_input=True)
        finally:
            self._give_back(request)

    __call__ = infer

    def _borrow(self) -> InferRequest:
        with self._idle_lock:
            if self._idle:
                return self._idle.pop()
        return self.create_infer_request()

    def _give_back(self, request: InferRequest) -> None:
        if request.busy:  # an awaited inference was cancelled and still runs: let it go
            return
        request._forget_inputs()
        with self._idle_lock:
            self._idle.append(request)

    def close(self) -> None:
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for request in idle:
            request.close()
        super().close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.device
        return f"<heterod.CompiledModel {state}>"
