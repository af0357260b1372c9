#!/usr/bin/env node
// heterod against ONNX Runtime on the real models of tests/models/model_set.js,
// side by side. For each model, rounds alternate between
//   hetero bench MODEL --device D --shape NAME=DIMS --warmup W --iterations N --json
// for each device D given (CPU by default; --device again adds a row, so that
// OPENCL stands next to CPU) and ONNX Runtime (onnxruntime-node, intraOpNumThreads 2, interOpNumThreads 1)
// doing the same warm-up and iterations on the same input shape, each run()
// timed with process.hrtime. A streaming model (STREAMING: Silero VAD) is
// timed on one call, one 32 ms chunk of speech with the state inputs and
// sample rate it takes, given to both sides as the same .npy files
// (hetero bench --input NAME=FILE). Alternating spreads drift of a shared machine
// (other load, thermal state) over both sides instead of one.
//
// With --quantizer (tests/models/quantize_model), the models of
// tests/models/int8_models.js are also quantised (into --int8-dir) and each
// round alternates four runs: heterod and ONNX Runtime on the float32 file,
// then both on the int8 file; the table then adds each side's int8/float32
// ratio.
//
// --no-spin makes idle worker threads sleep instead of spinning on both
// sides (OMP_WAIT_POLICY=passive for heterod's OpenMP threads,
// session.intra_op.allow_spinning=0 for ONNX Runtime's pool): on a machine
// other work keeps busy, spinning threads fight that work for the cores and
// the figures then measure the fight (it costs a little latency on an idle
// machine).
//
//   node bench_models.js [--hetero PATH] [--rounds R] [--iterations N] [--warmup W]
//                        [--device D]... [--only NAME] [--json] [--quantizer PATH --int8-dir DIR]
//                        [--no-spin]
//
// hetero bench keeps each device's compiled model in a temporary --cache-dir:
// the first round compiles (and tunes, on a GPU), the others import the blob,
// which neither compiles kernels nor tunes. A device that cannot run a model
// whole shows why instead of a figure (HETERO:OPENCL,CPU runs it split).
//
// The reported figure of each side is the median over rounds of each round's
// median latency; min and max of the round medians show the spread.
'use strict';

const fs = require('fs');
const { spawnSync } = require('child_process');
const os = require('os');
const path = require('path');
const { writeNpy } = require('../models/npy.js');
const { MODELS, STREAMING, cacheDir, loadOrt, modelPath, makeInputs, shapeText, audioChunks, zeroStates } =
  require('../models/model_set.js');
const { INT8_MODELS, int8Model } = require('../models/int8_models.js');

function usage(why) {
  console.error(`bench_models: ${why}\n` +
    'usage: node bench_models.js [--hetero PATH] [--rounds R] [--iterations N] [--warmup W] [--device D]... [--only NAME] [--json]\n' +
    '                            [--quantizer PATH --int8-dir DIR] [--no-spin]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { hetero: process.env.HETERO_BIN || '', rounds: 3, iterations: 20, warmup: 3, devices: [], only: '', json: false,
    quantizer: '', int8Dir: '', noSpin: false };
  const int = (flag, text, min) => {
    const v = Number(text);
    if (!Number.isInteger(v) || v < min) usage(`${flag} wants an integer >= ${min}, not '${text}'`);
    return v;
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--hetero') o.hetero = value();
    else if (a === '--rounds') o.rounds = int(a, value(), 1);
    else if (a === '--iterations') o.iterations = int(a, value(), 1);
    else if (a === '--warmup') o.warmup = int(a, value(), 0);
    else if (a === '--device') o.devices.push(value());
    else if (a === '--only') o.only = value();
    else if (a === '--json') o.json = true;
    else if (a === '--quantizer') o.quantizer = value();
    else if (a === '--int8-dir') o.int8Dir = value();
    else if (a === '--no-spin') o.noSpin = true;
    else usage(`unknown argument ${a}`);
  }
  if (!o.devices.length) o.devices.push('CPU');
  if (!o.hetero) usage('no hetero executable given (--hetero or $HETERO_BIN)');
  if (!fs.existsSync(o.hetero)) usage(`${o.hetero} does not exist`);
  if (o.quantizer && !o.int8Dir) usage('--quantizer needs --int8-dir');
  if (o.quantizer && !fs.existsSync(o.quantizer)) usage(`${o.quantizer} does not exist`);
  return o;
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// One `hetero bench` run on `device`; its median latency in ms.
function heteroRound(inputArgs, file, device, o) {
  const args = ['bench', file, '--device', device, '--cache-dir', o.cacheDir, ...inputArgs];
  args.push('--warmup', String(o.warmup), '--iterations', String(o.iterations), '--json');
  const env = o.noSpin ? { ...process.env, OMP_WAIT_POLICY: 'passive' } : process.env;
  const r = spawnSync(o.hetero, args, { encoding: 'utf8', timeout: 600e3, env });
  if (r.error) throw new Error(`cannot run ${o.hetero}: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`hetero ${args.join(' ')} exited with ${r.signal || r.status}: ${(r.stderr || '').trim().slice(-400)}`);
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch (e) {
    throw new Error(`hetero bench printed no JSON: ${r.stdout.slice(0, 200)}`);
  }
  const ms = report && report.latency_ms && report.latency_ms.median;
  if (typeof ms !== 'number') throw new Error(`hetero bench JSON has no latency_ms.median: ${r.stdout.slice(0, 200)}`);
  return ms;
}

// One ONNX Runtime round on an open session; its median latency in ms.
async function ortRound(session, feeds, o) {
  for (let i = 0; i < o.warmup; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < o.iterations; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

function summary(rounds) {
  return { median_ms: median(rounds), min_ms: Math.min(...rounds), max_ms: Math.max(...rounds), rounds };
}

// A model's inputs both ways: ONNX Runtime's feeds and hetero bench's
// arguments (shapes for random data, or .npy files under `dir`).
async function benchInputs(model, ctx, dir) {
  const feeds = {};
  if (!model.chunk) {
    const inputs = await makeInputs(model, ctx);
    for (const input of inputs) feeds[input.name] = new ctx.ort.Tensor('float32', input.data, input.shape);
    return {
      feeds,
      args: model.inputs.flatMap((i) => ['--shape', `${i.name}=${shapeText(i.shape)}`]),
      label: inputs.map((i) => `${i.name}=${shapeText(i.shape)}`).join(' '),
    };
  }
  const chunk = audioChunks(model, 100, 4000 + STREAMING.indexOf(model))[50];
  const args = [];
  for (const t of [chunk, ...model.fixed, ...zeroStates(model)]) {
    feeds[t.name] = new ctx.ort.Tensor(t.dtype, t.data, t.shape);
    const file = path.join(dir, `${model.name}.${t.name}.npy`);
    writeNpy(file, t);
    args.push('--input', `${t.name}=${file}`);
  }
  return { feeds, args, label: `${chunk.name}=${shapeText(chunk.shape)} + state, one call` };
}

async function benchModel(model, o, ctx, dir) {
  const file = modelPath(ctx.cache, model);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing (run scripts/setup.sh --test-data)`);
  const { feeds, args, label } = await benchInputs(model, ctx, dir);
  // The files measured: the float32 model, and its int8 version if asked for.
  const variants = [{ precision: 'float32', file }];
  if (o.quantizer && INT8_MODELS.includes(model))
    variants.push({ precision: 'int8', file: (await int8Model(model, ctx, o.quantizer, o.int8Dir)).file });
  for (const v of variants) {
    // Session creation (ORT's compile) is outside the timing, as hetero bench
    // keeps compilation out of its figures.
    v.session = await ctx.ort.InferenceSession.create(v.file, {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      ...(o.noSpin ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
    });
    v.hetero = Object.fromEntries(o.devices.map((d) => [d, []]));
    v.failed = {};  // device: why it cannot run the file
    v.ort = [];
  }
  for (let r = 0; r < o.rounds; ++r) {
    for (const v of variants) {
      for (const d of o.devices) {
        if (v.failed[d]) continue;
        try {
          v.hetero[d].push(heteroRound(args, v.file, d, o));
        } catch (e) {
          v.failed[d] = e.message;
        }
      }
      v.ort.push(await ortRound(v.session, feeds, o));
      if (!o.json) {
        const figures = o.devices.map((d) => `${d} ${v.failed[d] ? 'error' : v.hetero[d][r].toFixed(2) + ' ms'}`);
        process.stderr.write(`  ${model.name} ${v.precision} round ${r + 1}/${o.rounds}: ` +
          `heterod ${figures.join(', ')}; ORT ${v.ort[r].toFixed(2)} ms\n`);
      }
    }
  }
  return variants.flatMap((v) => o.devices.map((d) => {
    const t = summary(v.ort);
    const row = { model: model.name, precision: v.precision, device: d, input: label };
    if (v.failed[d]) return { ...row, error: v.failed[d] };
    const h = summary(v.hetero[d]);
    return { ...row, heterod: h, onnxruntime: t, ratio: h.median_ms / t.median_ms };
  }));
}

function printTable(results, o) {
  const rows = [['model', 'precision', 'device', 'input', 'heterod median ms', 'ORT median ms', 'heterod/ORT',
    'int8/fp32 heterod', 'int8/fp32 ORT']];
  const float32 = (r) =>
    results.find((x) => x.model === r.model && x.device === r.device && x.precision === 'float32' && !x.error);
  for (const r of results) {
    if (r.error) {
      rows.push([r.model, r.precision || '', r.device || '', r.input || '', 'error', '', '', '', '']);
      continue;
    }
    const range = (s) => `${s.median_ms.toFixed(2)} (${s.min_ms.toFixed(2)}-${s.max_ms.toFixed(2)})`;
    const f = r.precision === 'int8' ? float32(r) : null;
    const versus = (side) => (f ? (r[side].median_ms / f[side].median_ms).toFixed(2) : '');
    rows.push([r.model, r.precision, r.device, r.input, range(r.heterod), range(r.onnxruntime), r.ratio.toFixed(2),
      versus('heterod'), versus('onnxruntime')]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row) => row.map((cell, c) => (c >= 4 ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) console.log(line(row));
  console.log(`\n${o.rounds} rounds x ${o.iterations} iterations (+${o.warmup} warm-up) per side on ${o.devices.join(', ')}` +
    `${o.noSpin ? ', idle threads sleeping (--no-spin: the CPU rows, both sides, are not the latency of ' +
      'normal use, where idle threads spin)' : ''}; ` +
    'figures are medians of round medians (min-max of round medians); heterod/ORT < 1 means heterod is faster; ' +
    'int8/fp32 < 1 means that side runs the int8 file faster than the float32 one.');
  for (const r of results) if (r.error) console.log(`${r.model}${r.device ? ' on ' + r.device : ''}: ${r.error.split('\n')[0].slice(0, 300)}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  const { ort, why } = fs.existsSync(cache) ? loadOrt(cache) : { ort: null, why: `${cache} does not exist` };
  if (!ort) usage(`${why}; run scripts/setup.sh --test-data`);
  const ctx = { ort, cache };
  const results = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-bench-'));
  o.cacheDir = path.join(dir, 'cache');
  try {
    for (const model of [...MODELS, ...STREAMING]) {
      if (o.only && model.name !== o.only) continue;
      try {
        results.push(...(await benchModel(model, o, ctx, dir)));
      } catch (e) {
        results.push({ model: model.name, error: e.message });
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (o.json) console.log(JSON.stringify({ rounds: o.rounds, iterations: o.iterations, warmup: o.warmup, devices: o.devices, results }, null, 2));
  else printTable(results, o);
  process.exit(results.some((r) => r.error) ? 1 : 0);
}

// bench_load.js feeds both sides the same inputs this way.
module.exports = { benchInputs, median };

if (require.main === module) {
  main().catch((e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  });
}
