"""Sequences: a stateful model called as a stream.

A model that carries state from call to call (Silero VAD's `state` input and
`stateN` output) keeps that state in the daemon during a sequence (or, in
process, in the compiled model): each call gives the other inputs only, the
state the last call left is fed back in, and the state outputs are not sent
(docs/streams.md):

    with core.open_model("vad") as vad, vad.sequence() as stream:
        for chunk in chunks:
            speech = stream.infer({"input": chunk, "sr": sr})["output"]

The first call starts the sequence with zero state (or with a state input it
gives), reset() makes the next call start again, and leaving the `with`
block (or close()) ends it, giving its state back. A sequence is its
connection's (its compiled model's in process): ids are chosen here, unique
in this process.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ._lib import lib
from .dtypes import Array
from .errors import NotFoundError, check
from .request import InferRequest, Inputs, OutputNames

if TYPE_CHECKING:
    from .model import CompiledModel

_START, _STATE_OUTPUTS = 1, 4  # HETERO_SEQUENCE_START, HETERO_SEQUENCE_STATE_OUTPUTS
_ids = itertools.count(1)


class Sequence:
    """One stream of calls to a stateful model: see the module's
    docstring. Make with CompiledModel.sequence(). One call at a time."""

    def __init__(self, compiled: CompiledModel) -> None:
        self._compiled = compiled
        self._request = InferRequest(compiled)
        self.id = next(_ids)
        self._start = True
        self._open = False
        state = {output for output, _ in compiled.state_pairs}
        self._plain_outputs = [i for i, p in enumerate(compiled.outputs) if p.name not in state]

    def infer(self, inputs: Inputs = None, output_names: OutputNames = None) -> dict[str, Array]:
        """One call: binds `inputs` (inputs bound earlier stay bound, but a
        state input is sent with this call alone, replacing the sequence's
        state) and returns the outputs by name: those of `output_names`
        (state outputs included), or all but the state the sequence keeps."""
        request = self._request
        outputs = request._output_indices(output_names) if output_names is not None else self._plain_outputs
        with request._lock:
            request._bind_all(inputs, every_input=False)
            # Outputs named may be state outputs (an LSTM's h is its result).
            flags = (_START if self._start else 0) | (_STATE_OUTPUTS if output_names is not None else 0)
            check(lib.hetero_infer_request_set_sequence(request._handle, self.id, flags))
            check(lib.hetero_infer_request_infer(request._handle))
            self._start, self._open = False, True
            return request._outputs(outputs)

    def reset(self) -> None:
        """The next call starts the sequence again, from zero state."""
        self._start = True

    def close(self) -> None:
        """Ends the sequence (if a call started it) and lets
        go of its request. Idempotent."""
        if self._open:
            self._open = False
            try:
                check(lib.hetero_compiled_model_end_sequence(self._compiled._handle, self.id))
            except NotFoundError:
                pass  # ended already: idle past the daemon's limit, or its model reloaded
        self._request.close()

    def __enter__(self) -> Sequence:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<heterod.Sequence {self.id} {'open' if self._open else 'not started'}>"
