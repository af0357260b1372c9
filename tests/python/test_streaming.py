"""Streams: frames through one request, with the state a model carries
between frames fed back from its outputs (no copies: an output array is bound
as the next frame's input as it is).

accumulate.onnx stands in for a recurrent model (its state is a running sum).
The streaming LSTM/GRU model of the edge-models issue (int8, LSTM, GRU ops)
is tested here the same way once those ops have landed: hidden and cell
state outputs bound as the next frame's state inputs, answers compared with
ONNX Runtime frame by frame."""

from __future__ import annotations

import asyncio

import numpy as np

from conftest import Target

FRAMES = 50


def frames() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    # Multiples of 1/8 in a small range: every running sum is exact in float32.
    return [(rng.integers(-64, 64, size=(1, 4)) / 8).astype(np.float32) for _ in range(FRAMES)]


def test_stream_with_state(target: Target) -> None:
    with target.open("accumulate") as compiled, compiled.create_infer_request() as request:
        state = np.zeros((1, 4), np.float32)
        expected = np.zeros((1, 4), np.float32)
        for x in frames():
            state = request.infer({"x": x, "state": state})["total"]
            expected = expected + x
            np.testing.assert_array_equal(state, expected)


def test_async_stream_with_state(target: Target) -> None:
    async def stream() -> np.ndarray:
        with target.open("accumulate") as compiled, compiled.create_infer_request() as request:
            state = np.zeros((1, 4), np.float32)
            for x in frames():
                state = (await request.infer_async({"x": x, "state": state}))["total"]
            return state

    np.testing.assert_array_equal(asyncio.run(stream()), np.sum(frames(), axis=0))
