"""Element types: hetero_dtype (ONNX TensorProto numbering) and NumPy's."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import numpy.typing as npt

#: The arrays the package takes and returns.
Array = npt.NDArray[Any]


class DType(enum.IntEnum):
    """hetero_dtype; the values are the ABI's (and ONNX's)."""

    UNDEFINED = 0
    FLOAT32 = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8  # models may mention it; tensors cannot hold it
    BOOL = 9
    FLOAT16 = 10
    FLOAT64 = 11
    UINT32 = 12
    UINT64 = 13
    BFLOAT16 = 16

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype of arrays of this type. NumPy has no bfloat16: its
        arrays hold the raw 16-bit patterns as uint16."""
        try:
            return _TO_NUMPY[self]
        except KeyError:
            raise TypeError(f"heterod tensors cannot hold {self.name.lower()} elements") from None

    @staticmethod
    def from_numpy(dtype: npt.DTypeLike) -> DType:
        """The DType of a NumPy dtype; TypeError for one heterod has not."""
        found = _FROM_NUMPY.get(np.dtype(dtype).newbyteorder("="))
        if found is None:
            raise TypeError(f"heterod tensors cannot hold NumPy {np.dtype(dtype).name} elements "
                            f"(they hold {', '.join(sorted(d.name for d in _FROM_NUMPY))})")
        return found


_TO_NUMPY: dict[DType, np.dtype[Any]] = {
    DType.FLOAT32: np.dtype(np.float32),
    DType.UINT8: np.dtype(np.uint8),
    DType.INT8: np.dtype(np.int8),
    DType.UINT16: np.dtype(np.uint16),
    DType.INT16: np.dtype(np.int16),
    DType.INT32: np.dtype(np.int32),
    DType.INT64: np.dtype(np.int64),
    DType.BOOL: np.dtype(np.bool_),
    DType.FLOAT16: np.dtype(np.float16),
    DType.FLOAT64: np.dtype(np.float64),
    DType.UINT32: np.dtype(np.uint32),
    DType.UINT64: np.dtype(np.uint64),
    DType.BFLOAT16: np.dtype(np.uint16),
}
# uint16 arrays are UINT16 unless the port they go to is BFLOAT16 (see
# tensors.wrap_input).
_FROM_NUMPY: dict[np.dtype[Any], DType] = {v: k for k, v in _TO_NUMPY.items() if k != DType.BFLOAT16}
