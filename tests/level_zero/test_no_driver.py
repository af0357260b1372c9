#!/usr/bin/env python3
"""The LEVEL_ZERO driver on a host whose Level Zero loader finds no driver,
through the front doors a user has: the C ABI (ctypes) and the hetero CLI.

    test_no_driver.py HETERO_CLI LIBHETERO FIXTURE_DIR

The module loads (it is not a driver failure), lists no device, and every
request for LEVEL_ZERO names the loader's reason; HETERO:LEVEL_ZERO,CPU runs
on CPU unless a policy pins nodes to LEVEL_ZERO. Prints "N passed, N failed"."""
import ctypes as C
import json
import os
import subprocess
import sys
import tempfile

OK, NOT_FOUND = 0, 3
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"CHECK failed: {what}\n{detail}", file=sys.stderr)


def main():
    hetero_cli, libpath, fixtures = sys.argv[1:4]
    tiny = os.path.join(fixtures, "tiny.onnx")
    lib = C.CDLL(libpath)
    P, S, CP, CPP, PP = C.c_void_p, C.c_size_t, C.c_char_p, C.POINTER(C.c_char_p), C.POINTER(C.c_void_p)
    for name, res, args in [
        ("hetero_last_error", CP, []),
        ("hetero_free", None, [P]),
        ("hetero_core_create", C.c_int, [PP, CPP, CPP, S]),
        ("hetero_core_release", C.c_int, [P]),
        ("hetero_core_get_device_count", C.c_int, [P, C.POINTER(S)]),
        ("hetero_core_get_device_name", C.c_int, [P, CPP, S]),
        ("hetero_core_get_driver_count", C.c_int, [P, C.POINTER(S)]),
        ("hetero_core_get_driver", C.c_int, [P, CPP, CPP, CPP, S]),
        ("hetero_core_get_driver_no_device_reason", C.c_int, [P, CPP, S]),
        ("hetero_core_get_driver_failure_count", C.c_int, [P, C.POINTER(S)]),
        ("hetero_core_get_metric", C.c_int, [P, PP, CP, CP]),
        ("hetero_model_read_file", C.c_int, [PP, P, CP, CPP, C.c_void_p, C.POINTER(S), S]),
        ("hetero_model_release", C.c_int, [P]),
        ("hetero_compile", C.c_int, [PP, P, P, CP, CPP, CPP, S]),
        ("hetero_compiled_model_release", C.c_int, [P]),
    ]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    err = lambda: (lib.hetero_last_error() or b"").decode(errors="replace")

    # ---- C ABI
    core = C.c_void_p()
    check(lib.hetero_core_create(C.byref(core), None, None, 0) == OK, "core_create", err())
    n = C.c_size_t()
    lib.hetero_core_get_driver_count(core, C.byref(n))
    names, reasons = [], {}
    for i in range(n.value):
        name, reason = C.c_char_p(), C.c_char_p()
        lib.hetero_core_get_driver(core, C.byref(name), None, None, i)
        lib.hetero_core_get_driver_no_device_reason(core, C.byref(reason), i)
        names.append(name.value.decode())
        reasons[names[-1]] = reason.value.decode()
    check("LEVEL_ZERO" in names, "the LEVEL_ZERO module is loaded", f"drivers: {names}")
    lib.hetero_core_get_device_count(core, C.byref(n))
    devices = []
    for i in range(n.value):
        name = C.c_char_p()
        lib.hetero_core_get_device_name(core, C.byref(name), i)
        devices.append(name.value.decode())
    if any(d.startswith("LEVEL_ZERO") for d in devices):
        print("a Level Zero device is present: nothing to test here")
        print(f"{passed} passed, {failed} failed")
        return 0
    check("CPU" in devices, "CPU is listed", f"devices: {devices}")
    check("zeInit" in reasons.get("LEVEL_ZERO", ""), "the driver says why it has no device", str(reasons))
    check(reasons.get("CPU") == "", "a driver with devices gives no reason", str(reasons))
    value = C.c_void_p()
    st = lib.hetero_core_get_metric(core, C.byref(value), b"LEVEL_ZERO", b"FULL_DEVICE_NAME")
    check(st == NOT_FOUND and "zeInit" in err(), "metric of LEVEL_ZERO names the loader's reason", f"{st}: {err()}")

    model = C.c_void_p()
    check(lib.hetero_model_read_file(C.byref(model), core, tiny.encode(), None, None, None, 0) == OK, "read", err())
    compiled = C.c_void_p()
    st = lib.hetero_compile(C.byref(compiled), core, model, b"LEVEL_ZERO", None, None, 0)
    check(st == NOT_FOUND and "LEVEL_ZERO driver has no device" in err() and "zeInit" in err(),
          "compile on LEVEL_ZERO fails naming the reason", f"{st}: {err()}")
    st = lib.hetero_compile(C.byref(compiled), core, model, b"HETERO:LEVEL_ZERO,CPU", None, None, 0)
    check(st == OK, "HETERO:LEVEL_ZERO,CPU falls back to CPU", err())
    if st == OK:
        lib.hetero_compiled_model_release(compiled)
    lib.hetero_model_release(model)
    lib.hetero_core_release(core)

    # ---- CLI
    def hetero(*args):
        r = subprocess.run([hetero_cli, *args], capture_output=True, text=True, timeout=240)
        return r.returncode, r.stdout, r.stderr

    r = hetero("devices")
    drivers = r[1].split("Drivers:", 1)[-1]
    check(r[0] == 0 and "LEVEL_ZERO" in drivers and "failed to load" not in r[1],
          "hetero devices lists the LEVEL_ZERO module (loaded, no device)", str(r))
    check("no device: no Level Zero driver: zeInit" in drivers, "hetero devices says why LEVEL_ZERO has none", str(r))
    r = hetero("devices", "--json")
    try:
        doc = json.loads(r[1])
        check(any(d["name"] == "LEVEL_ZERO" and "zeInit" in d["no_device_reason"] for d in doc["drivers"]),
              "--json lists the LEVEL_ZERO driver with its reason", r[1])
        check(not any(d["name"].startswith("LEVEL_ZERO") for d in doc["devices"]), "--json lists no LEVEL_ZERO device")
    except (ValueError, KeyError) as e:
        check(False, "hetero devices --json parses", f"{e}: {r}")
    r = hetero("run", tiny, "--device", "LEVEL_ZERO")
    check(r[0] != 0 and "zeInit" in r[2], "hetero run --device LEVEL_ZERO fails naming the reason", str(r))
    r = hetero("run", tiny, "--device", "HETERO:LEVEL_ZERO,CPU")
    check(r[0] == 0, "hetero run --device HETERO:LEVEL_ZERO,CPU runs on CPU", str(r))
    with tempfile.TemporaryDirectory() as tmp:
        policy = os.path.join(tmp, "pin.yaml")
        with open(policy, "w") as f:
            f.write("devices: [LEVEL_ZERO, CPU]\nrules:\n  - device: LEVEL_ZERO\n    ops: [MatMul]\n")
        r = hetero("run", tiny, "--device", "HETERO:LEVEL_ZERO,CPU", "--policy", policy)
        check(r[0] != 0 and "pinned to LEVEL_ZERO" in r[2] and "zeInit" in r[2],
              "a policy pinning MatMul to LEVEL_ZERO fails naming the node and the reason", str(r))

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
