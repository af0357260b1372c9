#!/usr/bin/env python3
"""A run on CPU sets up no other driver's runtime.

Every driver module loads at start (so that it can be listed), but a
driver's runtime is set up on first use of its devices. So `hetero run` of a
CPU blob, or of an ONNX file on CPU, must neither enumerate OpenCL platforms
(the ICD loader then loads the platform's library, PoCL's libpocl here) nor
call zeInit (the Level Zero loader then looks for GPU driver libraries,
libze_intel_*).

Seen from outside the process with glibc's LD_DEBUG=files, which logs every
library a process loads or tries to, dlopen'ed ones included. `hetero
devices`, which uses every driver, shows that the method sees those loads.

usage: test_lazy_runtimes.py HETERO FIXTURE_DIR
Prints "N passed, N failed"; exits 77 (skipped) when the OpenCL or Level Zero
module is not built or no OpenCL platform library is installed.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

HETERO, FIXTURES = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}\n{detail}", file=sys.stderr)


def loaded_by(tmp, name, *args):
    """The libraries `hetero ARGS` loaded or tried to load (file names)."""
    log = os.path.join(tmp, name)
    env = dict(os.environ, LD_DEBUG="files", LD_DEBUG_OUTPUT=log)
    r = subprocess.run([HETERO, *args], env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"hetero {' '.join(args)}", r.stderr)
    files = set()
    for path in glob.glob(log + ".*"):
        with open(path, encoding="utf-8", errors="replace") as f:
            files.update(os.path.basename(m) for m in re.findall(r"file=(\S+)", f.read()))
    return files


def has(files, prefix):
    return any(f.startswith(prefix) for f in files)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        devices = loaded_by(tmp, "devices", "devices")
        for module in ("hetero_driver_opencl.so", "hetero_driver_level_zero.so"):
            if module not in devices:
                print(f"SKIP: {module} is not built")
                return 77
        if not has(devices, "libpocl"):
            print("SKIP: no OpenCL platform library (PoCL) is loaded even by hetero devices")
            return 77
        check(has(devices, "libze_intel"), "hetero devices calls zeInit (the loader looks for GPU drivers)",
              sorted(devices))

        blob = os.path.join(tmp, "tiny.blob")
        r = subprocess.run([HETERO, "compile", os.path.join(FIXTURES, "tiny.onnx"), "-o", blob],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "hetero compile", r.stderr)
        for what, args in (("a CPU blob", ["run", blob]),
                           ("an ONNX file on CPU", ["run", os.path.join(FIXTURES, "tiny.onnx"), "--device", "CPU"])):
            files = loaded_by(tmp, what.replace(" ", "_"), *args)
            check("hetero_driver_opencl.so" in files and "hetero_driver_level_zero.so" in files,
                  f"hetero run of {what} still loads every driver module", sorted(files))
            check(not has(files, "libpocl"), f"hetero run of {what} enumerates no OpenCL platform",
                  sorted(f for f in files if "pocl" in f))
            check(not has(files, "libze_intel"), f"hetero run of {what} does not call zeInit",
                  sorted(f for f in files if "ze_" in f))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
