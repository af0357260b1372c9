"""What every wrapper of a C handle shares: ownership, close() and the
context-manager protocol, and the argument arrays the C ABI takes."""

from __future__ import annotations

import ctypes as C
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, Union

from ._lib import int64_p, lib
from .errors import check

StrPath = Union[str, "os.PathLike[str]"]
Config = Mapping[str, Any]
Shapes = Mapping[str, Sequence[int]]
_Self = TypeVar("_Self", bound="Handle")


class Handle:
    """Owns one C handle and releases it once: on close(), on leaving a `with`
    block, or when garbage-collected. The C ABI lets handles be released in
    any order (each keeps what it needs alive), so wrappers need not keep
    their parents."""

    _release: Callable[[C.c_void_p], int]
    _what = "handle"

    def __init__(self, ptr: C.c_void_p) -> None:
        self._ptr: C.c_void_p | None = ptr

    @property
    def _handle(self) -> C.c_void_p:
        """The C handle, to pass to the library."""
        if self._ptr is None:
            raise ValueError(f"the {self._what} is closed")
        return self._ptr

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def close(self) -> None:
        """Releases the C handle (idempotent)."""
        ptr, self._ptr = self._ptr, None
        if ptr:
            check(type(self)._release(ptr))

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to from a finalizer
            pass


def new_handle(create: Callable[..., int], *args: Any, path: StrPath | None = None) -> C.c_void_p:
    """Calls a creating function (its out-param first) and returns the
    handle. `path` is the file it reads, for the error when it is missing."""
    out = C.c_void_p()
    check(create(C.byref(out), *args), path=os.fspath(path) if path is not None else None)
    return out


def text(value: bytes | None) -> str:
    return (value or b"").decode(errors="replace")


def borrowed_string(getter: Callable[..., int], *args: Any) -> str:
    """A string a getter lends (out-param second): copied at once."""
    out = C.c_char_p()
    check(getter(args[0], C.byref(out), *args[1:]))
    return text(out.value)


def owned_string(getter: Callable[..., int], *args: Any) -> str:
    """A string the library allocates for us (out-param second; freed with
    hetero_free)."""
    out = C.c_void_p()
    check(getter(args[0], C.byref(out), *args[1:]))
    return take_string(out)


def take_string(out: C.c_void_p) -> str:
    """The text at `out`, which is then freed with hetero_free."""
    try:
        return text(C.string_at(out.value)) if out.value else ""
    finally:
        lib.hetero_free(out)


def count(getter: Callable[..., int], handle: Any) -> int:
    out = C.c_size_t()
    check(getter(handle, C.byref(out)))
    return out.value


def encode_path(path: StrPath) -> bytes:
    return os.fsencode(path)


class ConfigArrays:
    """Config as the C ABI takes it: parallel arrays of keys and values.
    Values may be strings or anything str() spells as the driver expects
    (numbers, True/False as "1"/"0")."""

    def __init__(self, config: Config | None) -> None:
        items = list((config or {}).items())
        self.count = C.c_size_t(len(items))
        self.keys = (C.c_char_p * len(items))(*(str(k).encode() for k, _ in items)) if items else None
        self.values = (C.c_char_p * len(items))(*(_config_value(v) for _, v in items)) if items else None

    def args(self) -> tuple[Any, Any, C.c_size_t]:
        return self.keys, self.values, self.count


def _config_value(value: Any) -> bytes:
    if isinstance(value, bool):
        return b"1" if value else b"0"
    return str(value).encode()


class ShapeArrays:
    """Input shapes as the C ABI takes them (names, dims, ranks)."""

    def __init__(self, shapes: Shapes | None) -> None:
        items = list((shapes or {}).items())
        n = len(items)
        self.count = C.c_size_t(n)
        if not n:
            self.names = self.dims = self.ranks = None
            return
        self._dims = [(C.c_int64 * len(dims))(*(int(d) for d in dims)) for _, dims in items]
        self.names = (C.c_char_p * n)(*(str(name).encode() for name, _ in items))
        self.dims = (int64_p * n)(*(C.cast(d, int64_p) for d in self._dims))
        self.ranks = (C.c_size_t * n)(*(len(dims) for _, dims in items))

    def args(self) -> tuple[Any, Any, Any, C.c_size_t]:
        return self.names, self.dims, self.ranks, self.count
