"""Infer requests: NumPy arrays in, NumPy arrays out, synchronously or awaited
with asyncio.

A request runs one inference at a time. infer() holds the request's lock from
binding the inputs to reading the outputs, so threads sharing a request take
turns; infer_async() holds it until its inference has finished and raises
BUSY instead of waiting when another inference holds it (an event loop must
not block). To run inferences in parallel, use one request each (or
CompiledModel.infer/infer_async, which pool them).

Async inferences use hetero_infer_request_start_async(): its callback runs on
a library worker thread, records the status and message there (the message is
that thread's hetero_last_error) and hands the completion to the awaiting
event loop with call_soon_threadsafe; the outputs are read on the loop's
thread.
"""

from __future__ import annotations

import asyncio
import ctypes as C
import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _tensors
from ._handle import Handle, new_handle
from ._lib import CALLBACK, lib
from .dtypes import Array
from .errors import Status, check, error, last_error, to_status

if TYPE_CHECKING:
    from .model import CompiledModel

#: What infer() takes: arrays by input name or index, arrays in input order,
#: one array for a model of one input, or None for the inputs already bound.
Inputs = Union[None, Array, Sequence[Any], Mapping[Union[str, int], Any]]

#: Which outputs infer() returns: their names, or None for all of them.
OutputNames = Union[None, Sequence[str]]


class InferRequest(Handle):
    """One inference at a time on a compiled model; see the module's
    docstring. Create with CompiledModel.create_infer_request()."""

    _release = lib.hetero_infer_request_release
    _what = "infer request"

    def __init__(self, compiled: CompiledModel) -> None:
        super().__init__(new_handle(lib.hetero_infer_request_create, compiled._handle))
        self._input_ports = compiled.inputs
        self._output_ports = compiled.outputs
        self._input_index = {p.name: i for i, p in enumerate(self._input_ports)}
        # Inputs a daemon's config gives values, which a call may leave out.
        self._given_by_daemon: set[int] = set()
        for i in range(len(self._input_ports)):
            given = C.c_int()
            check(lib.hetero_compiled_model_get_input_given(compiled._handle, C.byref(given), i))
            if given.value:
                self._given_by_daemon.add(i)
        # The arrays lent to the library, by input: they must stay alive while bound.
        self._bound: list[Array | None] = [None] * len(self._input_ports)
        self._lock = threading.Lock()
        self._async_in_flight = False

    @property
    def busy(self) -> bool:
        """Whether an inference holds the request."""
        return self._lock.locked()

    def set_input(self, key: str | int, value: Any) -> None:
        """Binds `value` to the input named or numbered `key`. A C-contiguous
        array of the input's dtype is read in place by every later inference
        until another is bound (write new data into it between inferences to
        stream without copies); other values are converted into one."""
        with self._lock:
            self._bind(key, value)

    def infer(self, inputs: Inputs = None, output_names: OutputNames = None) -> dict[str, Array]:
        """Binds `inputs` (see Inputs; inputs bound earlier stay bound), runs
        one inference and returns the outputs by name, in the model's order
        or that of `output_names`, as read-only arrays sharing the result
        memory (no copy; each keeps its memory alive)."""
        return self._infer(inputs, output_names, every_input=False)

    def _infer(self, inputs: Inputs, output_names: OutputNames, every_input: bool) -> dict[str, Array]:
        outputs = self._output_indices(output_names)
        with self._lock:
            self._bind_all(inputs, every_input)
            check(lib.hetero_infer_request_infer(self._handle))
            return self._outputs(outputs)

    async def infer_async(self, inputs: Inputs = None, output_names: OutputNames = None) -> dict[str, Array]:
        """infer(), awaited: the event loop runs on while the inference does.
        Raises BusyError when another inference holds the request.
        Cancelling the awaiting task cancels the inference (see cancel());
        the request stays busy until it has stopped."""
        return await self._infer_async(inputs, output_names, every_input=False)

    async def _infer_async(self, inputs: Inputs, output_names: OutputNames, every_input: bool) -> dict[str, Array]:
        loop = asyncio.get_running_loop()
        outputs = self._output_indices(output_names)
        if not self._lock.acquire(blocking=False):
            raise error(Status.BUSY, "an inference is running on this infer request; use one request "
                                           "per concurrent inference (CompiledModel.infer_async pools them)")
        try:
            self._bind_all(inputs, every_input)
            pending = _Pending(self, loop, loop.create_future(), outputs)
            token = _in_flight.add(pending)
            self._async_in_flight = True
            code = lib.hetero_infer_request_start_async(self._handle, _ON_DONE, C.c_void_p(token))
            if code != Status.OK:
                _in_flight.pop(token)
                self._async_in_flight = False
                check(code)
        except BaseException:
            self._lock.release()
            raise
        try:
            return await pending.future
        except asyncio.CancelledError:
            lib.hetero_infer_request_cancel(self._handle)
            raise

    def cancel(self) -> None:
        """Asks the inference running on this request (from another thread,
        or infer_async) to stop: it ends at its next node boundary and raises
        a CancelledError, unless it finished first. Does nothing when
        none runs; the request is usable again once it has ended."""
        check(lib.hetero_infer_request_cancel(self._handle))

    def close(self) -> None:
        """Releases the request, after the inference running on it (if any)."""
        if self._async_in_flight:
            # The C release waits for the inference; its completion then
            # finds the request closed and says so to the awaiting task.
            super().close()
            return
        with self._lock:
            super().close()
            self._bound = []

    def _bind_all(self, inputs: Inputs, every_input: bool) -> None:
        """Binds `inputs`; with `every_input`, they must name every input of
        the model (the pooled CompiledModel.infer: nothing is left over from
        another caller's inference)."""
        given: set[int] = set()
        if inputs is None:
            pass
        elif isinstance(inputs, Mapping):
            for key, value in inputs.items():
                given.add(self._bind(key, value))
        elif isinstance(inputs, np.ndarray):
            if len(self._input_ports) != 1:
                raise TypeError(f"one array given for a model of {len(self._input_ports)} inputs "
                                f"({', '.join(p.name for p in self._input_ports)}): pass a dict by name")
            given.add(self._bind(0, inputs))
        elif isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes)):
            if len(inputs) != len(self._input_ports):
                raise TypeError(f"{len(inputs)} arrays given for a model of {len(self._input_ports)} inputs")
            for i, value in enumerate(inputs):
                given.add(self._bind(i, value))
        else:
            raise TypeError(f"inputs must be a dict, a list of arrays or an array, not {type(inputs).__name__}")
        missing = [p.name for i, p in enumerate(self._input_ports)
                   if i not in given and i not in self._given_by_daemon]
        if every_input and missing:
            raise error(Status.INVALID_ARGUMENT,
                              f"required inputs are missing: {', '.join(repr(n) for n in missing)} (every call of "
                              "CompiledModel.infer gives every input; an InferRequest keeps them bound between calls)")

    def _forget_inputs(self) -> None:
        """Lets go of the caller's arrays once a pooled inference is over (its
        outputs keep what they need); the next pooled call binds every input
        again before it runs."""
        self._bound = [None] * len(self._input_ports)

    def _bind(self, key: str | int, value: Any) -> int:
        index = self._index_of(key)
        port = self._input_ports[index]
        array = _tensors.as_input_array(value, port.name, port.dtype, port.shape)
        with _tensors.wrap(array, port.dtype) as tensor:
            check(lib.hetero_infer_request_set_input(self._handle, index, tensor._handle))
        self._bound[index] = array
        return index

    def _index_of(self, key: str | int) -> int:
        if isinstance(key, str):
            if key not in self._input_index:
                names = ", ".join(f"'{p.name}'" for p in self._input_ports) or "none"
                raise error(Status.NOT_FOUND, f"the model has no input named '{key}' (inputs: {names})")
            return self._input_index[key]
        if not 0 <= key < len(self._input_ports):
            raise error(Status.INVALID_ARGUMENT,
                              f"input index {key} is out of range (the model has {len(self._input_ports)} inputs)")
        return key

    def _output_indices(self, names: OutputNames) -> list[int]:
        """The outputs named (all when None), checked before anything runs."""
        if names is None:
            return list(range(len(self._output_ports)))
        if isinstance(names, str):
            raise TypeError("output_names takes a list of names, not one string")
        index = {p.name: i for i, p in enumerate(self._output_ports)}
        unknown = [n for n in names if n not in index]
        if unknown:
            known = ", ".join(f"'{p.name}'" for p in self._output_ports)
            raise error(Status.NOT_FOUND, f"the model has no output named '{unknown[0]}' (outputs: {known})")
        return [index[n] for n in names]

    def _outputs(self, indices: list[int]) -> dict[str, Array]:
        inputs = tuple(a for a in self._bound if a is not None)
        outputs = {}
        for i in indices:
            handle = C.c_void_p()
            check(lib.hetero_infer_request_get_output(self._handle, C.byref(handle), i))
            outputs[self._output_ports[i].name] = _tensors.output_array(_tensors.Tensor(handle), inputs)
        return outputs

    def __repr__(self) -> str:
        state = "closed" if self.closed else "busy" if self.busy else "idle"
        return f"<heterod.InferRequest {state}>"


@dataclass
class _Pending:
    """An async inference between start_async and its completion on the loop."""

    request: InferRequest
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[dict[str, Array]]
    outputs: list[int]
    status: int = 0
    message: str = ""


@dataclass
class _InFlight:
    """Async inferences by the token passed to the C callback as user_data.
    The registry keeps each request (and so its bound arrays) alive until its
    completion, so that the last reference never drops on a library thread
    (releasing a request from its own callback is refused). A completion
    handed to a loop that then closes without running it stays here and its
    request busy: close a loop only after its inferences are awaited."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    entries: dict[int, _Pending] = field(default_factory=dict)
    tokens: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # Completions whose loop had closed: kept until the next start, then dropped on its thread.
    orphans: list[_Pending] = field(default_factory=list)

    def add(self, pending: _Pending) -> int:
        with self.lock:
            self.orphans.clear()
            token: int = next(self.tokens)
            self.entries[token] = pending
            return token

    def get(self, token: int) -> _Pending:
        with self.lock:
            return self.entries[token]

    def pop(self, token: int) -> _Pending:
        with self.lock:
            return self.entries.pop(token)

    def orphan(self, token: int) -> None:
        with self.lock:
            self.orphans.append(self.entries.pop(token))


_in_flight = _InFlight()


def _on_done(user_data: int | None, status: int) -> None:
    """The C completion callback, on a library worker thread."""
    token = user_data or 0
    pending = _in_flight.get(token)
    pending.status = status
    pending.message = last_error() if status != Status.OK else ""
    try:
        pending.loop.call_soon_threadsafe(_finish, token)
    except RuntimeError:  # the loop has closed: nobody awaits the result
        pending.request._async_in_flight = False
        pending.request._lock.release()
        _in_flight.orphan(token)


_ON_DONE = CALLBACK(_on_done)


def _finish(token: int) -> None:
    """An async inference's completion, on its event loop's thread."""
    pending = _in_flight.pop(token)
    request, future = pending.request, pending.future
    try:
        # The C callback has handed over but may not have returned yet, and
        # the request takes no new inference until it has: wait for that tail
        # (microseconds) so that the awaiting code can start the next one.
        if not request.closed:
            lib.hetero_infer_request_wait(request._handle)
        if future.cancelled():
            return
        if pending.status != Status.OK:
            future.set_exception(error(to_status(pending.status), pending.message))
        else:
            future.set_result(request._outputs(pending.outputs))
    except Exception as e:  # noqa: BLE001 - e.g. the request was closed meanwhile
        if not future.done():
            future.set_exception(e)
    finally:
        request._async_in_flight = False
        request._lock.release()
