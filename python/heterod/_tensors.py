"""NumPy arrays in and out of infer requests, without copies where the C ABI
allows them.

In: an array is lent to the library with hetero_tensor_wrap(): C-contiguous,
aligned, native-endian arrays as they are (other arrays are copied into one
that is). The request keeps the array referenced while it is bound.

Out: hetero_infer_request_get_output() gives a handle sharing the result
memory. The array returned is a read-only view of it (an output may be a
model constant, which must not be written) whose base owns that handle, so the
memory lives as long as the array. The runtime writes each inference's
results into memory no held output shares, so an array stays unchanged by
later inferences. An output that is a graph input passed through (Identity,
Reshape of an input) is the input's memory: the view also keeps the inputs of
its inference referenced.
"""

from __future__ import annotations

import ctypes as C
from typing import Any

import numpy as np

from ._handle import Handle, new_handle
from ._lib import int64_p, lib
from .dtypes import Array, DType
from .errors import Status, check, error


class Tensor(Handle):
    """A C tensor handle (internal: the public API speaks NumPy)."""

    _release = lib.hetero_tensor_release
    _what = "tensor"


def as_input_array(value: Any, name: str, port_dtype: DType, port_shape: tuple[int, ...] | None) -> Array:
    """`value` as an array the library can read in place: the same object
    when it already is one; array-likes (lists, scalars) take the port's
    dtype. An array of another dtype is refused, and so is one whose shape
    the port cannot take, before anything is copied: a broadcast view (np.broadcast_to) of a few bytes
    would otherwise become gigabytes first."""
    if not isinstance(value, np.ndarray):
        value = np.asarray(value, dtype=port_dtype.numpy if port_dtype != DType.UNDEFINED else None)
    array: Array = value
    if port_shape is not None and (array.ndim != len(port_shape) or any(
            want >= 0 and have != want for have, want in zip(array.shape, port_shape))):
        wanted = "(" + ", ".join("?" if d < 0 else str(d) for d in port_shape) + ")"
        raise error(Status.INVALID_ARGUMENT,
                          f"input '{name}' takes shape {wanted}; the array has shape {tuple(array.shape)}")
    have = DType.from_numpy(array.dtype)  # TypeError for a dtype no tensor holds
    if port_dtype not in (DType.UNDEFINED, have) and not (port_dtype == DType.BFLOAT16 and have == DType.UINT16):
        # Refused, not converted, as ONNX Runtime does: a silent float64 ->
        # float32 copy would hide a slow path (and a lossy one the other way).
        raise error(Status.INVALID_ARGUMENT,
                          f"input '{name}' takes {port_dtype.name.lower()}; the array is {array.dtype.name} "
                          f"(convert it with .astype(numpy.{port_dtype.numpy.name}))")
    if array.dtype.byteorder == ">":  # big-endian: the library reads native order
        array = array.astype(array.dtype.newbyteorder("="))
    if not (array.flags.c_contiguous and array.flags.aligned):
        array = np.ascontiguousarray(array)
        if not array.flags.aligned:  # a C-contiguous but misaligned view
            array = array.copy()
    return array


def wrap(array: Array, port_dtype: DType) -> Tensor:
    """A tensor over `array`'s memory (not copied; the caller keeps `array`
    alive while the tensor or a request it is bound to may read it). A uint16
    array bound to a bfloat16 port holds bfloat16 bit patterns."""
    dtype = DType.from_numpy(array.dtype)
    if dtype == DType.UINT16 and port_dtype == DType.BFLOAT16:
        dtype = DType.BFLOAT16
    dims = (C.c_int64 * max(array.ndim, 1))(*array.shape)
    data = C.c_void_p(array.ctypes.data if array.nbytes else 0)
    return Tensor(new_handle(lib.hetero_tensor_wrap, dtype, dims, array.ndim, data, array.nbytes))


class _OutputMemory:
    """The base of an output array: owns the output tensor handle (and the
    inputs of its inference) and describes the memory to NumPy."""

    def __init__(self, tensor: Tensor, inputs: tuple[Array, ...], dtype: DType,
                 shape: tuple[int, ...], data: int) -> None:
        self._tensor = tensor
        self._inputs = inputs
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.numpy.str,
            "data": (data, True),  # read-only
        }


def output_array(tensor: Tensor, inputs: tuple[Array, ...]) -> Array:
    """A read-only array viewing the output tensor `tensor` (which it takes
    over)."""
    c_dtype = C.c_int()
    check(lib.hetero_tensor_get_dtype(tensor._handle, C.byref(c_dtype)))
    dtype = DType(c_dtype.value)
    dims, rank = int64_p(), C.c_size_t()
    check(lib.hetero_tensor_get_shape(tensor._handle, C.byref(dims), C.byref(rank)))
    shape = tuple(dims[i] for i in range(rank.value))
    data = C.c_void_p()
    check(lib.hetero_tensor_get_data(tensor._handle, C.byref(data)))
    if not data.value:  # zero elements: nothing to view
        tensor.close()
        empty = np.empty(shape, dtype.numpy)
        empty.flags.writeable = False
        return empty
    view: Array = np.asarray(_OutputMemory(tensor, inputs, dtype, shape, data.value))
    return view
