#!/usr/bin/env python3
"""The C ABI from Python ctypes, as a Python binding would use it: the main
path on the tiny test model (y = Relu(x.W + b)) plus a few error paths.

    test_ctypes.py LIBHETERO FIXTURE_DIR

Plain functions, handles as void pointers and status codes: nothing here needs
a C compiler or a generated binding. Prints "N passed, N failed"."""

import ctypes as C
import os
import sys
import threading

OK, INVALID_ARGUMENT, NOT_FOUND, BUSY = 0, 1, 3, 10
FLOAT32, INT64 = 1, 7

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        err = LIB.hetero_last_error().decode(errors="replace")
        print(f"CHECK failed: {what}\n  last error: {err}", file=sys.stderr)


def bind(lib):
    """Declares the signatures used here; ctypes would guess int otherwise."""
    P, S, I64P = C.c_void_p, C.c_size_t, C.POINTER(C.c_int64)
    PP, CP, CPP = C.POINTER(C.c_void_p), C.c_char_p, C.POINTER(C.c_char_p)
    sig = {
        "hetero_api_version": (C.c_uint32, []),
        "hetero_library_version": (CP, []),
        "hetero_last_error": (CP, []),
        "hetero_status_name": (CP, [C.c_int]),
        "hetero_free": (None, [P]),
        "hetero_core_create": (C.c_int, [PP, CPP, CPP, S]),
        "hetero_core_release": (C.c_int, [P]),
        "hetero_core_get_device_count": (C.c_int, [P, C.POINTER(S)]),
        "hetero_core_get_device_name": (C.c_int, [P, CPP, S]),
        "hetero_core_get_metric": (C.c_int, [P, PP, CP, CP]),
        "hetero_model_read_file": (C.c_int, [PP, P, CP, CPP, C.POINTER(I64P), C.POINTER(S), S]),
        "hetero_model_release": (C.c_int, [P]),
        "hetero_model_get_input_name": (C.c_int, [P, CPP, S]),
        "hetero_model_get_input_shape": (C.c_int, [P, C.POINTER(I64P), C.POINTER(C.c_int64), S]),
        "hetero_compile": (C.c_int, [PP, P, P, CP, CPP, CPP, S]),
        "hetero_compiled_model_release": (C.c_int, [P]),
        "hetero_compiled_model_export": (C.c_int, [P, PP, C.POINTER(S)]),
        "hetero_compiled_model_import": (C.c_int, [PP, P, P, S, CPP, CPP, S]),
        "hetero_tensor_create": (C.c_int, [PP, C.c_int, I64P, S]),
        "hetero_tensor_wrap": (C.c_int, [PP, C.c_int, I64P, S, P, S]),
        "hetero_tensor_get_data": (C.c_int, [P, PP]),
        "hetero_tensor_get_shape": (C.c_int, [P, C.POINTER(I64P), C.POINTER(S)]),
        "hetero_tensor_release": (C.c_int, [P]),
        "hetero_infer_request_create": (C.c_int, [PP, P]),
        "hetero_infer_request_set_input": (C.c_int, [P, S, P]),
        "hetero_infer_request_set_input_by_name": (C.c_int, [P, CP, P]),
        "hetero_infer_request_get_output": (C.c_int, [P, PP, S]),
        "hetero_infer_request_infer": (C.c_int, [P]),
        "hetero_infer_request_start_async": (C.c_int, [P, P, P]),
        "hetero_infer_request_wait": (C.c_int, [P]),
        "hetero_infer_request_release": (C.c_int, [P]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


CALLBACK = C.CFUNCTYPE(None, C.c_void_p, C.c_int)


def floats(tensor, n):
    data = C.c_void_p()
    check(LIB.hetero_tensor_get_data(tensor, C.byref(data)) == OK, "get_data")
    return list(C.cast(data, C.POINTER(C.c_float))[:n])


def main():
    fixtures = sys.argv[2].encode()
    path = lambda name: os.path.join(fixtures, name.encode())

    check(LIB.hetero_api_version() >> 16 == 0, "API major 0")
    check(len(LIB.hetero_library_version()) > 0, "library version")
    check(LIB.hetero_status_name(NOT_FOUND) == b"HETERO_NOT_FOUND", "status name")

    core = C.c_void_p()
    check(LIB.hetero_core_create(C.byref(core), None, None, 0) == OK, "core_create")
    count = C.c_size_t()
    check(LIB.hetero_core_get_device_count(core, C.byref(count)) == OK and count.value >= 1, "devices")
    name = C.c_char_p()
    check(LIB.hetero_core_get_device_name(core, C.byref(name), 0) == OK and name.value == b"CPU", "device 0 is CPU")
    metric = C.c_void_p()
    check(LIB.hetero_core_get_metric(core, C.byref(metric), b"CPU", b"FULL_DEVICE_NAME") == OK, "metric")
    check(bool(C.cast(metric, C.c_char_p).value), "metric text")
    LIB.hetero_free(metric)

    # Errors: status, message naming the thing, out-param untouched.
    model = C.c_void_p(0x5E17)
    st = LIB.hetero_model_read_file(C.byref(model), core, path("missing.onnx"), None, None, None, 0)
    check(st == NOT_FOUND, f"missing model is NOT_FOUND (got {st})")
    check(b"missing.onnx" in LIB.hetero_last_error(), "message names the file")
    check(model.value == 0x5E17, "out-param untouched")

    model = C.c_void_p()
    check(LIB.hetero_model_read_file(C.byref(model), core, path("tiny.onnx"), None, None, None, 0) == OK, "read")
    check(LIB.hetero_model_get_input_name(model, C.byref(name), 0) == OK and name.value == b"x", "input name")
    dims, rank = C.POINTER(C.c_int64)(), C.c_int64()
    check(LIB.hetero_model_get_input_shape(model, C.byref(dims), C.byref(rank), 0) == OK, "input shape")
    check(rank.value == 2 and dims[0] == 1 and dims[1] == 4, "x is 1x4")

    compiled = C.c_void_p()
    keys = (C.c_char_p * 1)(b"num_threads")
    values = (C.c_char_p * 1)(b"1")
    check(LIB.hetero_compile(C.byref(compiled), core, model, b"CPU", keys, values, 1) == OK, "compile")
    LIB.hetero_model_release(model)
    if not compiled:
        return

    request = C.c_void_p()
    check(LIB.hetero_infer_request_create(C.byref(request), compiled) == OK, "request")
    shape = (C.c_int64 * 2)(1, 4)
    buf = (C.c_float * 4)(1, 2, 3, 4)  # caller memory, wrapped without a copy
    x = C.c_void_p()
    check(LIB.hetero_tensor_wrap(C.byref(x), FLOAT32, shape, 2, buf, C.sizeof(buf)) == OK, "wrap")
    wrong = C.c_void_p()
    LIB.hetero_tensor_create(C.byref(wrong), INT64, shape, 2)
    check(LIB.hetero_infer_request_set_input(request, 0, wrong) == INVALID_ARGUMENT, "wrong dtype refused")
    LIB.hetero_tensor_release(wrong)
    check(LIB.hetero_infer_request_set_input_by_name(request, b"x", x) == OK, "set input")
    check(LIB.hetero_infer_request_infer(request) == OK, "infer")
    y = C.c_void_p()
    check(LIB.hetero_infer_request_get_output(request, C.byref(y), 0) == OK, "output")
    check(floats(y, 3) == [5.5, 5.0, 0.0], "y = [5.5, 5, 0]")
    LIB.hetero_tensor_release(y)

    # Async: the callback runs on a worker thread; wait returns its status.
    seen = []
    done = threading.Event()

    def on_done(_user, status):
        seen.append(status)
        done.set()

    cb = CALLBACK(on_done)  # kept referenced until the inference finished
    buf[3] = 0  # the wrapped memory is read at inference time: y = [1.5, 1, 3.5]
    check(LIB.hetero_infer_request_start_async(request, cb, None) == OK, "start_async")
    check(LIB.hetero_infer_request_wait(request) == OK, "wait")
    check(done.is_set() and seen == [OK], "callback ran once with OK")
    y = C.c_void_p()
    LIB.hetero_infer_request_get_output(request, C.byref(y), 0)
    check(floats(y, 3) == [1.5, 1.0, 3.5], "async y sees the new input")

    # Blob round trip through memory.
    blob, size = C.c_void_p(), C.c_size_t()
    check(LIB.hetero_compiled_model_export(compiled, C.byref(blob), C.byref(size)) == OK, "export")
    check(C.string_at(blob, 8) == b"HETEROBL", "blob magic")
    imported = C.c_void_p()
    check(LIB.hetero_compiled_model_import(C.byref(imported), core, blob, size, None, None, 0) == OK, "import")
    LIB.hetero_free(blob)
    LIB.hetero_compiled_model_release(imported)

    LIB.hetero_infer_request_release(request)
    LIB.hetero_tensor_release(x)
    LIB.hetero_compiled_model_release(compiled)
    LIB.hetero_core_release(core)
    # An output handle stays valid after everything else is gone.
    check(floats(y, 3) == [1.5, 1.0, 3.5], "output outlives its request")
    LIB.hetero_tensor_release(y)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: test_ctypes.py LIBHETERO FIXTURE_DIR", file=sys.stderr)
        sys.exit(2)
    LIB = bind(C.CDLL(sys.argv[1]))
    main()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
