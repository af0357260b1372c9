"""Streams: frames through one request, with the state a model carries
between frames fed back from its outputs (no copies: an output array is bound
as the next frame's input as it is).

accumulate.onnx has the simplest state there is (a running sum, exact in
float32). lstm_step.onnx is a real recurrent layer: its hidden and cell state
outputs are fed back as the next frame's state inputs, and the stream must
reproduce lstm_sequence.onnx, the same LSTM run over all frames at once.
(The Silero VAD models are streamed against ONNX Runtime through the C ABI,
the CLI and the daemon in tests/models.)"""

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


def lstm_frames() -> np.ndarray:
    return np.random.default_rng(5).uniform(-1, 1, size=(FRAMES, 1, 4)).astype(np.float32)


def test_recurrent_stream_matches_the_whole_sequence(target: Target) -> None:
    xs = lstm_frames()
    with target.open("lstm_sequence") as whole, whole.create_infer_request() as request:
        expected = request.infer({"xs": xs})["ys"][:, 0, 0, :]
    with target.open("lstm_step") as step, step.create_infer_request() as request:
        h = np.zeros((1, 1, 8), np.float32)
        c = np.zeros((1, 1, 8), np.float32)
        for t in range(FRAMES):
            out = request.infer({"x": xs[t : t + 1], "h": h, "c": c})
            h, c = out["h_out"], out["c_out"]
            np.testing.assert_allclose(h[0, 0], expected[t], rtol=1e-4, atol=1e-5, err_msg=f"frame {t}")
