#!/usr/bin/env python3
"""The README's Python client (the heterod package), run as written against a
real heterod: the code block is taken from README.md, the daemon started on a
temporary socket, and the probabilities it prints must equal the in-process
result, computed here with nothing but ctypes.

    test_readme_client.py README LIBHETERO HETEROD DEMO_MODEL PYTHON_PACKAGE_DIR

Needs Debian's python3 (python3-numpy). 
Prints "N passed, N failed"."""

import ctypes as C
import os
import re
import subprocess
import sys
import tempfile
import time

readme, libhetero, heterod, demo, package_dir = sys.argv[1:6]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"CHECK failed: {what}", file=sys.stderr)


def local_probabilities():
    """The demo model in process, with the README's input (all 0.5)."""
    lib = C.CDLL(libhetero)
    lib.hetero_last_error.restype = C.c_char_p
    core, compiled, request, x, y, data = (C.c_void_p() for _ in range(6))
    dims = (C.c_int64 * 4)(1, 3, 32, 32)
    names = (C.c_char_p * 1)(b"image")
    shapes = (C.POINTER(C.c_int64) * 1)(C.cast(dims, C.POINTER(C.c_int64)))
    ranks = (C.c_size_t * 1)(4)
    assert lib.hetero_core_create(C.byref(core), None, None, C.c_size_t(0)) == 0
    assert lib.hetero_compile_file(C.byref(compiled), core, demo.encode(), names, shapes, ranks, C.c_size_t(1),
                                   b"CPU", None, None, C.c_size_t(0)) == 0, lib.hetero_last_error()
    assert lib.hetero_infer_request_create(C.byref(request), compiled) == 0
    assert lib.hetero_tensor_create(C.byref(x), 1, dims, C.c_size_t(4)) == 0
    lib.hetero_tensor_get_data(x, C.byref(data))
    C.memmove(data, (C.c_float * 3072)(*[0.5] * 3072), 3072 * 4)
    assert lib.hetero_infer_request_set_input(request, C.c_size_t(0), x) == 0
    assert lib.hetero_infer_request_infer(request) == 0
    assert lib.hetero_infer_request_get_output(request, C.byref(y), C.c_size_t(0)) == 0
    lib.hetero_tensor_get_data(y, C.byref(data))
    probs = C.cast(data, C.POINTER(C.c_float))[:10]
    for release, handle in [(lib.hetero_tensor_release, y), (lib.hetero_tensor_release, x),
                            (lib.hetero_infer_request_release, request),
                            (lib.hetero_compiled_model_release, compiled), (lib.hetero_core_release, core)]:
        release(handle)
    return probs


def main():
    text = open(readme).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    check(len(blocks) == 1, "README.md has one python block")
    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "heterod.sock")
        config = os.path.join(tmp, "heterod.yaml")
        with open(config, "w") as f:
            f.write(f"socket: {{path: {socket}}}\nmodels:\n"
                    f"  - {{name: demo, path: {demo}, shapes: {{image: [1, 3, 32, 32]}}}}\n")
        log = open(os.path.join(tmp, "log"), "w+")
        daemon = subprocess.Popen([heterod, "--config", config], stderr=log)
        try:
            for _ in range(600):
                if os.path.exists(socket) or daemon.poll() is not None:
                    break
                time.sleep(0.05)
            time.sleep(0.1)
            os.environ["HETERO_LIB"] = libhetero
            os.environ["HETEROD_SOCKET"] = socket
            sys.path.insert(0, package_dir)
            namespace = {}
            exec(compile(blocks[0], "README.md (python block)", "exec"), namespace)
            expected = local_probabilities()
            got = [float(p) for p in namespace["probs"]]
            check(got == expected, f"daemon {got} == in process {expected}")
        finally:
            daemon.terminate()
            check(daemon.wait(timeout=60) == 0, "heterod exits 0 on SIGTERM")
            log.seek(0)
            if failed:
                print(log.read(), file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(main())
