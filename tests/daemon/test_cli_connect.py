#!/usr/bin/env python3
"""`hetero ... --connect SOCKET` against a real heterod: every daemon command
of the CLI, their output and their errors, and the ways to name the daemon.

    test_cli_connect.py HETERO HETEROD DEMO_MODEL FIXTURE_DIR

Prints "N passed, N failed"."""

import json
import os
import subprocess
import sys
import tempfile
import time
import wave

hetero, heterod, demo, fixtures = sys.argv[1:5]
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"CHECK failed: {what}\n{detail}", file=sys.stderr)


def cli(socket, *args):
    return subprocess.run([hetero, "--connect", socket, *args], capture_output=True, text=True, timeout=120)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "heterod.sock")
        config = os.path.join(tmp, "heterod.yaml")
        with open(config, "w") as f:
            f.write(f"socket: {{path: {socket}}}\nmodel_dirs: [{fixtures}, {tmp}]\nmodels:\n"
                    f"  - {{name: demo, path: {demo}, shapes: {{image: [1, 3, 32, 32]}}}}\n")
        log = open(os.path.join(tmp, "log"), "w+")
        daemon = subprocess.Popen([heterod, "--config", config], stderr=log)
        try:
            for _ in range(600):
                if cli(socket, "models").returncode == 0 or daemon.poll() is not None:
                    break
                time.sleep(0.05)

            r = cli(socket, "devices")
            check(r.returncode == 0 and "CPU" in r.stdout and "Drivers:" in r.stdout, "devices", r.stdout + r.stderr)
            if "LEVEL_ZERO" in r.stdout:  # its loader is here, no GPU driver: the daemon passes the reason on
                check("no device: no Level Zero driver" in r.stdout, "devices says why LEVEL_ZERO has none", r.stdout)
            r = cli(socket, "devices", "--json")
            try:
                check(r.returncode == 0 and "CPU" in [d["name"] for d in json.loads(r.stdout)["devices"]],
                      "devices --json", r.stdout + r.stderr)
            except (ValueError, KeyError) as e:
                check(False, f"devices --json parses: {e}", r.stdout + r.stderr)
            r = cli(socket, "models")
            check(r.returncode == 0 and "demo" in r.stdout and "ready" in r.stdout, "models", r.stdout + r.stderr)
            out = os.path.join(tmp, "out")
            r = cli(socket, "run", "demo", "--output-dir", out)
            check(r.returncode == 0 and os.path.exists(os.path.join(out, "probabilities.npy")), "run", r.stdout + r.stderr)
            r = cli(socket, "info", "demo")
            check(r.returncode == 0 and "model demo: ready on CPU" in r.stdout
                  and "inputs:\n  image: float32 1x3x32x32\n" in r.stdout
                  and "outputs:\n  probabilities: float32 1x10\n" in r.stdout, "info of a served model",
                  r.stdout + r.stderr)
            r = cli(socket, "bench", "demo", "--requests", "4", "--time", "0.3")
            check(r.returncode == 0 and "latency" in r.stdout, "bench", r.stdout + r.stderr)
            r = cli(socket, "run", "nope")
            check(r.returncode == 1 and "serves no model 'nope'" in r.stderr, "run an unknown model", r.stderr)
            r = cli(socket, "run", "demo", "--config", "num_threads=1")
            check(r.returncode == 2 and "daemon's to set" in r.stderr, "compile config is refused", r.stderr)

            r = cli(socket, "load", "slow", os.path.join(fixtures, "slow.onnx"))
            check(r.returncode == 0 and "ready" in r.stdout, "load", r.stdout + r.stderr)
            r = cli(socket, "load", "secret", "/etc/shadow")
            check(r.returncode == 1 and "model_dirs" in r.stderr, "load outside model_dirs", r.stderr)
            r = cli(socket, "unload", "slow")
            check(r.returncode == 0, "unload", r.stderr)
            # A compiled blob loads as an ONNX file does; for another device it is refused.
            blob = os.path.join(tmp, "demo.blob")
            r = subprocess.run([hetero, "compile", demo, "--shape", "image=1x3x32x32", "-o", blob], capture_output=True,
                               text=True, timeout=120)
            check(r.returncode == 0, "compile the demo model", r.stderr)
            r = cli(socket, "load", "demo-blob", blob)
            check(r.returncode == 0 and "ready" in r.stdout, "load a blob", r.stdout + r.stderr)
            r = cli(socket, "run", "demo-blob")
            check(r.returncode == 0 and "output 0" in r.stdout, "run the blob's model", r.stdout + r.stderr)
            r = cli(socket, "load", "demo-blob-elsewhere", blob, "--device", "CPU.1")
            check(r.returncode == 1 and "compiled for CPU, not CPU.1" in r.stderr, "a blob for another device",
                  r.stderr)
            r = cli(socket, "unload", "slow")
            check(r.returncode == 1 and "not loaded" in r.stderr, "unload twice", r.stderr)

            r = cli(socket, "stats")
            check(r.returncode == 0 and "demo" in r.stdout and "p50 us" in r.stdout, "stats", r.stdout + r.stderr)
            r = cli(socket, "stats", "--json")
            try:
                stats = json.loads(r.stdout)
                demo_stats = [m for m in stats["models"] if m["name"] == "demo"]
                check(r.returncode == 0 and len(demo_stats) == 1 and demo_stats[0]["requests"] >= 1
                      and stats["uptime_ms"] >= 0 and stats["connections"] >= 1
                      and isinstance(demo_stats[0]["latency_p99_us"], float), "stats --json", r.stdout)
            except (ValueError, KeyError) as e:
                check(False, f"stats --json parses: {e}", r.stdout)
            r = cli(socket, "stats", "--prometheus")
            check(r.returncode == 0 and "# TYPE heterod_requests_total counter" in r.stdout
                  and 'heterod_requests_total{model="demo"} ' in r.stdout
                  and 'heterod_request_latency_seconds{model="demo",quantile="0.99"}' in r.stdout,
                  "stats --prometheus", r.stdout)
            r = cli(socket, "reload")
            check(r.returncode == 0, "reload", r.stderr)

            # --connect anywhere on the line, bare, or not at all: $HETEROD_SOCKET.
            def plain(*args, env=None):
                return subprocess.run([hetero, *args], capture_output=True, text=True, timeout=120,
                                      env={**os.environ, **(env or {})})
            r = plain("models", "--connect", socket)
            check(r.returncode == 0 and "demo" in r.stdout, "--connect after the command", r.stdout + r.stderr)
            r = plain("run", "demo", f"--connect={socket}")
            check(r.returncode == 0 and "output 0" in r.stdout, "--connect=SOCKET at the end", r.stdout + r.stderr)
            r = plain("models", env={"HETEROD_SOCKET": socket})
            check(r.returncode == 0 and "demo" in r.stdout, "models with $HETEROD_SOCKET", r.stdout + r.stderr)
            r = plain("--connect", "run", "demo", env={"HETEROD_SOCKET": socket})
            check(r.returncode == 0 and "output 0" in r.stdout, "a bare --connect: $HETEROD_SOCKET",
                  r.stdout + r.stderr)
            r = plain("--connect")
            check(r.returncode == 2 and r.stderr.startswith("usage: hetero") and "hetero hetero" not in r.stderr,
                  "--connect and no command", r.stderr)
            r = plain("models", "--connect", socket, "--connect", socket)
            check(r.returncode == 2 and "given twice" in r.stderr, "--connect twice", r.stderr)
            # stream: a WAV file through a stateful model, its state kept by the
            # daemon. accumulate.onnx sums its 4-sample chunks: each line says
            # what the daemon carried.
            samples = [1024 * (k % 7 - 3) for k in range(12)] + [512, 512]  # 3 chunks and a padded one
            pcm = os.path.join(tmp, "pcm.wav")
            with wave.open(pcm, "wb") as w:
                w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
                w.writeframes(b"".join(s.to_bytes(2, "little", signed=True) for s in samples))
            r = cli(socket, "load", "acc", os.path.join(fixtures, "accumulate.onnx"))
            check(r.returncode == 0, "load a stateful model", r.stdout + r.stderr)
            r = cli(socket, "info", "acc")
            check(r.returncode == 0 and "  totalN -> total" in r.stdout, "info lists the state pairs", r.stdout)
            r = cli(socket, "stream", "acc", pcm)
            padded = samples + [0, 0]
            sums, lines = [0.0] * 4, []
            for c in range(4):
                sums = [s + v / 32768 for s, v in zip(sums, padded[4 * c: 4 * c + 4])]
                lines.append(f"{c * 4 / 16000:.3f} y=" + ",".join(f"{s:.6g}" for s in sums))
            check(r.returncode == 0 and r.stdout.splitlines() == lines, "stream: one line per chunk, state carried",
                  r.stdout + r.stderr + "\nexpected:\n" + "\n".join(lines))
            r = cli(socket, "stream", "demo", pcm)
            check(r.returncode == 1 and "keeps no state" in r.stderr, "stream a model of no state", r.stderr)
            r = cli(socket, "stream", "acc", config)
            check(r.returncode == 1 and "not a WAV file" in r.stderr, "stream a file that is not WAV", r.stderr)
            r = plain("stream", "acc", pcm)  # without --connect, "acc" is a model file, run in process
            check(r.returncode == 1 and "acc: No such file or directory" in r.stderr,
                  "stream without --connect opens a model file", r.stderr)
            # An option the daemon's model does not take is said, not dropped.
            r = plain("run", "demo", "--device", "CPU.1", "--connect", socket)
            check(r.returncode == 0 and "warning: --device CPU.1 is ignored: heterod serves 'demo' on CPU" in r.stderr,
                  "--device with --connect warns", r.stdout + r.stderr)
            r = cli(os.path.join(tmp, "nobody.sock"), "models")
            check(r.returncode == 1 and "cannot connect to heterod at " + os.path.join(tmp, "nobody.sock") in r.stderr,
                  "no daemon", r.stderr)
        finally:
            daemon.terminate()
            check(daemon.wait(timeout=60) == 0, "heterod exits 0 on SIGTERM")
            if failed:
                log.seek(0)
                print(log.read(), file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(main())
