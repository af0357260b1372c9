"""The v2 service as a client that has never seen heterod uses it: every RPC,
answers equal to the native protocol's bit for bit, the errors a client
makes, the queue's limits, the repository and the statistics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

import heterod
from conftest import DAEMON_MODELS, DEMO, HETERO, KSERVE_MODELS, MAX_MESSAGE, MODELS, ROOT, Daemon, Stubs

REPO = ROOT / "repo"

CONFIG = f"""
socket: {{path: "@SOCKET@"}}
kserve: {{socket: "@V2_SOCKET@", max_message_bytes: {MAX_MESSAGE}}}
model_dirs: [{REPO}]
models:
  - {{name: demo, path: {DEMO}, shapes: {{image: [1, 3, 32, 32]}}, parallel: 2}}
  - {{name: typed, path: {KSERVE_MODELS / "typed.onnx"}}}
  - {{name: dtypes, path: {MODELS / "dtypes.onnx"}}}
  - {{name: passthrough, path: {MODELS / "passthrough.onnx"}}}
  - {{name: spin, path: {DAEMON_MODELS / "spin.onnx"}, parallel: 1, queue: 1}}
  - {{name: lstm_step, path: {MODELS / "lstm_step.onnx"}}}
"""

# numpy dtype -> v2 datatype
DATATYPES = {
    np.dtype(np.bool_): "BOOL", np.dtype(np.uint8): "UINT8", np.dtype(np.uint16): "UINT16",
    np.dtype(np.uint32): "UINT32", np.dtype(np.uint64): "UINT64", np.dtype(np.int8): "INT8",
    np.dtype(np.int16): "INT16", np.dtype(np.int32): "INT32", np.dtype(np.int64): "INT64",
    np.dtype(np.float16): "FP16", np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64",
}
# The dtypes model's port suffixes.
SUFFIX = {"BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
          "INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64", "FP16": "float16",
          "FP32": "float", "FP64": "double", "BF16": "bfloat16"}
TYPED_FIELD = {"BOOL": "bool_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
               "UINT32": "uint_contents", "UINT64": "uint64_contents", "INT8": "int_contents",
               "INT16": "int_contents", "INT32": "int_contents", "INT64": "int64_contents",
               "FP32": "fp32_contents", "FP64": "fp64_contents"}


@pytest.fixture(scope="module")
def daemon(start_daemon: Any) -> Daemon:
    REPO.mkdir(mode=0o755)
    return start_daemon("main", CONFIG)


@pytest.fixture(scope="module")
def stub(daemon: Daemon, v2: Stubs) -> Any:
    return v2.rpc.GRPCInferenceServiceStub(daemon.channel())


@pytest.fixture(scope="module")
def native(daemon: Daemon) -> Any:
    with heterod.Core.connect(daemon.socket) as core:
        yield core


def request(pb: Any, model: str, inputs: dict[str, tuple[str, np.ndarray]], raw: bool = True,
            outputs: tuple[str, ...] = (), **fields: Any) -> Any:
    """A ModelInferRequest: inputs by name as (datatype, array)."""
    r = pb.ModelInferRequest(model_name=model, **fields)
    for name, (datatype, array) in inputs.items():
        t = r.inputs.add(name=name, datatype=datatype, shape=array.shape)
        if raw:
            r.raw_input_contents.append(np.ascontiguousarray(array).tobytes())
        else:
            getattr(t.contents, TYPED_FIELD[datatype]).extend(array.ravel().tolist())
    for name in outputs:
        r.outputs.add(name=name)
    return r


def output(response: Any, name: str, dtype: Any) -> np.ndarray:
    for k, o in enumerate(response.outputs):
        if o.name == name:
            return np.frombuffer(response.raw_output_contents[k], dtype).reshape(tuple(o.shape))
    raise KeyError(name)


def error_of(call: Any, *args: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call(*args)
    return e.value


def demo_input(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, 32, 32)).astype(np.float32)


# ---- Health and metadata ------------------------------------------------------------


def test_health(stub: Any, v2: Stubs) -> None:
    pb = v2.pb
    assert stub.ServerLive(pb.ServerLiveRequest()).live
    assert stub.ServerReady(pb.ServerReadyRequest()).ready
    assert stub.ModelReady(pb.ModelReadyRequest(name="demo")).ready
    assert stub.ModelReady(pb.ModelReadyRequest(name="demo", version="1")).ready
    assert not stub.ModelReady(pb.ModelReadyRequest(name="demo", version="2")).ready
    assert not stub.ModelReady(pb.ModelReadyRequest(name="nope")).ready


def test_metadata(stub: Any, v2: Stubs) -> None:
    pb = v2.pb
    server = stub.ServerMetadata(pb.ServerMetadataRequest())
    assert server.name == "heterod" and server.version and set(server.extensions) >= {"model_repository", "statistics"}
    m = stub.ModelMetadata(pb.ModelMetadataRequest(name="demo"))
    assert (m.name, list(m.versions), m.platform) == ("demo", ["1"], "heterod_CPU")
    assert [(t.name, t.datatype, list(t.shape)) for t in m.inputs] == [("image", "FP32", [1, 3, 32, 32])]
    assert [(t.name, t.datatype, list(t.shape)) for t in m.outputs] == [("probabilities", "FP32", [1, 10])]
    d = stub.ModelMetadata(pb.ModelMetadataRequest(name="dtypes"))
    assert {t.name: t.datatype for t in d.inputs} == {f"x_{s}": v for v, s in SUFFIX.items()}
    e = error_of(stub.ModelMetadata, pb.ModelMetadataRequest(name="nope"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "model 'nope' is not loaded" in e.details()
    e = error_of(stub.ModelMetadata, pb.ModelMetadataRequest(name="demo", version="7"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "no version '7'" in e.details()


def triton_model_config_class() -> Any:
    """Triton's ModelConfig message, built here from a listing of its fields
    written from Triton Inference Server's published model_config.proto
    (the fields a client reads, with Triton's names, numbers and types), not
    from heterod's .proto: heterod's answer is parsed as Triton's own stubs
    would parse it."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    one, many = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    f = descriptor_pb2.FileDescriptorProto(name="triton_model_config_check.proto", package="inference", syntax="proto3")
    data_type = f.enum_type.add(name="DataType")
    for number, name in enumerate(["INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32",
                                   "INT64", "FP16", "FP32", "FP64", "STRING", "BF16"]):
        data_type.value.add(name=f"TYPE_{name}", number=number)
    # (name, number, label, type, message or enum type)
    listing = {
        "ModelInput": [("name", 1, one, F.TYPE_STRING, ""), ("data_type", 2, one, F.TYPE_ENUM, ".inference.DataType"),
                       ("dims", 4, many, F.TYPE_INT64, ""), ("is_shape_tensor", 6, one, F.TYPE_BOOL, ""),
                       ("allow_ragged_batch", 7, one, F.TYPE_BOOL, ""), ("optional", 8, one, F.TYPE_BOOL, "")],
        "ModelOutput": [("name", 1, one, F.TYPE_STRING, ""), ("data_type", 2, one, F.TYPE_ENUM, ".inference.DataType"),
                        ("dims", 3, many, F.TYPE_INT64, ""), ("label_filename", 4, one, F.TYPE_STRING, ""),
                        ("is_shape_tensor", 6, one, F.TYPE_BOOL, "")],
        "ModelConfig": [("name", 1, one, F.TYPE_STRING, ""), ("platform", 2, one, F.TYPE_STRING, ""),
                        ("max_batch_size", 4, one, F.TYPE_INT32, ""),
                        ("input", 5, many, F.TYPE_MESSAGE, ".inference.ModelInput"),
                        ("output", 6, many, F.TYPE_MESSAGE, ".inference.ModelOutput"),
                        ("default_model_filename", 8, one, F.TYPE_STRING, ""), ("backend", 17, one, F.TYPE_STRING, ""),
                        ("runtime", 25, one, F.TYPE_STRING, "")],
        "ModelConfigResponse": [("config", 1, one, F.TYPE_MESSAGE, ".inference.ModelConfig")],  # grpc_service.proto
    }
    for message, fields in listing.items():
        m = f.message_type.add(name=message)
        for name, number, label, type_, type_name in fields:
            field = m.field.add(name=name, number=number, label=label, type=type_)
            if type_name:
                field.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("inference.ModelConfigResponse"))


def test_model_config_is_tritons(daemon: Daemon, stub: Any, v2: Stubs) -> None:
    """ModelConfig, which Triton's tools (perf_analyzer) ask for first: every
    served model's answer, parsed with a schema written from Triton's
    model_config.proto, agrees with ModelMetadata and holds nothing Triton
    does not define."""
    pb = v2.pb
    response_class = triton_model_config_class()
    served = [m.name for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True)).models]
    assert {"demo", "typed", "dtypes", "passthrough", "spin"} <= set(served)
    with daemon.channel() as channel:
        raw = channel.unary_unary("/inference.GRPCInferenceService/ModelConfig",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: b)
        for name in served:
            wire = raw(pb.ModelConfigRequest(name=name).SerializeToString(), timeout=30)
            answer = response_class.FromString(wire)
            # Every field heterod sends is one Triton defines, with its type:
            # dropping the fields the schema does not know drops nothing.
            known = response_class.FromString(wire)
            known.DiscardUnknownFields()
            assert len(known.SerializeToString()) == len(wire), f"{name}: fields Triton does not define"
            config = answer.config
            meta = stub.ModelMetadata(pb.ModelMetadataRequest(name=name))
            assert (config.name, config.platform, config.backend, config.max_batch_size) == \
                (name, meta.platform, "heterod", 0), name
            data_type = response_class.DESCRIPTOR.file.enum_types_by_name["DataType"].values_by_number
            assert [(t.name, data_type[t.data_type].name, list(t.dims), t.optional) for t in config.input] == \
                [(t.name, "TYPE_" + t.datatype, list(t.shape), False) for t in meta.inputs], name
            assert [(t.name, data_type[t.data_type].name, list(t.dims)) for t in config.output] == \
                [(t.name, "TYPE_" + t.datatype, list(t.shape)) for t in meta.outputs], name
    # The generated stub's answer, for one model in full.
    demo = stub.ModelConfig(pb.ModelConfigRequest(name="demo", version="1")).config
    assert (demo.name, demo.platform, demo.backend, demo.max_batch_size) == ("demo", "heterod_CPU", "heterod", 0)
    assert [(t.name, t.data_type, list(t.dims)) for t in demo.input] == [("image", v2.config.TYPE_FP32, [1, 3, 32, 32])]
    assert [(t.name, t.data_type, list(t.dims)) for t in demo.output] == [("probabilities", v2.config.TYPE_FP32, [1, 10])]


def test_model_config_errors(stub: Any, v2: Stubs) -> None:
    pb = v2.pb
    e = error_of(stub.ModelConfig, pb.ModelConfigRequest(name="nope"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "model 'nope' is not loaded" in e.details()
    e = error_of(stub.ModelConfig, pb.ModelConfigRequest(name="demo", version="7"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "no version '7'" in e.details()


# ---- Inference ---------------------------------------------------------------------------


def test_infer_matches_native_bit_for_bit(stub: Any, v2: Stubs, native: Any) -> None:
    with native.open_model("demo") as compiled:
        for seed in range(8):
            x = demo_input(seed)
            expected = compiled.infer({"image": x})["probabilities"]
            for raw in (True, False):
                r = stub.ModelInfer(request(v2.pb, "demo", {"image": ("FP32", x)}, raw=raw, id=f"req-{seed}"))
                assert (r.model_name, r.model_version, r.id) == ("demo", "1", f"req-{seed}")
                assert [(o.name, o.datatype, list(o.shape)) for o in r.outputs] == [("probabilities", "FP32", [1, 10])]
                got = output(r, "probabilities", np.float32)
                assert got.tobytes() == expected.tobytes(), f"seed {seed}, raw {raw}"


def test_every_datatype_raw(stub: Any, v2: Stubs) -> None:
    rng = np.random.default_rng(1)
    inputs: dict[str, tuple[str, np.ndarray]] = {}
    for dtype, datatype in DATATYPES.items():
        if dtype == np.bool_:
            a = rng.integers(0, 2, (2, 3)).astype(np.bool_)
        elif dtype.kind == "f":
            a = rng.standard_normal((2, 3)).astype(dtype)
        else:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)
        inputs[f"x_{SUFFIX[datatype]}"] = (datatype, a)
    inputs["x_bfloat16"] = ("BF16", rng.integers(0, 1 << 16, (2, 3), dtype=np.uint16))  # raw bit patterns
    r = stub.ModelInfer(request(v2.pb, "dtypes", inputs))
    for name, (datatype, a) in inputs.items():
        y = "y_" + name[2:]
        o = next(o for o in r.outputs if o.name == y)
        assert o.datatype == datatype
        assert output(r, y, a.dtype).tobytes() == a.T.tobytes(), datatype


def test_every_typed_contents_field(stub: Any, v2: Stubs) -> None:
    rng = np.random.default_rng(2)
    inputs: dict[str, tuple[str, np.ndarray]] = {}
    for datatype in TYPED_FIELD:
        dtype = next(d for d, v in DATATYPES.items() if v == datatype)
        if dtype == np.bool_:
            a = rng.integers(0, 2, (2, 3)).astype(np.bool_)
        elif dtype.kind == "f":
            a = rng.standard_normal((2, 3)).astype(dtype)
        else:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)
        inputs[f"x_{SUFFIX[datatype]}"] = (datatype, a)
    r = stub.ModelInfer(request(v2.pb, "typed", inputs, raw=False))
    for name, (datatype, a) in inputs.items():
        assert output(r, "y_" + name[2:], a.dtype).tobytes() == a.T.tobytes(), datatype


def test_requested_outputs(stub: Any, v2: Stubs) -> None:
    x = np.arange(4, dtype=np.float32)
    both = stub.ModelInfer(request(v2.pb, "passthrough", {"x": ("FP32", x)}))
    assert [o.name for o in both.outputs] == ["y", "c"]
    only_c = stub.ModelInfer(request(v2.pb, "passthrough", {"x": ("FP32", x)}, outputs=("c",)))
    assert [o.name for o in only_c.outputs] == ["c"] and len(only_c.raw_output_contents) == 1
    np.testing.assert_array_equal(output(only_c, "c", np.float32), [1, 2, 3])
    reordered = stub.ModelInfer(request(v2.pb, "passthrough", {"x": ("FP32", x)}, outputs=("c", "y")))
    assert [o.name for o in reordered.outputs] == ["c", "y"]
    np.testing.assert_array_equal(output(reordered, "y", np.float32), x)
    e = error_of(stub.ModelInfer, request(v2.pb, "passthrough", {"x": ("FP32", x)}, outputs=("z",)))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "has no output 'z'" in e.details()
    e = error_of(stub.ModelInfer, request(v2.pb, "passthrough", {"x": ("FP32", x)}, outputs=("y", "y")))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "requested twice" in e.details()


def bad_requests(pb: Any) -> list[tuple[str, Any, grpc.StatusCode, str]]:
    """(what, request, code, a part of the message) for each mistake a client makes."""
    x = demo_input(0)
    good = {"image": ("FP32", x)}
    cases = [
        ("unknown model", request(pb, "nope", good), grpc.StatusCode.NOT_FOUND, "model 'nope' is not loaded"),
        ("unknown version", request(pb, "demo", good, model_version="3"), grpc.StatusCode.NOT_FOUND, "no version '3'"),
        ("wrong dtype", request(pb, "demo", {"image": ("INT32", x.view(np.int32))}),
         grpc.StatusCode.INVALID_ARGUMENT, "input 'image'"),
        ("wrong shape", request(pb, "demo", {"image": ("FP32", np.zeros((1, 3, 16, 16), np.float32))}),
         grpc.StatusCode.INVALID_ARGUMENT, "input 'image'"),
        ("unknown input", request(pb, "demo", {"picture": ("FP32", x)}), grpc.StatusCode.INVALID_ARGUMENT,
         "has no input 'picture'"),
        ("no input", request(pb, "demo", {}), grpc.StatusCode.INVALID_ARGUMENT, "takes 1 inputs, the request has 0"),
        ("unknown datatype", request(pb, "demo", {"image": ("FP8", x)}), grpc.StatusCode.INVALID_ARGUMENT,
         "datatype 'FP8'"),
        ("unknown parameter", request(pb, "demo", good, parameters={"priority": pb.InferParameter(int64_param=1)}),
         grpc.StatusCode.INVALID_ARGUMENT, "parameter 'priority'"),
    ]
    short = request(pb, "demo", good)
    short.raw_input_contents[0] = short.raw_input_contents[0][:-4]
    cases.append(("raw too short", short, grpc.StatusCode.INVALID_ARGUMENT, "holds 12284 bytes, FP32 of its shape needs 12288"))
    extra = request(pb, "demo", good)
    extra.raw_input_contents.append(b"")
    cases.append(("raw count", extra, grpc.StatusCode.INVALID_ARGUMENT, "raw_input_contents has 2 entries for 1 inputs"))
    both = request(pb, "demo", good)
    both.inputs[0].contents.fp32_contents.append(1.0)
    cases.append(("raw and typed", both, grpc.StatusCode.INVALID_ARGUMENT, "contents is set as well"))
    wrong_field = request(pb, "demo", good, raw=False)
    wrong_field.inputs[0].contents.int64_contents.append(1)
    cases.append(("wrong field", wrong_field, grpc.StatusCode.INVALID_ARGUMENT, "contents.int64_contents is set for a FP32"))
    few = request(pb, "demo", {"image": ("FP32", x)}, raw=False)
    del few.inputs[0].contents.fp32_contents[-1]
    cases.append(("typed count", few, grpc.StatusCode.INVALID_ARGUMENT, "holds 3071 values, its shape needs 3072"))
    negative = pb.ModelInferRequest(model_name="demo")
    negative.inputs.add(name="image", datatype="FP32", shape=[1, -3, 32, 32])
    cases.append(("negative dim", negative, grpc.StatusCode.INVALID_ARGUMENT, "shape[1] is -3"))
    huge = pb.ModelInferRequest(model_name="demo")
    huge.inputs.add(name="image", datatype="FP32", shape=[1 << 40, 1 << 40])
    huge.raw_input_contents.append(b"")
    cases.append(("overflowing shape", huge, grpc.StatusCode.INVALID_ARGUMENT, "overflows the address space"))
    deep = pb.ModelInferRequest(model_name="demo")
    deep.inputs.add(name="image", datatype="FP32", shape=[1] * 17)
    cases.append(("rank", deep, grpc.StatusCode.INVALID_ARGUMENT, "rank 17 exceeds 16"))
    narrow = request(pb, "typed", {}, raw=False)
    t = narrow.inputs.add(name="x_int8", datatype="INT8", shape=[2, 3])
    t.contents.int_contents.extend([1, 2, 300, 4, 5, 6])
    cases.append(("INT8 out of range", narrow, grpc.StatusCode.INVALID_ARGUMENT, "int_contents[2] = 300 does not fit"))
    fp16 = request(pb, "dtypes", {}, raw=False)
    fp16.inputs.add(name="x_float16", datatype="FP16", shape=[2, 3])
    cases.append(("FP16 typed", fp16, grpc.StatusCode.INVALID_ARGUMENT, "FP16 travels as raw_input_contents"))
    text = request(pb, "demo", {}, raw=False)
    text.inputs.add(name="image", datatype="BYTES", shape=[1]).contents.bytes_contents.append(b"x")
    cases.append(("BYTES", text, grpc.StatusCode.INVALID_ARGUMENT, "datatype 'BYTES'"))
    return cases


def test_bad_requests_are_refused_with_heterods_message(stub: Any, v2: Stubs) -> None:
    for what, req, code, message in bad_requests(v2.pb):
        e = error_of(stub.ModelInfer, req)
        assert e.code() == code and message in e.details(), f"{what}: {e.code()} {e.details()!r}"
    # None of them cost the daemon anything: it still answers.
    assert stub.ModelInfer(request(v2.pb, "demo", {"image": ("FP32", demo_input(0))})).outputs


def test_a_wrong_datatype_names_the_input_once(stub: Any, v2: Stubs) -> None:
    x = demo_input(0)
    e = error_of(stub.ModelInfer, request(v2.pb, "demo", {"image": ("INT32", x.view(np.int32))}))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details() == "input 'image' must be float32, got int32", e.details()
    e = error_of(stub.ModelInfer, request(v2.pb, "demo", {"image": ("FP32", np.zeros((1, 3, 16, 16), np.float32))}))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and e.details().count("'image'") == 1, e.details()


def test_sixteen_concurrent_streams(daemon: Daemon, stub: Any, v2: Stubs, native: Any) -> None:
    inputs = [demo_input(100 + k) for k in range(16)]
    with native.open_model("demo") as compiled:
        expected = [compiled.infer({"image": x})["probabilities"].tobytes() for x in inputs]

    def infer(stub_: Any, k: int) -> bytes:
        r = stub_.ModelInfer(request(v2.pb, "demo", {"image": ("FP32", inputs[k])}, id=str(k)))
        assert r.id == str(k)
        return output(r, "probabilities", np.float32).tobytes()

    # 16 streams on one connection, then 16 connections, each 5 times over.
    with ThreadPoolExecutor(16) as pool:
        for _ in range(5):
            assert list(pool.map(lambda k: infer(stub, k), range(16))) == expected
        stubs = [v2.rpc.GRPCInferenceServiceStub(daemon.channel()) for _ in range(16)]
        for _ in range(5):
            assert list(pool.map(lambda k: infer(stubs[k], k), range(16))) == expected


def test_busy_and_deadlines(stub: Any, v2: Stubs, native: Any) -> None:
    # spin: one infer request and a queue of one. A long Loop holds the
    # request, a second call waits in the queue, and a third finds no room.
    # Each step waits for the daemon's own count of it, since gRPC does not
    # keep separate calls in order and a timed burst depends on the machine.
    def spin(m: int, **parameters: Any) -> Any:
        inputs = {"m": ("INT64", np.array(m, np.int64)), "x": ("FP32", np.zeros((1, 4), np.float32))}
        return stub.ModelInfer.future(request(v2.pb, "spin", inputs, parameters=parameters))

    def wait_for(field: str) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if next(m[field] for m in json.loads(native.stats("json"))["models"] if m["name"] == "spin") >= 1:
                return
            time.sleep(0.001)
        raise AssertionError(f"spin never had {field} >= 1")

    ahead = spin(200_000)
    wait_for("in_flight")
    queued = spin(1)
    wait_for("queue_depth")
    e = spin(1).exception()
    assert e is not None and e.code() == grpc.StatusCode.UNAVAILABLE and "is busy" in e.details(), e
    ahead.result()
    queued.result()
    # The v2 "timeout" parameter (us): a request that waits in the queue past it
    # (behind a long Loop) is answered DEADLINE_EXCEEDED without running.
    ahead = spin(200_000)
    wait_for("in_flight")
    hurried = spin(1, timeout=v2.pb.InferParameter(int64_param=1))
    ahead.result()
    e = hurried.exception()
    assert e is not None and e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and "deadline" in e.details()


def test_oversized_message_is_refused(stub: Any, v2: Stubs) -> None:
    big = request(v2.pb, "demo", {"image": ("FP32", demo_input(0))})
    big.raw_input_contents[0] = b"\0" * (MAX_MESSAGE + 1)
    e = error_of(stub.ModelInfer, big)
    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert stub.ServerLive(v2.pb.ServerLiveRequest()).live


def test_requests_that_would_parse_into_gigabytes_are_refused(daemon: Daemon, stub: Any, v2: Stubs) -> None:
    """Empty `inputs` entries are 2 bytes on the wire and hundreds parsed:
    4 million of them fit the message limit (and gzip to a few KB), and
    would parse into gigabytes. They are counted on the wire and refused
    before the parse; the daemon serves on."""
    bomb = b"\x2a\x00" * 4_000_000  # ModelInferRequest.inputs (field 5), empty, 4M times
    assert len(bomb) < MAX_MESSAGE
    with daemon.channel() as channel:
        raw = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: b)
        for compression in (grpc.Compression.NoCompression, grpc.Compression.Gzip):
            with pytest.raises(grpc.RpcError) as e:
                raw(bomb, compression=compression, timeout=60)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value.details()
            assert "once parsed" in e.value.details() and "65536 messages" in e.value.details()
    assert daemon.process.poll() is None
    r = stub.ModelInfer(request(v2.pb, "demo", {"image": ("FP32", demo_input(1))}))
    assert output(r, "probabilities", np.float32).shape == (1, 10)


# ---- Statistics ----------------------------------------------------------------------------


def test_statistics(stub: Any, v2: Stubs, native: Any) -> None:
    pb = v2.pb
    before = stub.ModelStatistics(pb.ModelStatisticsRequest(name="demo")).model_stats[0]
    for k in range(5):
        stub.ModelInfer(request(pb, "demo", {"image": ("FP32", demo_input(k))}))
    error_of(stub.ModelInfer, request(pb, "demo", {"image": ("FP32", np.zeros((1, 3, 8, 8), np.float32))}))
    after = stub.ModelStatistics(pb.ModelStatisticsRequest(name="demo", version="1")).model_stats[0]
    s0, s1 = before.inference_stats, after.inference_stats
    assert (after.name, after.version) == ("demo", "1")
    assert after.inference_count - before.inference_count == 5
    assert s1.success.count - s0.success.count == 5 and s1.success.ns > s0.success.ns
    assert s1.fail.count - s0.fail.count == 1
    # The request of the wrong shape failed before it ran.
    assert s1.compute_infer.count - s0.compute_infer.count == 5 and s1.queue.count == s1.compute_infer.count
    assert after.last_inference >= before.last_inference > 0
    # One set of statistics, whichever protocol asked.
    stats = {m["name"]: m for m in json.loads(native.stats("json"))["models"]}
    assert stats["demo"]["requests"] == s1.success.count + s1.fail.count
    every = stub.ModelStatistics(pb.ModelStatisticsRequest())
    assert {m.name for m in every.model_stats} >= {"demo", "typed", "dtypes", "passthrough", "spin"}
    e = error_of(stub.ModelStatistics, pb.ModelStatisticsRequest(name="nope"))
    assert e.code() == grpc.StatusCode.NOT_FOUND


def test_every_failed_request_is_counted(stub: Any, v2: Stubs, native: Any) -> None:
    """Each of a client's mistakes on a model heterod serves counts in its
    failures, whether it was refused as the call was read (a datatype heterod
    does not know), on the loop (an input the model does not have, or none)
    or by the model (a wrong datatype): once each, in both protocols'
    statistics. A request for a model or version heterod does not serve has
    no model to count in."""
    pb = v2.pb

    def failures(name: str) -> tuple[int, int]:
        v2_fail = stub.ModelStatistics(pb.ModelStatisticsRequest(name=name)).model_stats[0].inference_stats.fail.count
        native_errors = next(m["errors"] for m in json.loads(native.stats("json"))["models"] if m["name"] == name)
        return v2_fail, native_errors

    before = {name: failures(name) for name in ("demo", "typed", "dtypes")}
    cases = bad_requests(pb)
    for what, req, _, _ in cases:
        error_of(stub.ModelInfer, req)
    counted = [what for what, req, _, _ in cases if what not in ("unknown model", "unknown version")]
    after = {name: failures(name) for name in before}
    grown = sum(after[name][0] - before[name][0] for name in before)
    assert grown == len(counted), f"{grown} failures counted for {len(counted)}: {counted}"
    for name in before:
        assert after[name][0] - before[name][0] == after[name][1] - before[name][1], name
    # The one the issue named: a wrong input name, on its own.
    demo = failures("demo")[0]
    e = error_of(stub.ModelInfer, request(pb, "demo", {"picture": ("FP32", demo_input(0))}))
    assert "model 'demo' has no input 'picture'" in e.details()
    assert failures("demo")[0] == demo + 1


# ---- Model repository -------------------------------------------------------------------------


def index(stub: Any, pb: Any, ready: bool = False) -> dict[str, tuple[str, str]]:
    return {m.name: (m.state, m.reason) for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=ready)).models}


def test_repository_load_infer_unload(stub: Any, v2: Stubs, native: Any) -> None:
    pb = v2.pb
    shutil.copy(MODELS / "affine.onnx", REPO / "affine.onnx")
    listed = index(stub, pb)
    assert listed["demo"] == ("READY", "") and listed["affine"] == ("UNAVAILABLE", "unloaded")
    assert "affine" not in index(stub, pb, ready=True)
    assert not stub.ModelReady(pb.ModelReadyRequest(name="affine")).ready

    stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(
        model_name="affine", parameters={"parallel": pb.ModelRepositoryParameter(int64_param=2)}))
    assert stub.ModelReady(pb.ModelReadyRequest(name="affine")).ready
    assert index(stub, pb, ready=True)["affine"] == ("READY", "")
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    r = stub.ModelInfer(request(pb, "affine", {"x": ("FP32", x)}))
    np.testing.assert_array_equal(output(r, "y", np.float32), 2 * x + 1)
    # The native protocol sees the same model.
    served = {m.name: m for m in native.models()}
    assert served["affine"].state == "ready"

    # Loading a loaded model reloads it; it serves throughout.
    stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="affine"))
    assert stub.ModelReady(pb.ModelReadyRequest(name="affine")).ready

    stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="affine"))
    assert not stub.ModelReady(pb.ModelReadyRequest(name="affine")).ready
    assert index(stub, pb)["affine"] == ("UNAVAILABLE", "unloaded")
    e = error_of(stub.ModelInfer, request(pb, "affine", {"x": ("FP32", x)}))
    assert e.code() == grpc.StatusCode.NOT_FOUND
    e = error_of(stub.RepositoryModelUnload, pb.RepositoryModelUnloadRequest(model_name="affine"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "is not loaded" in e.details()


def test_repository_prefers_a_compiled_blob(stub: Any, v2: Stubs) -> None:
    """NAME.blob (from `hetero compile`) is served before NAME.onnx: here the
    two are different models, so the answers tell which one serves."""
    pb = v2.pb
    shutil.copy(MODELS / "passthrough.onnx", REPO / "precompiled.onnx")
    subprocess.run([HETERO, "compile", str(MODELS / "affine.onnx"), "--device", "CPU", "-o",
                    str(REPO / "precompiled.blob")], check=True, capture_output=True)
    stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="precompiled"))
    try:
        x = np.arange(8, dtype=np.float32).reshape(1, 8)
        r = stub.ModelInfer(request(pb, "precompiled", {"x": ("FP32", x)}))
        np.testing.assert_array_equal(output(r, "y", np.float32), 2 * x + 1)
    finally:
        stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="precompiled"))


def test_repository_errors(stub: Any, v2: Stubs) -> None:
    pb = v2.pb
    cases = [
        (pb.RepositoryModelLoadRequest(model_name="nope"), grpc.StatusCode.NOT_FOUND, "nope.blob or nope.onnx"),
        (pb.RepositoryModelLoadRequest(model_name="../etc"), grpc.StatusCode.INVALID_ARGUMENT, "must be 1-128"),
        (pb.RepositoryModelLoadRequest(model_name="demo", repository_name="/elsewhere"), grpc.StatusCode.NOT_FOUND,
         "not one of the config's model_dirs"),
        (pb.RepositoryModelLoadRequest(model_name="demo", parameters={"device": pb.ModelRepositoryParameter(
            string_param="OPENCL")}), grpc.StatusCode.PERMISSION_DENIED, "no client may replace it"),
        (pb.RepositoryModelLoadRequest(model_name="affine", parameters={"config": pb.ModelRepositoryParameter(
            string_param="{}")}), grpc.StatusCode.INVALID_ARGUMENT, "parameter 'config'"),
    ]
    shutil.copy(MODELS / "affine.onnx", REPO / "affine.onnx")
    for req, code, message in cases:
        e = error_of(stub.RepositoryModelLoad, req)
        assert e.code() == code and message in e.details(), f"{req}: {e.code()} {e.details()!r}"
    # A link out of model_dirs is refused as the native LoadModel refuses it.
    os.symlink(DEMO, REPO / "outside.onnx")
    e = error_of(stub.RepositoryModelLoad, pb.RepositoryModelLoadRequest(model_name="outside"))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED and "outside the config's model_dirs" in e.details()
    # A file that is no model fails to load, with the importer's reason.
    (REPO / "junk.onnx").write_bytes(b"not a model")
    e = error_of(stub.RepositoryModelLoad, pb.RepositoryModelLoadRequest(model_name="junk"))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "junk" in e.details()
    assert "junk" not in {m.name for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True)).models}


def test_a_configured_model_is_unloaded_only_by_a_reload(stub: Any, v2: Stubs) -> None:
    """The config's models belong to it: no client unloads or replaces them,
    root included; they serve on (tests/kserve/test_listener.py has the
    models clients load)."""
    pb = v2.pb
    e = error_of(stub.RepositoryModelUnload, pb.RepositoryModelUnloadRequest(model_name="passthrough"))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED and "reload" in e.details(), e.details()
    e = error_of(stub.RepositoryModelLoad, pb.RepositoryModelLoadRequest(model_name="passthrough"))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED and "replace" in e.details(), e.details()
    assert index(stub, pb)["passthrough"] == ("READY", "")
    r = stub.ModelInfer(request(pb, "passthrough", {"x": ("FP32", np.ones(4, np.float32))}))
    assert [o.name for o in r.outputs] == ["y", "c"]


# ---- Sequences, as Triton's clients send them ---------------------------------------------------------------------


def sequence_call(pb: Any, model: str, inputs: dict[str, tuple[str, np.ndarray]], sequence_id: int | str,
                  start: bool = False, end: bool = False, outputs: tuple[str, ...] = ()) -> Any:
    r = request(pb, model, inputs, outputs=outputs)
    if isinstance(sequence_id, str):
        r.parameters["sequence_id"].string_param = sequence_id
    else:
        r.parameters["sequence_id"].int64_param = sequence_id
    if start:
        r.parameters["sequence_start"].bool_param = True
    if end:
        r.parameters["sequence_end"].bool_param = True
    return r


def test_sequences_keep_their_state_in_the_daemon(stub: Any, v2: Stubs, native: Any) -> None:
    pb = v2.pb
    xs = np.random.default_rng(3).uniform(-1, 1, size=(30, 1, 1, 4)).astype(np.float32)
    # The client that carries the state itself, through the native protocol.
    expected = []
    with native.open_model("lstm_step") as step, step.create_infer_request() as r:
        h = c = np.zeros((1, 1, 8), np.float32)
        for x in xs:
            out = r.infer({"x": x, "h": h, "c": c})
            h, c = out["h_out"].copy(), out["c_out"].copy()
            expected.append(h)
    for sequence_id in (7, "microphone-1"):
        for t, x in enumerate(xs):
            call = sequence_call(pb, "lstm_step", {"x": ("FP32", x)}, sequence_id, start=t == 0, end=t == len(xs) - 1,
                                 outputs=("h_out",))
            np.testing.assert_array_equal(output(stub.ModelInfer(call), "h_out", np.float32), expected[t])
        # Ended with its last call.
        e = error_of(stub.ModelInfer, sequence_call(pb, "lstm_step", {"x": ("FP32", xs[0])}, sequence_id))
        assert e.code() == grpc.StatusCode.NOT_FOUND and f"no sequence '{sequence_id}'" in e.details(), e.details()
    # Outputs not asked for: all but the state, which the daemon keeps.
    response = stub.ModelInfer(sequence_call(pb, "lstm_step", {"x": ("FP32", xs[0])}, 9, start=True, end=True))
    assert [o.name for o in response.outputs] == []
    for bad, why in ((("sequence_id", "int64_param", 0), "sequence_id"), (("sequence_start", "string_param", "yes"),
                                                                          "sequence_start")):
        call = request(pb, "lstm_step", {"x": ("FP32", xs[0])})
        setattr(call.parameters[bad[0]], bad[1], bad[2])
        e = error_of(stub.ModelInfer, call)
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and why in e.details(), e.details()
    e = error_of(stub.ModelInfer, sequence_call(pb, "demo", {"image": ("FP32", demo_input(1))}, 1, start=True))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "keeps no state" in e.details(), e.details()


SILERO_V5 = Path(os.environ.get("HETERO_TEST_CACHE", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                                / "heterod-test")) / "node_modules/@ricky0123/vad-web/dist/silero_vad_v5.onnx"


def test_silero_vad_as_a_sequence(start_daemon: Any, v2: Stubs) -> None:
    """Silero VAD v5 over v2 as a sequence, against the native client that
    carries the state (which check_streaming.js holds to ONNX Runtime)."""
    if not SILERO_V5.exists():
        pytest.skip(f"{SILERO_V5} is not there: run scripts/setup.sh --test-data")
    d = start_daemon("silero", f"""
socket: {{path: "@SOCKET@"}}
kserve: {{socket: "@V2_SOCKET@"}}
models:
  - {{name: vad, path: {SILERO_V5}}}
""")
    stub = v2.rpc.GRPCInferenceServiceStub(d.channel())
    t = np.arange(512 * 100) / 16000
    audio = (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    chunks = audio.reshape(100, 1, 512)
    sr = np.array(16000, np.int64)
    with heterod.Core.connect(d.socket) as core, core.open_model("vad") as vad:
        state = np.zeros((2, 1, 128), np.float32)
        expected = []
        for chunk in chunks:
            out = vad.infer({"input": chunk, "state": state, "sr": sr})
            state = out["stateN"].copy()
            expected.append(out["output"].copy())
    for k, chunk in enumerate(chunks):
        call = sequence_call(v2.pb, "vad", {"input": ("FP32", chunk), "sr": ("INT64", sr)}, "vad-1", start=k == 0)
        response = stub.ModelInfer(call)
        assert [o.name for o in response.outputs] == ["output"]
        np.testing.assert_array_equal(output(response, "output", np.float32), expected[k])
