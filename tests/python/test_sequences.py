"""Sequences from Python (heterod.sequence): the daemon, or in process the
compiled model, keeps a stateful model's state between calls, so the caller
sends the frames alone.

lstm_step.onnx's (h, c) -> (h_out, c_out) are found as its state pairs by
their names; a sequence of it must reproduce lstm_sequence.onnx, the same
LSTM over all frames at once, as the stream that feeds the state back itself
does (test_streaming.py). (Silero VAD as a sequence is checked against ONNX
Runtime in tests/models/check_streaming.js.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

import heterod
from test_streaming import FRAMES, lstm_frames


@pytest.fixture(scope="module")
def expected(remote_core: heterod.Core) -> np.ndarray:
    with remote_core.open_model("lstm_sequence") as whole:
        return whole.infer({"xs": lstm_frames()})["ys"][:, 0, 0, :]


@pytest.fixture(params=["daemon", "in process"])
def lstm_step(request: pytest.FixtureRequest, remote_core: heterod.Core,
              local_core: heterod.Core) -> Iterator[heterod.CompiledModel]:
    """lstm_step as the daemon serves it, and compiled in process."""
    from conftest import SERVED

    if request.param == "daemon":
        with remote_core.open_model("lstm_step") as step:
            yield step
    else:
        with local_core.compile_model(SERVED["lstm_step"][0]) as step:
            yield step


def test_a_sequence_carries_the_state(lstm_step: heterod.CompiledModel, expected: np.ndarray) -> None:
    xs = lstm_frames()
    step = lstm_step
    with step.sequence() as stream:
        assert step.state_pairs == [("h_out", "h"), ("c_out", "c")]
        for t in range(FRAMES):
            # h_out is the LSTM's state and its result: asked for by name.
            h = stream.infer({"x": xs[t : t + 1]}, output_names=["h_out"])["h_out"]
            np.testing.assert_allclose(h[0, 0], expected[t], rtol=1e-4, atol=1e-5, err_msg=f"frame {t}")
        # Not asked for, the state outputs stay with the sequence.
        assert stream.infer({"x": xs[:1]}) == {}
        # reset(): the next call starts from zero again.
        stream.reset()
        first = stream.infer({"x": xs[:1]}, output_names=["h_out"])["h_out"]
        np.testing.assert_allclose(first[0, 0], expected[0], rtol=1e-4, atol=1e-5)


def test_a_given_state_starts_the_sequence_from_it(lstm_step: heterod.CompiledModel, expected: np.ndarray) -> None:
    xs = lstm_frames()
    step = lstm_step
    # The state after frame 9, as the stream that carries it itself has it.
    with step.create_infer_request() as request:
        h = c = np.zeros((1, 1, 8), np.float32)
        for t in range(10):
            out = request.infer({"x": xs[t : t + 1], "h": h, "c": c})
            h, c = out["h_out"].copy(), out["c_out"].copy()
    with step.sequence() as stream:
        out = stream.infer({"x": xs[10:11], "h": h, "c": c}, output_names=["h_out"])
        np.testing.assert_allclose(out["h_out"][0, 0], expected[10], rtol=1e-4, atol=1e-5)
        # Sent once: the next call goes on from the sequence's state.
        out = stream.infer({"x": xs[11:12]}, output_names=["h_out"])
        np.testing.assert_allclose(out["h_out"][0, 0], expected[11], rtol=1e-4, atol=1e-5)


def test_sixty_four_sequences_from_eight_clients(daemon, expected: np.ndarray) -> None:
    xs = lstm_frames()
    errors: list[str] = []

    def client(c: int) -> None:
        try:
            with heterod.Core.connect(daemon.socket) as core, core.open_model("lstm_step") as step:
                streams = [step.sequence() for _ in range(8)]
                # Each sequence starts at its own frame and interleaves with the others.
                for t in range(FRAMES):
                    for s, stream in enumerate(streams):
                        if t < (c + s) % 5:
                            continue
                        k = t - (c + s) % 5
                        h = stream.infer({"x": xs[k : k + 1]}, output_names=["h_out"])["h_out"][0, 0]
                        np.testing.assert_allclose(h, expected[k], rtol=1e-4, atol=1e-5)
                for stream in streams:
                    stream.close()
        except Exception as e:  # noqa: BLE001 - reported by the test thread
            errors.append(f"client {c}: {e}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_model_without_state_has_no_sequence(remote_core: heterod.Core) -> None:
    with remote_core.open_model("affine") as affine, affine.sequence() as stream:
        with pytest.raises(heterod.InvalidArgumentError, match="keeps no state"):
            stream.infer({"x": np.zeros((1, 8), np.float32)})


def test_in_process_a_sequence_is_the_compiled_models(local_core: heterod.Core) -> None:
    from conftest import SERVED

    with local_core.compile_model(SERVED["lstm_step"][0]) as step:
        first, second = step.sequence(), step.sequence()
        xs = lstm_frames()
        # Two sequences of one model, each with its own state.
        a = first.infer({"x": xs[:1]}, output_names=["h_out"])["h_out"].copy()
        first.infer({"x": xs[1:2]})
        b = second.infer({"x": xs[:1]}, output_names=["h_out"])["h_out"]
        np.testing.assert_array_equal(a, b)
        first.close()
        # Ended: a call that does not start it again finds none.
        with pytest.raises(heterod.NotFoundError, match="is not open"):
            step_call(step, first.id, xs[:1])
        second.close()
    with local_core.compile_model(SERVED["affine"][0]) as affine, affine.sequence() as stream:
        assert affine.state_pairs == []
        with pytest.raises(heterod.InvalidArgumentError, match="no state pairs"):
            stream.infer({"x": np.zeros((1, 8), np.float32)})


def step_call(step: heterod.CompiledModel, sequence_id: int, x: np.ndarray) -> None:
    """One call of sequence `sequence_id` that does not start it."""
    from heterod._lib import lib
    from heterod.errors import check

    with step.create_infer_request() as request:
        request._bind_all({"x": x}, every_input=False)
        check(lib.hetero_infer_request_set_sequence(request._handle, sequence_id, 0))
        check(lib.hetero_infer_request_infer(request._handle))


def test_inputs_the_daemon_gives_may_be_left_out(tmp_path) -> None:
    """`defaults:` give spin.onnx's iteration count m (it negates x m times):
    a call gives x alone, through the pooled infer too."""
    from conftest import DAEMON_MODELS
    from heterod_daemon import running_daemon

    spin = DAEMON_MODELS / "spin.onnx"
    x = np.array([[1, -2, 3, -4]], np.float32)
    with running_daemon(tmp_path, {"odd": (spin, None)}, extra={"odd": "defaults: {m: 3}"}) as d, \
            heterod.Core.connect(d.socket) as core, core.open_model("odd") as odd:
        np.testing.assert_array_equal(odd.infer({"x": x})["y"], -x)
        with pytest.raises(heterod.InvalidArgumentError, match="required inputs are missing: 'x'"):
            odd.infer({})
