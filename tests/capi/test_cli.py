#!/usr/bin/env python3
"""The hetero CLI end to end, as a user runs it: devices, run (files, random
inputs, dynamic shapes, blobs, HETERO), bench, partition, and the errors a
user would hit.

    test_cli.py HETERO LIBHETERO FIXTURE_DIR

LIBHETERO is used only to write a compiled blob for `hetero run BLOB`.
Prints "N passed, N failed"."""

import ast
import ctypes as C
import json
import os
import shutil
import pty
import struct
import subprocess
import sys
import tempfile
import wave

passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"CHECK failed: {what}\n{detail}", file=sys.stderr)


def hetero(*args):
    r = subprocess.run([HETERO, *args], capture_output=True, text=True, timeout=240)
    return r.returncode, r.stdout, r.stderr


def hetero_on_terminal(*args):
    """Runs hetero with stderr on a pseudo-terminal (stdout a pipe), as a user
    at a terminal runs it. Returns (exit, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([HETERO, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the program has closed its side
            break
        if not data:
            break
        seen += data
    os.close(master)
    out = p.stdout.read().decode()
    p.stdout.close()
    return p.wait(timeout=240), out, seen.decode(errors="replace")


def test_progress(work, model):
    """hetero compile draws a progress line on a terminal and clears it;
    through a pipe or with --quiet it draws nothing."""
    blob = os.path.join(work, "progress.blob")
    r = hetero_on_terminal("compile", model, "--device", "CPU", "-o", blob)
    check(r[0] == 0 and "compiled" in r[1], "compile on a terminal", show(r))
    # One redrawn line: "\rhetero: STAGE DONE/TOTAL (P%) S s", cleared at the end.
    check("\rhetero: reading model" in r[2] and "building CPU kernels" in r[2] and "%)" in r[2],
          "compile on a terminal shows its progress", show(r))
    check(r[2].rstrip(" ").endswith("\r") and "\n" not in r[2], "the progress line is cleared at the end", show(r))
    check(os.path.getsize(blob) > 0, "the blob is written")
    r = hetero_on_terminal("compile", model, "--device", "CPU", "-o", blob, "--quiet")
    check(r[0] == 0 and "compiled" in r[1] and r[2] == "", "compile --quiet draws nothing", show(r))
    r = hetero("compile", model, "--device", "CPU", "-o", blob)
    check(r[0] == 0 and r[2] == "", "compile through a pipe draws nothing", show(r))
    # run compiles too (its line is redrawn at most 10 times a second, so
    # only the first stage is sure to be seen).
    r = hetero_on_terminal("run", model, "--device", "CPU")
    check(r[0] == 0 and "\rhetero: reading model" in r[2], "run on a terminal shows the compile's progress", show(r))
    r = hetero_on_terminal("run", model, "--device", "CPU", "--quiet")
    check(r[0] == 0 and r[2] == "", "run --quiet draws nothing", show(r))
    # An error on a terminal starts on a line of its own.
    r = hetero_on_terminal("compile", model, "--device", "CPU", "--config", "no_such_option=1", "-o", blob)
    at = r[2].find("hetero: error:")
    check(r[0] == 1 and at >= 0 and (at == 0 or r[2][at - 1] == "\r"),
          "an error is not written over the progress line", show(r))
    for cmd in ("run", "bench", "partition", "compile"):
        r = hetero(cmd, "--help")
        check(r[0] == 0 and "--quiet" in r[1], f"{cmd} --help documents --quiet", show(r))


def show(r):
    return f"  exit {r[0]}\n  stdout: {r[1]}\n  stderr: {r[2]}"


def read_npy_f32(path):
    """Just enough of .npy for float32 outputs: (shape, values)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", "no magic"
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + hlen
    header = ast.literal_eval(data[start - hlen:start].decode("latin1"))
    assert header["descr"] == "<f4" and not header["fortran_order"]
    n = len(data[start:]) // 4
    return tuple(header["shape"]), list(struct.unpack(f"<{n}f", data[start:]))


def write_npy_f32(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}f", *values))


def make_blob(lib_path, model, blob):
    lib = C.CDLL(lib_path)
    P = C.c_void_p
    core, m, cm = P(), P(), P()
    ok = lib.hetero_core_create(C.byref(core), None, None, C.c_size_t(0)) == 0
    ok = ok and lib.hetero_model_read_file(C.byref(m), core, model.encode(), None, None, None, C.c_size_t(0)) == 0
    ok = ok and lib.hetero_compile(C.byref(cm), core, m, b"CPU", None, None, C.c_size_t(0)) == 0
    ok = ok and lib.hetero_compiled_model_export_file(cm, blob.encode()) == 0
    for release, h in (("hetero_compiled_model_release", cm), ("hetero_model_release", m), ("hetero_core_release", core)):
        getattr(lib, release)(h)
    return ok


def main(lib_path, fixtures):
    tiny = os.path.join(fixtures, "tiny.onnx")
    dynamic = os.path.join(fixtures, "tiny_dynamic.onnx")
    x_pb = os.path.join(fixtures, "tiny_input.pb")
    work = tempfile.mkdtemp(prefix="hetero-cli-")

    r = hetero("--version")
    check(r[0] == 0 and r[1].startswith("hetero ") and "C API" in r[1], "--version", show(r))
    for cmd in ("devices", "info", "run", "bench", "partition", "compile"):
        r = hetero(cmd, "--help")
        check(r[0] == 0 and r[1].startswith("usage: hetero " + cmd), f"{cmd} --help", show(r))

    r = hetero("devices")
    check(r[0] == 0 and "CPU" in r[1] and "OPTIMIZATION_CAPABILITIES" in r[1], "devices", show(r))
    r = hetero("devices", "--json")
    try:
        d = json.loads(r[1])
        check(d["devices"][0]["name"] == "CPU" and d["devices"][0]["full_name"], "devices --json", show(r))
        check("OPTIMIZATION_CAPABILITIES" in d["devices"][0]["metrics"], "devices --json metrics", show(r))
        check(d["drivers"][0]["name"] == "CPU" and isinstance(d["driver_failures"], list), "drivers", show(r))
    except (ValueError, KeyError, IndexError) as e:
        check(False, f"devices --json parses: {e}", show(r))
    r = hetero("devices", "--driver-p=/nonexistent", "--js")  # unique abbreviations, as getopt_long takes them
    check(r[0] == 0 and r[1].startswith("{"), "abbreviated options", show(r))
    r = hetero("devices", "--driver-path", "/nonexistent/hetero_driver_x.so")
    check(r[0] == 0, "devices with a driver path that has nothing", show(r))

    # info: a model described before it runs, nothing compiled.
    r = hetero("info", dynamic)
    check(r[0] == 0 and "inputs:\n  x: float32 ?x4\n" in r[1] and "outputs:\n  y: float32 ?x3\n" in r[1]
          and "opsets ai.onnx" in r[1] and "CPU: runs all 3 nodes" in r[1], "info of a dynamic model", show(r))
    r = hetero("info", dynamic, "--shape", "x=2x4", "--device", "CPU", "--device", "GPU")
    check(r[0] == 0 and "x: float32 2x4" in r[1] and "y: float32 2x3" in r[1] and "CPU: runs all 3 nodes" in r[1]
          and "GPU: cannot say: device GPU: no GPU driver is loaded (devices: CPU" in r[1], "info --device", show(r))
    r = hetero("info", dynamic, "--device", "OPENCL")
    if "no OPENCL driver" not in r[1]:  # PoCL here: a dynamic dim keeps the GPU driver off, and it says why
        check(r[0] == 0 and "OPENCL: runs 0 of 3 nodes; not:\n    MatMul_0 (MatMul): output 'xw' has no static shape"
              in r[1], "info says why a device runs no node", show(r))

    # A pipeline (docs/streams.md): info, run and compile take its file as a model's.
    shutil.copy(dynamic, os.path.join(work, "tiny_dynamic.onnx"))
    pipeline = os.path.join(work, "doubled.yaml")
    with open(pipeline, "w") as f:
        f.write("inputs: {x: {dtype: float32, shape: [1, 4]}}\n"
                "stages:\n  - {name: m, model: tiny_dynamic.onnx, inputs: {x: x}}\n"
                "  - {name: twice, scale: {input: m.y, a: 2}}\noutputs: {y2: twice}\n")
    r = hetero("info", pipeline)
    check(r[0] == 0 and "a pipeline, its models compiled for CPU" in r[1] and "x: float32 1x4" in r[1]
          and "y2: float32 ?x3" in r[1], "info of a pipeline", show(r))
    r = hetero("run", pipeline)
    check(r[0] == 0 and "output 0 'y2': float32 1x3" in r[1], "run of a pipeline", show(r))
    # stream in process: a pipeline whose window makes it a sequence, a WAV file through it.
    framed = os.path.join(work, "framed.yaml")
    with open(framed, "w") as f:
        f.write("inputs: {audio: {dtype: float32, shape: [1, -1]}}\n"
                "stages:\n  - {name: frames, window: {input: audio, axis: 1, size: 4, step: 4}}\n"
                "  - {name: m, model: tiny_dynamic.onnx, inputs: {x: frames}}\n"
                "  - {name: ys, concat: {input: m.y, axis: 0}}\noutputs: {ys: ys}\n")
    wav = os.path.join(work, "ramp.wav")
    with wave.open(wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(struct.pack("<20h", *range(0, 20000, 1000)))
    r = hetero("stream", framed, wav, "--chunk", "6")
    lines = r[1].splitlines()
    check(r[0] == 0 and len(lines) == 4 and lines[0].startswith("0.000 ys=") and lines[0].count(",") == 2
          and lines[1].count(",") == 5 and lines[2].count(",") == 2, "stream a WAV file through a pipeline", show(r))
    r = hetero("compile", pipeline, "-o", os.path.join(work, "doubled.blob"))
    check(r[0] == 1 and "is a pipeline, which is not exported as a blob" in r[2], "a pipeline is not compiled to a blob",
          show(r))

    # run: a .pb input bound by position, outputs written in graph order.
    out = os.path.join(work, "out")
    r = hetero("run", tiny, "--input", x_pb, "--output-dir", out)
    check(r[0] == 0 and "output 0 'y': float32 1x3" in r[1], "run with a .pb input", show(r))
    if r[0] == 0:
        check(read_npy_f32(os.path.join(out, "y.npy")) == ((1, 3), [5.5, 5.0, 0.0]), "y.npy, named after the output")
        check(sorted(os.listdir(out)) == ["y.npy"], "exactly one output file", str(os.listdir(out)))

    # run: a .npy input by name on the dynamic model; its shape fixes N.
    x_npy = os.path.join(work, "x.npy")
    write_npy_f32(x_npy, (2, 4), [1, 2, 3, 4, 1, 2, 3, 0])
    r = hetero("run", dynamic, "--input", "x=" + x_npy, "--output-dir", out, "--config", "num_threads=1")
    check(r[0] == 0, "run the dynamic model with a named .npy input", show(r))
    if r[0] == 0:
        check(read_npy_f32(os.path.join(out, "y.npy")) == ((2, 3), [5.5, 5, 0, 1.5, 1, 3.5]), "batch of 2")

    # --output NAME=FILE writes one output by name, also over the file an
    # --input of the same run read (how a shell loop carries a state).
    carried = os.path.join(work, "carried.npy")
    write_npy_f32(carried, (1, 4), [1, 2, 3, 4])
    r = hetero("run", tiny, "--input", "x=" + carried, "--output", "y=" + carried)
    check(r[0] == 0 and "-> " + carried in r[1], "run with --output over its own input", show(r))
    if r[0] == 0:
        check(read_npy_f32(carried) == ((1, 3), [5.5, 5.0, 0.0]), "--output replaced the input file")

    # Random inputs: static works; dynamic needs --shape, and the error names the input.
    r = hetero("run", tiny)
    check(r[0] == 0 and "(random)" in r[1], "run with random inputs", show(r))
    r = hetero("run", dynamic)
    check(r[0] == 1 and "hetero: error:" in r[2] and "'x'" in r[2] and "--shape" in r[2], "dynamic needs --shape", show(r))
    r = hetero("run", dynamic, "--shape", "x=3x4")
    check(r[0] == 0 and "output 0 'y': float32 3x3" in r[1], "run with --shape", show(r))

    # A compiled blob is imported instead of compiled.
    blob = os.path.join(work, "tiny.blob")
    if make_blob(lib_path, tiny, blob):
        r = hetero("run", blob, "--input", x_pb, "--output-dir", out)
        check(r[0] == 0 and "imported" in r[1], "run a blob", show(r))
        if r[0] == 0:
            check(read_npy_f32(os.path.join(out, "y.npy"))[1] == [5.5, 5.0, 0.0], "blob output")
        # The library tells the blob from ONNX; it is refused for another device or shape.
        r = hetero("run", blob, "--device", "CPU.1")
        check(r[0] == 1 and "compiled for CPU, not CPU.1" in r[2] and "tiny.blob" in r[2], "a blob for another device",
              show(r))
        r = hetero("run", blob, "--shape", "x=2x4")
        check(r[0] == 1 and "input 'x' of the blob is 1x4, not 2x4" in r[2], "a blob with other shapes", show(r))
    else:
        check(False, "writing a blob through libhetero")

    # compile: a blob run imports, byte-identical when made twice, described by blob info.
    blob_a, blob_b = os.path.join(work, "a.blob"), os.path.join(work, "b.blob")
    r = hetero("compile", tiny, "--device", "CPU", "--config", "optimize=true", "-o", blob_a)
    check(r[0] == 0 and blob_a in r[1], "compile", show(r))
    r = hetero("compile", tiny, "--config", "optimize=true", "--output", blob_b)
    check(r[0] == 0 and open(blob_a, "rb").read() == open(blob_b, "rb").read(), "compiling twice gives the same bytes", show(r))
    r = hetero("blob", "info", blob_a)
    check(r[0] == 0 and "device:          CPU\n" in r[1] and "config:          optimize=true" in r[1]
          and "model_sha256:" in r[1] and "sections:        1" in r[1], "blob info", show(r))
    r = hetero("run", blob_a, "--input", x_pb, "--output-dir", out)
    check(r[0] == 0 and "imported" in r[1], "run a compiled blob", show(r))
    if r[0] == 0:
        check(read_npy_f32(os.path.join(out, "y.npy"))[1] == [5.5, 5.0, 0.0], "compiled blob output")
    data = bytearray(open(blob_a, "rb").read())
    data[-5] ^= 0x40
    with open(blob_b, "wb") as f:
        f.write(data)
    r = hetero("run", blob_b)
    check(r[0] == 1 and "checksum" in r[2], "a damaged blob is refused", show(r))
    r = hetero("blob", "info", blob_b)
    check(r[0] == 1 and "b.blob" in r[2] and "checksum" in r[2], "blob info of a damaged blob", show(r))

    # --cache-dir: two processes compiling into one cache at once both succeed
    # and leave one whole entry; a damaged entry is refused, said so, replaced.
    cache = os.path.join(work, "cache")
    runs = [subprocess.Popen([HETERO, "run", tiny, "--input", x_pb, "--cache-dir", cache], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in runs]
    check(all(r[0] == 0 and "5.5 5 0" in r[1] for r in results), "two processes share a cache", str(results))
    entries = [f for f in os.listdir(cache) if f.endswith(".blob")] if os.path.isdir(cache) else []
    check(len(entries) == 1 and sorted(os.listdir(cache)) == entries, "one entry, no temporary files", str(entries))
    if entries:
        entry = os.path.join(cache, entries[0])
        check(os.stat(cache).st_mode & 0o777 == 0o750 and os.stat(entry).st_mode & 0o777 == 0o640,
              "cache permissions 0750/0640", oct(os.stat(entry).st_mode))
        check(hetero("blob", "info", entry)[0] == 0, "the entry is a valid blob")
        data = bytearray(open(entry, "rb").read())
        data[len(data) // 2] ^= 1
        with open(entry, "wb") as f:
            f.write(data)
        r = hetero("run", tiny, "--input", x_pb, "--cache-dir", cache)
        check(r[0] == 0 and "refused" in r[2] and entry in r[2] and "checksum" in r[2], "a damaged entry is logged", show(r))
        check(hetero("blob", "info", entry)[0] == 0, "and replaced by a valid one")
        # An entry made from another model (the dynamic one, fixed to 1x4: same
        # inputs, outputs and device) is refused by its model hash.
        other = os.path.join(work, "other.blob")
        check(hetero("compile", dynamic, "--shape", "x=1x4", "-o", other)[0] == 0, "compile another model")
        with open(other, "rb") as src, open(entry, "wb") as dst:
            dst.write(src.read())
        r = hetero("run", tiny, "--input", x_pb, "--cache-dir", cache)
        check(r[0] == 0 and "refused" in r[2] and "another model" in r[2], "an entry of another model is refused", show(r))
    # Without --input, run asks the cache before reading the model at all
    # (hetero_compile_file); the same entries, the same refusals.
    quick = os.path.join(work, "quick")
    for verb in ("compiled for CPU", "imported from the cache for CPU"):  # a hit says so
        r = hetero("run", tiny, "--cache-dir", quick)
        check(r[0] == 0 and "(random)" in r[1] and f"model {tiny}: {verb} in" in r[1],
              f"run through hetero_compile_file: {verb}", show(r))
    entries = [os.path.join(quick, f) for f in os.listdir(quick)] if os.path.isdir(quick) else []
    check(len(entries) == 1, "one entry from hetero_compile_file", str(entries))
    if entries:
        with open(entries[0], "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 1]))
        r = hetero("run", tiny, "--cache-dir", quick)
        check(r[0] == 0 and "refused" in r[2], "hetero_compile_file refuses a damaged entry", show(r))
        check(hetero("blob", "info", entries[0])[0] == 0, "and replaces it")
    r = hetero("run", tiny, "--cache-dir", tiny)
    check(r[0] == 1 and "not a directory" in r[2], "a cache dir that is a file", show(r))

    # bench --json: one object with the documented keys.
    r = hetero("bench", tiny, "--iterations", "40", "--requests", "3", "--warmup", "1", "--json")
    try:
        b = json.loads(r[1])
        check(b["iterations"] == 40 and b["requests"] == 3 and b["device"] == "CPU", "bench --json", show(r))
        lat = b["latency_ms"]
        check(0 < lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] and lat["mean"] > 0, "latency order", show(r))
        check(b["throughput_fps"] > 0, "throughput", show(r))
    except (ValueError, KeyError) as e:
        check(False, f"bench --json parses: {e}", show(r))
    r = hetero("bench", tiny, "--time", "0.3")
    check(r[0] == 0 and "throughput" in r[1], "bench --time", show(r))

    # A mixed load: two models at once, the first flat out with 2 requests,
    # the second (its own --shape) at a fixed 50/s; each alone, then together.
    r = hetero("bench", tiny, "--requests", "2", "--and", dynamic, "--shape", "x=2x4", "--rate", "50",
               "--alone", "--time", "0.5", "--json")
    try:
        b = json.loads(r[1])
        ms = b["models"]
        check(r[0] == 0 and b["time_s"] == 0.5 and [m["model"] for m in ms] == [tiny, dynamic], "mixed bench --json",
              show(r))
        check([m["requests"] for m in ms] == [2, 1] and ms[0]["rate"] is None and ms[1]["rate"] == 50,
              "mixed bench: each model's own options", show(r))
        for m in ms:
            for phase in ("alone", "together"):
                lat, fps = m[phase]["latency_ms"], m[phase]["throughput_fps"]
                check(0 < lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"] and lat["mean"] > 0
                      and fps > 0,
                      f"mixed bench: {m['model']} {phase}", show(r))
            ratios = m["ratios"]
            check(ratios["p99"] > 0 and ratios["throughput"] > 0, f"mixed bench: {m['model']} ratios", show(r))
        # 50/s for 0.5 s: 25 starts on the schedule, never faster than it.
        for phase in ("alone", "together"):
            check(24 <= ms[1][phase]["inferences"] <= 26 and ms[1][phase]["throughput_fps"] <= 51,
                  f"mixed bench: the rate holds {phase}", show(r))
    except (ValueError, KeyError, TypeError) as e:
        check(False, f"mixed bench --json parses: {e}", show(r))
    r = hetero("bench", tiny, "--and", tiny, "--rate", "20", "--time", "0.2", "--alone")
    check(r[0] == 0 and "together/alone" in r[1] and r[1].count("tiny.onnx") == 4 and r[1].count("max ms") == 2,
          "mixed bench table, with the maximum alone and together", show(r))

    # HETERO: the CPU driver listed as two devices, CPU.1 kept to MatMul.
    split = ("--device", "HETERO:CPU.1,CPU", "--config", "CPU.device_count=2", "--config", "CPU.1:ops=MatMul")
    r = hetero("run", tiny, "--input", x_pb, "--output-dir", out, *split)
    check(r[0] == 0 and "HETERO:CPU.1,CPU (2 submodels on CPU.1, CPU)" in r[1], "run on HETERO", show(r))
    if r[0] == 0:
        check(read_npy_f32(os.path.join(out, "y.npy"))[1] == [5.5, 5.0, 0.0], "HETERO output")
    r = hetero("bench", tiny, *split, "--iterations", "30", "--requests", "2", "--json")
    check(r[0] == 0 and json.loads(r[1] or "{}").get("device") == "HETERO:CPU.1,CPU", "bench on HETERO", show(r))
    hblob = os.path.join(work, "hetero.blob")
    r = hetero("compile", tiny, *split, "-o", hblob)
    check(r[0] == 0 and "2 submodels" in r[1], "compile for HETERO", show(r))
    r = hetero("blob", "info", hblob)
    check(r[0] == 0 and "driver:          HETERO" in r[1] and "part1 (CPU)" in r[1], "HETERO blob info", show(r))
    r = hetero("run", hblob, "--config", "CPU.device_count=2", "--input", x_pb, "--output-dir", out)
    check(r[0] == 0 and "imported for HETERO:CPU.1,CPU" in r[1], "run a HETERO blob", show(r))
    if r[0] == 0:
        check(read_npy_f32(os.path.join(out, "y.npy"))[1] == [5.5, 5.0, 0.0], "HETERO blob output")
    r = hetero("run", hblob)
    check(r[0] == 1 and "CPU.1" in r[2], "a HETERO blob needs its devices", show(r))
    hcache = os.path.join(work, "hcache")
    for _ in range(2):
        r = hetero("run", tiny, *split, "--input", x_pb, "--cache-dir", hcache)
        check(r[0] == 0 and "5.5 5 0" in r[1], "HETERO through a cache", show(r))
    entries = [os.path.join(hcache, f) for f in os.listdir(hcache)] if os.path.isdir(hcache) else []
    check(len(entries) == 1 and "driver:          HETERO" in hetero("blob", "info", *entries[:1])[1],
          "one HETERO cache entry", str(entries))

    # partition: JSON in execution order, a DOT file that Graphviz renders,
    # a policy's pins honoured, and a device that is not here planned for.
    policy = os.path.join(work, "policy.yaml")
    with open(policy, "w") as f:
        f.write("devices: [CPU.1, CPU]\nrules:\n  - device: CPU\n    ops: [Relu]\n  - device: CPU\n    ops: [Softmax]\n")
    dot = os.path.join(work, "plan.dot")
    r = hetero("partition", tiny, "--device", "HETERO:CPU.1,CPU", "--config", "CPU.device_count=2",
               "--policy", policy, "--json", "--dot", dot)
    try:
        plan = json.loads(r[1])
        check([s["device"] for s in plan["subgraphs"]] == ["CPU.1", "CPU"], "partition --json devices", show(r))
        check([len(s["nodes"]) for s in plan["subgraphs"]] == [2, 1] and plan["transfers"] == 1, "partition --json", show(r))
        check(plan["subgraphs"][0]["inputs"] == ["x"] and plan["subgraphs"][1]["outputs"] == ["y"], "partition tensors", show(r))
        check(len(plan["warnings"]) == 1 and "policy.yaml:5" in plan["warnings"][0], "unused rule warned", show(r))
    except (ValueError, KeyError) as e:
        check(False, f"partition --json parses: {e}", show(r))
    png = os.path.join(work, "plan.png")
    d = subprocess.run(["dot", "-Tpng", dot, "-o", png], capture_output=True, text=True)
    check(d.returncode == 0 and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "dot -Tpng renders the plan", d.stderr)
    offline = os.path.join(work, "offline.yaml")
    with open(offline, "w") as f:
        f.write("devices: [NPU, CPU]\nrules:\n  - {device: NPU, ops: [MatMul, Add]}\n")
    r = hetero("partition", tiny, "--device", "HETERO:NPU,CPU", "--policy", offline)
    check(r[0] == 0 and "subgraph 0 on NPU: 2 nodes" in r[1] and "subgraph 1 on CPU: 1 nodes" in r[1],
          "partition for a device that is not here", show(r))
    r = hetero("run", tiny, "--device", "HETERO:NPU,CPU", "--policy", offline)
    check(r[0] == 1 and "NPU" in r[2], "running needs the device", show(r))
    with open(offline, "w") as f:
        f.write("devices: [NPU, CPU]\nrules:\n  - {device: NPU, opz: [MatMul]}\n")
    r = hetero("partition", tiny, "--device", "HETERO:NPU,CPU", "--policy", offline)
    check(r[0] == 1 and "offline.yaml:3" in r[2] and "opz" in r[2], "a policy error names file:line", show(r))
    r = hetero("partition", tiny, "--device", "CPU")
    check(r[0] == 2 and "HETERO" in r[2], "partition wants a HETERO device", show(r))

    # Errors a user hits: non-zero exit, "hetero: error:", the thing named.
    cases = [
        (("run",), 2, "no MODEL"),
        (("run", tiny, "--bogus"), 2, "--bogus"),
        (("run", os.path.join(work, "missing.onnx")), 1, "missing.onnx"),
        (("run", tiny, "--device", "NOPE"), 1, "NOPE"),
        # A typo inside HETERO is not planned around: it names what there is.
        (("run", tiny, "--device", "HETERO:OPNECL,CPU"), 1, "no OPNECL driver is loaded (devices: CPU"),
        (("run", tiny, "--device", "GPU"), 1, "heterod names GPUs by their API: OPENCL, LEVEL_ZERO"),
        (("run", tiny, "--input", os.path.join(work, "none.npy")), 1, "none.npy"),
        (("run", tiny, "--input", "nope=" + x_npy), 1, "no input 'nope'"),
        (("run", tiny, "--input", x_pb, "--input", x_pb), 1, "only 1 input"),
        (("run", tiny, "--input", x_npy), 1, "dimension 0"),  # 2x4 into the static 1x4 model
        (("run", tiny, "--shape", "x=1xq"), 2, "NAME=DIMS"),
        (("run", tiny, "--output", "y"), 2, "NAME=FILE"),
        (("run", tiny, "--output", "nope=" + x_npy), 1, "no output 'nope'"),
        (("run", tiny, "--output", "y=" + x_npy, "--output", "y=" + x_npy), 1, "given twice"),
        (("run", tiny, "--config", "no_such_option=1"), 1, "no_such_option"),
        (("bench", tiny, "--iterations", "0"), 2, "at least 1"),
        (("bench", tiny, "--iterations", "5", "--time", "1"), 2, "not both"),
        (("bench", tiny, "--and", tiny, "--iterations", "5"), 2, "--iterations is for one model"),
        (("bench", tiny, "--and"), 2, "option --and needs a value"),
        (("bench", "--and", tiny), 2, "--and follows a MODEL"),
        (("bench", tiny, "--rate", "0"), 2, "--rate"),
        (("frobnicate",), 2, "unknown command"),
        # The options table, read by getopt_long: abbreviations, values, flags.
        (("bench", tiny, "--a", tiny), 2, "ambiguous option '--a' (--and, --alone)"),
        (("devices", "--json=yes"), 2, "option '--json' takes no value"),
        (("run", tiny, "--device"), 2, "option --device needs a value"),
        (("compile", tiny, "--input", x_pb, "-o", "x.blob"), 2, "unknown option '--input'"),
    ]
    for args, code, needle in cases:
        r = hetero(*args)
        check(r[0] == code and "hetero: error:" in r[2] and needle in r[2], f"hetero {' '.join(args)}", show(r))
    bad_npy = os.path.join(work, "bad.npy")
    with open(bad_npy, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\xff\x00{'descr'")
    r = hetero("run", tiny, "--input", bad_npy)
    check(r[0] == 1 and "bad.npy" in r[2] and "header" in r[2], "malformed .npy", show(r))

    test_progress(work, tiny)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: test_cli.py HETERO LIBHETERO FIXTURE_DIR", file=sys.stderr)
        sys.exit(2)
    HETERO = sys.argv[1]
    main(sys.argv[2], sys.argv[3])
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
