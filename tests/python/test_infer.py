"""Inference with NumPy arrays, in process and through heterod: answers,
bit-exact round trips of every element type, the ways to pass inputs, and the
memory the arrays share with the runtime."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import heterod
from conftest import DEMO, DEMO_SHAPES, SERVED, Target


def demo_reference(x: np.ndarray) -> np.ndarray:
    """The demo model's answer computed in process, the reference the daemon must match."""
    with heterod.Core() as core, core.compile_model(DEMO, shapes=DEMO_SHAPES) as compiled:
        return compiled.infer(x)["probabilities"].copy()


def test_demo(target: Target) -> None:
    x = np.random.default_rng(7).random((1, 3, 32, 32), dtype=np.float32)
    with target.open("demo") as compiled:
        assert [p.name for p in compiled.inputs] == ["image"]
        assert compiled.outputs[0].shape == (1, 10)
        assert compiled.device == "CPU" and compiled.submodel_devices == ["CPU"]
        with compiled.create_infer_request() as request:
            probabilities = request.infer({"image": x})["probabilities"]
    assert probabilities.shape == (1, 10) and probabilities.dtype == np.float32
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_array_equal(probabilities, demo_reference(x))


def random_array(port: heterod.Port, rng: np.random.Generator) -> np.ndarray:
    """Random bit patterns of the port's type (NaNs, infinities, subnormals
    and negative zeros included for the float types); bools are 0 or 1."""
    if port.dtype == heterod.DType.BOOL:
        return rng.integers(0, 2, size=port.shape).astype(bool)
    raw = rng.integers(0, 256, size=(*port.shape, port.numpy_dtype.itemsize), dtype=np.uint8)
    return raw.view(port.numpy_dtype).reshape(port.shape)


def test_every_dtype_round_trips_bit_exactly(target: Target) -> None:
    rng = np.random.default_rng(16)
    with target.open("dtypes") as compiled:
        assert {p.dtype for p in compiled.inputs} == set(heterod.DType) - {
            heterod.DType.UNDEFINED, heterod.DType.STRING}
        inputs = {p.name: random_array(p, rng) for p in compiled.inputs}
        outputs = compiled.infer(inputs)
    for port in compiled.inputs:
        y = outputs["y_" + port.name[2:]]
        expected = inputs[port.name].T
        assert y.dtype == port.numpy_dtype and y.shape == expected.shape, port.name
        assert y.tobytes() == np.ascontiguousarray(expected).tobytes(), f"{port.name} bits differ"


def test_input_forms(target: Target) -> None:
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    expected = 2 * x + 1
    with target.open("affine") as compiled, compiled.create_infer_request() as request:
        for inputs in ({"x": x}, {0: x}, [x], x, {"x": x.tolist()}):
            np.testing.assert_array_equal(request.infer(inputs)["y"], expected)
        # Bound once, then run with no inputs: the same array is read again.
        request.set_input("x", x)
        x += 1  # written in place between inferences: no copy was made
        np.testing.assert_array_equal(request.infer()["y"], 2 * x + 1)
        # A non-contiguous view is copied into a contiguous array.
        wide = np.arange(16, dtype=np.float32).reshape(1, 16)
        np.testing.assert_array_equal(request.infer(wide[:, ::2])["y"], 2 * wide[:, ::2] + 1)
        big_endian = x.astype(">f4")
        np.testing.assert_array_equal(request.infer(big_endian)["y"], 2 * x + 1)


def test_input_errors(target: Target) -> None:
    with target.open("affine") as compiled, compiled.create_infer_request() as request:
        with pytest.raises(heterod.HeteroError) as e:
            request.infer({"nope": np.zeros((1, 8), np.float32)})
        assert e.value.status == heterod.Status.NOT_FOUND and "'nope'" in e.value.message
        with pytest.raises(heterod.HeteroError) as e:
            request.infer(np.zeros((1, 8), np.float64))
        assert e.value.status == heterod.Status.INVALID_ARGUMENT and "float64" in e.value.message
        with pytest.raises(heterod.HeteroError) as e:
            request.infer(np.zeros((2, 8), np.float32))
        assert e.value.status == heterod.Status.INVALID_ARGUMENT and "x" in e.value.message
        # A broadcast view of 32 bytes standing for 64 GiB is refused on its
        # shape before anything is copied.
        huge = np.broadcast_to(np.zeros(8, np.float32), (1 << 31, 8))[:, ::1].T
        with pytest.raises(heterod.HeteroError) as e:
            request.infer(huge)
        assert e.value.status == heterod.Status.INVALID_ARGUMENT and "input 'x' takes shape (1, 8)" in e.value.message
        with pytest.raises(heterod.HeteroError) as e, compiled.create_infer_request() as fresh:
            fresh.infer()
        assert "'x'" in e.value.message and "not set" in e.value.message
        with pytest.raises(TypeError, match="complex"):
            request.infer(np.zeros((1, 8), np.complex64))
        with pytest.raises(TypeError, match="2 arrays given for a model of 1 inputs"):
            request.infer([np.zeros((1, 8), np.float32)] * 2)


def test_pooled_infer_takes_every_input_on_every_call(target: Target) -> None:
    """CompiledModel.infer shares pooled requests: nothing a previous call
    bound may answer the next one (ONNX Runtime raises for missing inputs
    too), and the caller's array is not read after its call returns."""
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    with target.open("affine") as compiled:
        np.testing.assert_array_equal(compiled.infer({"x": x})["y"], 2 * x + 1)
        for missing in ({}, None):
            with pytest.raises(ValueError, match="required inputs are missing: 'x'") as e:
                compiled.infer(missing)
            assert isinstance(e.value, heterod.InvalidArgumentError)
        x[:] = 0  # the caller reuses its array: the pool must not have kept it
        with pytest.raises(heterod.InvalidArgumentError):
            compiled.infer()
        np.testing.assert_array_equal(compiled.infer(x)["y"], np.ones((1, 8), np.float32))


def test_pooled_async_infer_takes_every_input(target: Target) -> None:
    import asyncio

    async def run() -> None:
        with target.open("affine") as compiled:
            await compiled.infer_async({"x": np.zeros((1, 8), np.float32)})
            with pytest.raises(heterod.InvalidArgumentError, match="'x'"):
                await compiled.infer_async({})
    asyncio.run(run())


def test_output_names_pick_the_outputs(target: Target) -> None:
    with target.open("passthrough") as compiled:
        x = np.array([1, 2, 3, 4], np.float32)
        assert list(compiled.infer(x)) == ["y", "c"]
        picked = compiled.infer(x, output_names=["c"])
        assert list(picked) == ["c"]
        np.testing.assert_array_equal(picked["c"], [1, 2, 3])
        assert list(compiled.infer(x, output_names=["c", "y"])) == ["c", "y"]
        with pytest.raises(LookupError, match="no output named 'z' \\(outputs: 'y', 'c'\\)"):
            compiled.infer(x, output_names=["z"])
        with pytest.raises(TypeError, match="list of names"):
            compiled.infer(x, output_names="y")


def test_arrays_of_another_dtype_are_refused_with_the_conversion(target: Target) -> None:
    """As in ONNX Runtime: float64 and uint8 arrays for a float32 input are
    refused (no silent copy), and the message says what to write; lists
    take the input's dtype."""
    with target.open("affine") as compiled:
        for dtype in (np.float64, np.uint8):
            with pytest.raises(ValueError, match=r"input 'x' takes float32; the array is "
                               + np.dtype(dtype).name + r" \(convert it with .astype\(numpy.float32\)\)"):
                compiled.infer(np.zeros((1, 8), dtype))
        np.testing.assert_array_equal(compiled.infer({"x": [[0.0] * 8]})["y"], np.ones((1, 8), np.float32))


def test_outputs_are_read_only_views_that_keep_their_memory(target: Target) -> None:
    with target.open("affine") as compiled:
        request = compiled.create_infer_request()
        first = request.infer(np.full((1, 8), 1, np.float32))["y"]
        second = request.infer(np.full((1, 8), 2, np.float32))["y"]
        request.close()
        compiled.close()
    gc.collect()
    # Neither a later inference nor releasing the request changes them.
    np.testing.assert_array_equal(first, np.full((1, 8), 3, np.float32))
    np.testing.assert_array_equal(second, np.full((1, 8), 5, np.float32))
    assert not first.flags.writeable and not first.flags.owndata
    with pytest.raises(ValueError, match="read-only"):
        first[0, 0] = 7
    copy = first.copy()
    copy[0, 0] = 7  # a copy is the caller's


def test_passthrough_and_constant_outputs(target: Target) -> None:
    """An output that is the input's memory (in process) stays valid after the
    caller drops the input; a constant output cannot be written."""
    with target.open("passthrough") as compiled:
        outputs = compiled.infer(np.array([1.5, -0.0, np.inf, 4], np.float32))
    gc.collect()
    assert outputs["y"].tobytes() == np.array([1.5, -0.0, np.inf, 4], np.float32).tobytes()
    np.testing.assert_array_equal(outputs["c"], [1, 2, 3])
    with pytest.raises(ValueError, match="read-only"):
        outputs["c"][0] = 0
    with target.open("passthrough") as compiled:
        np.testing.assert_array_equal(compiled.infer(np.zeros(4, np.float32))["c"], [1, 2, 3])


def test_large_tensors(target: Target) -> None:
    """Tensors of a MiB: through the daemon they travel as memfds both ways."""
    x = np.random.default_rng(3).random((1, 256, 256), dtype=np.float32) / 256
    with target.open("slow") as compiled:
        y = compiled.infer(x)["y"]
    assert y.shape == (1, 256, 256) and np.isfinite(y).all()
    if target.kind == "daemon":
        with heterod.Core() as core, core.compile_model(SERVED["slow"][0]) as local:
            np.testing.assert_array_equal(y, local.infer(x)["y"])


def test_held_outputs_stay_on_every_device(local_core: heterod.Core) -> None:
    """What the output views stand on, for each driver here (PoCL as the
    OpenCL device, HETERO across two): an output held is not written by the
    request's next inferences."""
    devices = [d.name for d in local_core.devices if not d.name.startswith("LEVEL_ZERO")]
    if "OPENCL" in devices:
        devices.append("HETERO:OPENCL,CPU")
    for device in devices:
        with local_core.compile_model(SERVED["affine"][0], device=device) as compiled:
            request = compiled.create_infer_request()
            held = [request.infer(np.full((1, 8), i, np.float32))["y"] for i in range(4)]
        for i, y in enumerate(held):
            np.testing.assert_array_equal(y, np.full((1, 8), 2 * i + 1, np.float32), err_msg=device)
