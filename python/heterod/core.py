"""The core: heterod's runtime in this process (Core()), or a client of a
running heterod (Core.connect()), which has the same devices, drivers and
infer requests and serves its models by name."""

from __future__ import annotations

import ctypes as C
import os
from dataclasses import dataclass
from typing import Literal, Union

from ._handle import (Config, ConfigArrays, Handle, Shapes, ShapeArrays, StrPath, borrowed_string, count,
                      encode_path, new_handle, owned_string, take_string, text)
from ._lib import lib
from .errors import check
from .model import CompiledModel, Model

#: A model given by file (.onnx, or a blob where one is accepted) or by its bytes.
ModelSource = Union[StrPath, bytes, bytearray, memoryview]

DEFAULT_SOCKET = "/run/heterod/heterod.sock"

_PLAN_FORMATS = {"text": 0, "json": 1, "dot": 2}
_STATS_FORMATS = {"text": 0, "json": 1, "prometheus": 2}


@dataclass(frozen=True)
class Device:
    name: str  # the device string: "CPU", "OPENCL.1"
    full_name: str  # FULL_DEVICE_NAME


@dataclass(frozen=True)
class Driver:
    name: str
    version: str
    path: str
    no_device_reason: str  # why it lists no device; "" when it has some


@dataclass(frozen=True)
class DriverFailure:
    path: str  # a driver module that was found but could not be used
    reason: str


@dataclass(frozen=True)
class ServedModel:
    name: str
    device: str
    state: str  # "ready", "loading", "failed"
    error: str  # why a failed model failed


@dataclass(frozen=True)
class QueryNode:
    name: str
    op_type: str
    supported: bool
    reason: str  # why not, when not supported


def _buffer(data: bytes | bytearray | memoryview) -> tuple[C.Array[C.c_char] | bytes, int]:
    """Bytes the C ABI reads (it copies what it keeps): passed in place."""
    view = memoryview(data).cast("B")
    if view.readonly:
        return view.tobytes() if not isinstance(data, bytes) else data, view.nbytes
    return (C.c_char * view.nbytes).from_buffer(view), view.nbytes


class Core(Handle):
    """Drivers, devices and models.

    Core(config) runs heterod's runtime in this process; config holds the
    keys of hetero_core_create(): "driver_path", "cache_dir", "cache_max_mb"
    and "DRIVER.key" settings such as {"CPU.num_threads": 2}. Core.connect()
    is a client of a running heterod."""

    _release = lib.hetero_core_release
    _what = "core"

    def __init__(self, config: Config | None = None) -> None:
        super().__init__(new_handle(lib.hetero_core_create, *ConfigArrays(config).args()))

    @classmethod
    def connect(cls, socket: StrPath | None = None) -> Core:
        """A client of the heterod listening on `socket` (default:
        $HETEROD_SOCKET, else the installed daemon's /run/heterod/heterod.sock)."""
        path = socket if socket is not None else os.environ.get("HETEROD_SOCKET", DEFAULT_SOCKET)
        core = cls.__new__(cls)
        Handle.__init__(core, new_handle(lib.hetero_core_connect, encode_path(path)))
        return core

    # ---- Devices and drivers ----

    @property
    def devices(self) -> list[Device]:
        n = count(lib.hetero_core_get_device_count, self._handle)
        return [Device(borrowed_string(lib.hetero_core_get_device_name, self._handle, i),
                       borrowed_string(lib.hetero_core_get_device_full_name, self._handle, i)) for i in range(n)]

    def metric(self, device: str, name: str) -> str:
        """A metric of a device as text ("OPTIMIZATION_CAPABILITIES"; lists are
        space-separated)."""
        return owned_string(lib.hetero_core_get_metric, self._handle, device.encode(), name.encode())

    @property
    def drivers(self) -> list[Driver]:
        drivers = []
        for i in range(count(lib.hetero_core_get_driver_count, self._handle)):
            name, version, path = C.c_char_p(), C.c_char_p(), C.c_char_p()
            check(lib.hetero_core_get_driver(self._handle, C.byref(name), C.byref(version), C.byref(path), i))
            reason = borrowed_string(lib.hetero_core_get_driver_no_device_reason, self._handle, i)
            drivers.append(Driver(text(name.value), text(version.value), text(path.value), reason))
        return drivers

    @property
    def driver_failures(self) -> list[DriverFailure]:
        failures = []
        for i in range(count(lib.hetero_core_get_driver_failure_count, self._handle)):
            path, reason = C.c_char_p(), C.c_char_p()
            check(lib.hetero_core_get_driver_failure(self._handle, C.byref(path), C.byref(reason), i))
            failures.append(DriverFailure(text(path.value), text(reason.value)))
        return failures

    # ---- Models, in process ----

    def read_model(self, source: ModelSource, shapes: Shapes | None = None) -> Model:
        """Reads an ONNX model from a file or bytes. `shapes` fixes dynamic
        input dims: {"image": (1, 3, 224, 224)}."""
        shape_args = ShapeArrays(shapes).args()
        if isinstance(source, (bytes, bytearray, memoryview)):
            data, size = _buffer(source)
            return Model(new_handle(lib.hetero_model_read_memory, self._handle, data, size, *shape_args))
        return Model(new_handle(lib.hetero_model_read_file, self._handle, encode_path(source), *shape_args,
                                path=source))

    def compile_model(self, model: Model | ModelSource, device: str = "CPU", config: Config | None = None,
                      shapes: Shapes | None = None) -> CompiledModel:
        """Compiles a Model, an ONNX file or ONNX bytes for `device` ("CPU",
        "HETERO:OPENCL,CPU"); `config` holds the driver's keys. From a file
        with a core "cache_dir", a cached blob is imported instead."""
        config_args = ConfigArrays(config).args()
        if isinstance(model, Model):
            if shapes:
                raise TypeError("shapes are fixed when a Model is read: pass them to read_model")
            return CompiledModel(new_handle(lib.hetero_compile, self._handle, model._handle, device.encode(),
                                            *config_args))
        if isinstance(model, (bytes, bytearray, memoryview)):
            with self.read_model(model, shapes) as read:
                return self.compile_model(read, device, config)
        return CompiledModel(new_handle(lib.hetero_compile_file, self._handle, encode_path(model),
                                        *ShapeArrays(shapes).args(), device.encode(), *config_args, path=model))

    def import_model(self, blob: ModelSource, config: Config | None = None) -> CompiledModel:
        """A compiled model from a blob (CompiledModel.export, `hetero
        compile`): its bytes or its file. The blob names its device."""
        config_args = ConfigArrays(config).args()
        if isinstance(blob, (bytes, bytearray, memoryview)):
            data, size = _buffer(blob)
            return CompiledModel(new_handle(lib.hetero_compiled_model_import, self._handle, data, size, *config_args))
        return CompiledModel(new_handle(lib.hetero_compiled_model_import_file, self._handle, encode_path(blob),
                                        *config_args, path=blob))

    def query(self, model: Model, device: str, config: Config | None = None) -> list[QueryNode]:
        """Which nodes of `model` `device` runs, and why not the others."""
        result = new_handle(lib.hetero_query, self._handle, model._handle, device.encode(),
                            *ConfigArrays(config).args())
        try:
            nodes = []
            for i in range(count(lib.hetero_query_result_get_node_count, result)):
                name, op, reason, supported = C.c_char_p(), C.c_char_p(), C.c_char_p(), C.c_int()
                check(lib.hetero_query_result_get_node(result, C.byref(name), C.byref(op), C.byref(supported),
                                                       C.byref(reason), i))
                nodes.append(QueryNode(text(name.value), text(op.value), bool(supported.value), text(reason.value)))
            return nodes
        finally:
            lib.hetero_query_result_release(result)

    def partition(self, model: Model, device: str, format: Literal["text", "json", "dot"] = "text",
                  config: Config | None = None) -> str:
        """The HETERO plan of `model` for the device string `device`, not
        compiled: text for people, JSON, or Graphviz dot."""
        return owned_string(lib.hetero_partition, self._handle, model._handle, device.encode(), _PLAN_FORMATS[format],
                            *ConfigArrays(config).args())

    # ---- A daemon's models (Core.connect) ----

    def open_model(self, name: str) -> CompiledModel:
        """The model the daemon serves as `name`, ready for infer requests."""
        return CompiledModel(new_handle(lib.hetero_compiled_model_open, self._handle, name.encode()))

    def models(self) -> list[ServedModel]:
        """The models the daemon serves, now."""
        listing = new_handle(lib.hetero_core_list_models, self._handle)
        try:
            served = []
            for i in range(count(lib.hetero_model_list_get_count, listing)):
                fields = [C.c_char_p() for _ in range(4)]
                check(lib.hetero_model_list_get(listing, *(C.byref(f) for f in fields), i))
                served.append(ServedModel(*(text(f.value) for f in fields)))
            return served
        finally:
            lib.hetero_model_list_release(listing)

    def load_model(self, name: str, model: ModelSource, device: str = "CPU",
                   config: Config | None = None) -> None:
        """Asks the daemon to serve `model` as `name`: a path the daemon
        reads (under its config's model_dirs), or bytes uploaded. Returns
        when it is ready."""
        config_args = ConfigArrays(config).args()
        if isinstance(model, (bytes, bytearray, memoryview)):
            data, size = _buffer(model)
            check(lib.hetero_core_load_model_memory(self._handle, name.encode(), data, size, device.encode(),
                                                    *config_args))
        else:
            check(lib.hetero_core_load_model(self._handle, name.encode(), encode_path(model), device.encode(),
                                             *config_args))

    def unload_model(self, name: str) -> None:
        check(lib.hetero_core_unload_model(self._handle, name.encode()))

    def stats(self, format: Literal["text", "json", "prometheus"] = "text") -> str:
        """Per served model: requests, errors, busy replies, timeouts,
        latency percentiles, queue depth."""
        return owned_string(lib.hetero_core_get_stats, self._handle, _STATS_FORMATS[format])

    def reload(self) -> None:
        """Makes the daemon re-read its config, as SIGHUP does; returns when done."""
        check(lib.hetero_core_reload(self._handle))

    def __repr__(self) -> str:
        return "<heterod.Core closed>" if self.closed else f"<heterod.Core devices={[d.name for d in self.devices]}>"


def describe_blob(blob: bytes | bytearray | memoryview) -> str:
    """What a compiled blob says of itself: format, versions, device, config,
    source model hash, sections."""
    data, size = _buffer(blob)
    out = C.c_void_p()
    check(lib.hetero_blob_describe(C.byref(out), data, size))
    return take_string(out)
