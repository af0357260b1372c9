"""Cores in process and through heterod: versions, devices, drivers, metrics,
models read and compiled, blobs, and the errors a user meets."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import heterod
from conftest import DEMO, DEMO_SHAPES, MODELS, Target


def test_versions() -> None:
    major, minor = heterod.api_version()
    assert (major, minor) >= (0, 3)
    assert heterod.library_version() == heterod.__version__
    assert os.path.samefile(heterod.library_path(), os.environ["HETERO_LIB"])


def test_status_enum_matches_the_library() -> None:
    """heterod.Status spells every code as the C library does."""
    lib = ctypes.CDLL(os.environ["HETERO_LIB"])
    lib.hetero_status_name.restype = ctypes.c_char_p
    for status in heterod.Status:
        assert lib.hetero_status_name(int(status)).decode() == f"HETERO_{status.name}"


def test_devices_drivers_metrics(target: Target) -> None:
    core = target.core
    names = [d.name for d in core.devices]
    assert "CPU" in names
    cpu = core.devices[names.index("CPU")]
    assert cpu.full_name
    drivers = {d.name: d for d in core.drivers}
    assert drivers["CPU"].version.startswith(heterod.__version__)
    assert drivers["CPU"].no_device_reason == ""
    assert drivers["CPU"].path.endswith(".so")
    if "LEVEL_ZERO" in drivers and not any(n.startswith("LEVEL_ZERO") for n in names):
        assert "Level Zero" in drivers["LEVEL_ZERO"].no_device_reason
    assert core.driver_failures == []
    assert "FP32" in core.metric("CPU", "OPTIMIZATION_CAPABILITIES").split()
    with pytest.raises(heterod.HeteroError) as e:
        core.metric("CPU", "NO_SUCH_METRIC")
    assert e.value.status == heterod.Status.NOT_FOUND
    assert "NO_SUCH_METRIC" in e.value.message


def test_core_config(tmp_path) -> None:
    with heterod.Core({"CPU.num_threads": 1, "cache_dir": tmp_path / "cache"}) as core:
        with core.compile_model(DEMO, shapes=DEMO_SHAPES) as compiled:
            assert compiled.device == "CPU"
        assert any((tmp_path / "cache").iterdir()), "the compiled blob is cached"
    with pytest.raises(heterod.HeteroError) as e:
        heterod.Core({"no_such_key": "1"})
    assert e.value.status == heterod.Status.INVALID_ARGUMENT and "no_such_key" in e.value.message


def test_model_ports(local_core: heterod.Core) -> None:
    with local_core.read_model(DEMO) as model:
        (image,) = model.inputs
        assert image.name == "image" and image.dtype == heterod.DType.FLOAT32
        assert image.shape == (-1, 3, 32, 32), "the batch is dynamic until fixed"
        assert image.numpy_dtype == np.float32
        assert [p.name for p in model.outputs] == ["probabilities"]
    with local_core.read_model(DEMO.read_bytes(), shapes=DEMO_SHAPES) as model:
        assert model.inputs[0].shape == (1, 3, 32, 32)


def test_compile_sources_agree(local_core: heterod.Core) -> None:
    """A Model, a file and bytes compile to the same answers."""
    x = np.linspace(-1, 1, 3 * 32 * 32, dtype=np.float32).reshape(1, 3, 32, 32)
    with local_core.read_model(DEMO, shapes=DEMO_SHAPES) as model:
        results = [local_core.compile_model(source).infer(x)["probabilities"]
                   for source in (model, str(DEMO), DEMO.read_bytes())]
    results.append(local_core.compile_model(DEMO.read_bytes(), shapes=DEMO_SHAPES).infer(x)["probabilities"])
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_query_and_partition(local_core: heterod.Core) -> None:
    with local_core.read_model(DEMO, shapes=DEMO_SHAPES) as model:
        nodes = local_core.query(model, "CPU")
        assert nodes and all(n.supported and n.reason == "" for n in nodes)
        assert nodes[0].op_type == "Conv"
        assert '"subgraphs"' in local_core.partition(model, "HETERO:CPU", format="json")
        assert "digraph" in local_core.partition(model, "HETERO:CPU", format="dot")


def test_export_import(local_core: heterod.Core, tmp_path) -> None:
    x = np.full((1, 3, 32, 32), 0.25, np.float32)
    with local_core.compile_model(DEMO, shapes=DEMO_SHAPES) as compiled:
        expected = compiled.infer(x)["probabilities"]
        blob = compiled.export()
        compiled.export(tmp_path / "demo.blob")
    assert isinstance(blob, bytes) and (tmp_path / "demo.blob").read_bytes() == blob
    assert "device:          CPU" in heterod.describe_blob(blob)
    for source in (blob, bytearray(blob), tmp_path / "demo.blob"):
        with local_core.import_model(source) as imported:
            np.testing.assert_array_equal(imported.infer(x)["probabilities"], expected)
    with pytest.raises(heterod.HeteroError) as e:
        local_core.import_model(blob[: len(blob) // 2])
    assert e.value.status == heterod.Status.BLOB_CORRUPT


def test_bad_models(local_core: heterod.Core, tmp_path) -> None:
    with pytest.raises(heterod.HeteroError) as e:
        local_core.read_model(tmp_path / "missing.onnx")
    assert e.value.status == heterod.Status.NOT_FOUND and "missing.onnx" in str(e.value)
    (tmp_path / "junk.onnx").write_bytes(b"\x00junk" * 10)
    with pytest.raises(heterod.HeteroError) as e:
        local_core.compile_model(tmp_path / "junk.onnx")
    assert e.value.status == heterod.Status.INVALID_MODEL and "junk.onnx" in e.value.message
    with pytest.raises(heterod.HeteroError) as e:
        local_core.compile_model(DEMO, device="NO_SUCH_DEVICE", shapes=DEMO_SHAPES)
    assert "NO_SUCH_DEVICE" in e.value.message
    with pytest.raises(heterod.HeteroError) as e:
        local_core.compile_model(DEMO, config={"no_such_key": 1}, shapes=DEMO_SHAPES)
    assert e.value.status == heterod.Status.INVALID_ARGUMENT and "no_such_key" in e.value.message


def test_errors_are_the_builtin_exceptions_users_catch(local_core: heterod.Core, tmp_path) -> None:
    """Each status raises its subclass of HeteroError, which is also the
    built-in exception a Python user would write in an except clause."""
    with pytest.raises(FileNotFoundError) as missing:
        local_core.compile_model(tmp_path / "missing.onnx")
    assert isinstance(missing.value, heterod.ModelFileNotFoundError)
    assert missing.value.filename == str(tmp_path / "missing.onnx")
    assert missing.value.status == heterod.Status.NOT_FOUND and "missing.onnx" in missing.value.message
    (tmp_path / "junk.onnx").write_bytes(b"\x00junk" * 10)
    with pytest.raises(ValueError) as junk:
        local_core.compile_model(tmp_path / "junk.onnx")
    assert isinstance(junk.value, heterod.InvalidModelError)
    with pytest.raises(LookupError) as device:  # an unknown device: not a missing file
        local_core.compile_model(DEMO, device="NO_SUCH_DEVICE", shapes=DEMO_SHAPES)
    assert not isinstance(device.value, FileNotFoundError)
    with pytest.raises(ValueError) as blob:
        local_core.import_model(b"not a blob")
    assert isinstance(blob.value, heterod.BlobError)
    with local_core.compile_model(MODELS / "affine.onnx") as compiled, pytest.raises(LookupError):
        compiled.infer({"nope": np.zeros((1, 8), np.float32)})


def test_closed_handles_refuse_use(local_core: heterod.Core) -> None:
    compiled = local_core.compile_model(MODELS / "affine.onnx")
    request = compiled.create_infer_request()
    compiled.close()
    # A request keeps what it needs: it outlives its compiled model.
    np.testing.assert_array_equal(request.infer(np.zeros((1, 8), np.float32))["y"], np.ones((1, 8), np.float32))
    request.close()
    request.close()  # idempotent
    with pytest.raises(ValueError, match="infer request is closed"):
        request.infer()
    with pytest.raises(ValueError, match="compiled model is closed"):
        compiled.create_infer_request()
    core = heterod.Core()
    with core:
        pass
    assert core.closed
    with pytest.raises(ValueError, match="core is closed"):
        core.devices
