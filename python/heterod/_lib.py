"""Finds and loads libhetero.so and declares the C ABI's signatures.

ctypes guesses `int` for every argument and result it is not told about, which
truncates pointers and sizes on 64-bit machines, so each function this package
calls is declared here once, as `include/hetero/hetero.h` writes it.

Which library: $HETERO_LIB when set (a path); else, when this package is
imported from a heterod source tree, that tree's `build/capi/libhetero.so.0`
if it has been built; else the installed `libhetero.so.0` found by the
dynamic linker.
"""

from __future__ import annotations

import ctypes as C
import os
from pathlib import Path

# The oldest library this package runs on: API 0.3 added served models
# (hetero_compiled_model_open) and driver no-device reasons, 0.5
# hetero_infer_request_cancel.
REQUIRED_API = (0, 5)

status_t = C.c_int
dtype_t = C.c_int
size_p = C.POINTER(C.c_size_t)
handle_p = C.POINTER(C.c_void_p)
str_p = C.POINTER(C.c_char_p)
int64_p = C.POINTER(C.c_int64)
CALLBACK = C.CFUNCTYPE(None, C.c_void_p, C.c_int)

_P, _S, _CP = C.c_void_p, C.c_size_t, C.c_char_p
_CONFIG = [str_p, str_p, _S]  # keys, values, count
_SHAPES = [str_p, C.POINTER(int64_p), size_p, _S]  # names, dims, ranks, count

_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "hetero_api_version": (C.c_uint32, []),
    "hetero_library_version": (_CP, []),
    "hetero_status_name": (_CP, [status_t]),
    "hetero_last_error": (_CP, []),
    "hetero_free": (None, [_P]),
    # Core
    "hetero_core_create": (status_t, [handle_p, *_CONFIG]),
    "hetero_core_connect": (status_t, [handle_p, _CP]),
    "hetero_core_release": (status_t, [_P]),
    "hetero_core_get_device_count": (status_t, [_P, size_p]),
    "hetero_core_get_device_name": (status_t, [_P, str_p, _S]),
    "hetero_core_get_device_full_name": (status_t, [_P, str_p, _S]),
    "hetero_core_get_metric": (status_t, [_P, handle_p, _CP, _CP]),
    "hetero_core_get_driver_count": (status_t, [_P, size_p]),
    "hetero_core_get_driver": (status_t, [_P, str_p, str_p, str_p, _S]),
    "hetero_core_get_driver_no_device_reason": (status_t, [_P, str_p, _S]),
    "hetero_core_get_driver_failure_count": (status_t, [_P, size_p]),
    "hetero_core_get_driver_failure": (status_t, [_P, str_p, str_p, _S]),
    # Models
    "hetero_model_read_file": (status_t, [handle_p, _P, _CP, *_SHAPES]),
    "hetero_model_read_memory": (status_t, [handle_p, _P, _P, _S, *_SHAPES]),
    "hetero_model_release": (status_t, [_P]),
    "hetero_query": (status_t, [handle_p, _P, _P, _CP, *_CONFIG]),
    "hetero_query_result_get_node_count": (status_t, [_P, size_p]),
    "hetero_query_result_get_node": (status_t, [_P, str_p, str_p, C.POINTER(C.c_int), str_p, _S]),
    "hetero_query_result_release": (status_t, [_P]),
    "hetero_partition": (status_t, [_P, handle_p, _P, _CP, C.c_int, *_CONFIG]),
    # Compiled models
    "hetero_compile": (status_t, [handle_p, _P, _P, _CP, *_CONFIG]),
    "hetero_compile_file": (status_t, [handle_p, _P, _CP, *_SHAPES, _CP, *_CONFIG]),
    "hetero_compiled_model_import": (status_t, [handle_p, _P, _P, _S, *_CONFIG]),
    "hetero_compiled_model_import_file": (status_t, [handle_p, _P, _CP, *_CONFIG]),
    "hetero_compiled_model_open": (status_t, [handle_p, _P, _CP]),
    "hetero_compiled_model_export": (status_t, [_P, handle_p, size_p]),
    "hetero_compiled_model_export_file": (status_t, [_P, _CP]),
    "hetero_compiled_model_get_device": (status_t, [_P, str_p]),
    "hetero_compiled_model_get_submodel_count": (status_t, [_P, size_p]),
    "hetero_compiled_model_get_submodel_device": (status_t, [_P, str_p, _S]),
    "hetero_compiled_model_release": (status_t, [_P]),
    "hetero_blob_describe": (status_t, [handle_p, _P, _S]),
    # Tensors
    "hetero_tensor_wrap": (status_t, [handle_p, dtype_t, int64_p, _S, _P, _S]),
    "hetero_tensor_get_data": (status_t, [_P, handle_p]),
    "hetero_tensor_get_dtype": (status_t, [_P, C.POINTER(dtype_t)]),
    "hetero_tensor_get_shape": (status_t, [_P, C.POINTER(int64_p), size_p]),
    "hetero_tensor_get_byte_size": (status_t, [_P, size_p]),
    "hetero_tensor_release": (status_t, [_P]),
    # Infer requests
    "hetero_infer_request_create": (status_t, [handle_p, _P]),
    "hetero_infer_request_set_input": (status_t, [_P, _S, _P]),
    "hetero_infer_request_get_output": (status_t, [_P, handle_p, _S]),
    "hetero_infer_request_infer": (status_t, [_P]),
    "hetero_infer_request_start_async": (status_t, [_P, CALLBACK, _P]),
    "hetero_infer_request_wait": (status_t, [_P]),
    "hetero_infer_request_cancel": (status_t, [_P]),
    "hetero_infer_request_release": (status_t, [_P]),
    # Sequences (API 0.7)
    "hetero_infer_request_set_sequence": (status_t, [_P, C.c_uint64, C.c_uint32]),
    "hetero_compiled_model_end_sequence": (status_t, [_P, C.c_uint64]),
    "hetero_compiled_model_get_state_pair_count": (status_t, [_P, size_p]),
    "hetero_compiled_model_get_state_pair": (status_t, [_P, str_p, str_p, _S]),
    "hetero_compiled_model_get_input_given": (status_t, [_P, C.POINTER(C.c_int), _S]),
    # A daemon's models
    "hetero_core_list_models": (status_t, [handle_p, _P]),
    "hetero_model_list_get_count": (status_t, [_P, size_p]),
    "hetero_model_list_get": (status_t, [_P, str_p, str_p, str_p, str_p, _S]),
    "hetero_model_list_release": (status_t, [_P]),
    "hetero_core_load_model": (status_t, [_P, _CP, _CP, _CP, *_CONFIG]),
    "hetero_core_load_model_memory": (status_t, [_P, _CP, _P, _S, _CP, *_CONFIG]),
    "hetero_core_unload_model": (status_t, [_P, _CP]),
    "hetero_core_get_stats": (status_t, [_P, handle_p, C.c_int]),
    "hetero_core_reload": (status_t, [_P]),
}

# The model/compiled-model port getters share one shape per kind.
for _kind in ("model", "compiled_model"):
    for _side in ("input", "output"):
        _prefix = f"hetero_{_kind}_get_{_side}"
        _SIGNATURES[f"{_prefix}_count"] = (status_t, [_P, size_p])
        _SIGNATURES[f"{_prefix}_name"] = (status_t, [_P, str_p, _S])
        _SIGNATURES[f"{_prefix}_dtype"] = (status_t, [_P, C.POINTER(dtype_t), _S])
        _SIGNATURES[f"{_prefix}_shape"] = (status_t, [_P, C.POINTER(int64_p), C.POINTER(C.c_int64), _S])


def _source_tree_library() -> Path | None:
    """build/capi/libhetero.so.0 of the heterod tree this package sits in."""
    package = Path(__file__).resolve().parent  # <tree>/python/heterod
    tree = package.parent.parent
    if not (tree / "include" / "hetero" / "hetero.h").is_file():
        return None
    built = tree / "build" / "capi" / "libhetero.so.0"
    return built if built.is_file() else None


def library_path() -> str:
    """The library this process loads: see the module's docstring."""
    explicit = os.environ.get("HETERO_LIB")
    if explicit:
        return explicit
    in_tree = _source_tree_library()
    return str(in_tree) if in_tree else "libhetero.so.0"


def _load() -> C.CDLL:
    path = library_path()
    try:
        lib = C.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"heterod: cannot load the heterod library {path!r} ({e}); install libhetero0, "
            "or set HETERO_LIB to a built libhetero.so.0") from e
    lib.hetero_api_version.restype = C.c_uint32
    version = lib.hetero_api_version()
    found = (version >> 16, version & 0xFFFF)
    if found[0] != REQUIRED_API[0] or found[1] < REQUIRED_API[1]:
        raise ImportError(f"heterod: {path} has C API {found[0]}.{found[1]}; this package needs "
                          f"{REQUIRED_API[0]}.{REQUIRED_API[1]} or a later {REQUIRED_API[0]}.x")
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


lib = _load()
