#!/usr/bin/env node
// heterod against ONNX Runtime on the real models of tests/models/model_set.js,
// side by side. For each model, rounds alternate between
//   hetero bench MODEL --device D --shape NAME=DIMS --warmup W --iterations N --json
// for each device D given (CPU by default; --device again adds a column, so
// that OPENCL stands next to CPU) and ONNX Runtime (onnxruntime-node,
// intraOpNumThreads 2, interOpNumThreads 1) doing the same warm-up and
// iterations on the same input shape, each run() timed with process.hrtime.
// Alternating spreads drift of a shared machine (other load, thermal state)
// over every side instead of one.
//
//   node bench_models.js [--hetero PATH] [--rounds R] [--iterations N] [--warmup W]
//                        [--device D]... [--only NAME] [--json]
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
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { MODELS, cacheDir, loadOrt, modelPath, makeInputs, shapeText } = require('../models/model_set.js');

function usage(why) {
  console.error(`bench_models: ${why}\n` +
    'usage: node bench_models.js [--hetero PATH] [--rounds R] [--iterations N] [--warmup W] [--device D]... [--only NAME] [--json]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { hetero: process.env.HETERO_BIN || '', rounds: 3, iterations: 20, warmup: 3, devices: [], only: '', json: false };
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
    else usage(`unknown argument ${a}`);
  }
  if (!o.devices.length) o.devices.push('CPU');
  if (!o.hetero) usage('no hetero executable given (--hetero or $HETERO_BIN)');
  if (!fs.existsSync(o.hetero)) usage(`${o.hetero} does not exist`);
  return o;
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// One `hetero bench` run on `device`; its median latency in ms.
function heteroRound(model, file, device, o) {
  const args = ['bench', file, '--device', device, '--cache-dir', o.cacheDir];
  for (const input of model.inputs) args.push('--shape', `${input.name}=${shapeText(input.shape)}`);
  args.push('--warmup', String(o.warmup), '--iterations', String(o.iterations), '--json');
  const r = spawnSync(o.hetero, args, { encoding: 'utf8', timeout: 600e3 });
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

async function benchModel(model, o, ctx) {
  const file = modelPath(ctx.cache, model);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing (run scripts/setup.sh --test-data)`);
  const inputs = await makeInputs(model, ctx);
  const feeds = {};
  for (const input of inputs) feeds[input.name] = new ctx.ort.Tensor('float32', input.data, input.shape);
  // Session creation (ORT's compile) is outside the timing, as hetero bench
  // keeps compilation out of its figures.
  const session = await ctx.ort.InferenceSession.create(file, {
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const hetero = Object.fromEntries(o.devices.map((d) => [d, []]));
  const failed = {};
  const ort = [];
  for (let r = 0; r < o.rounds; ++r) {
    const line = [];
    for (const d of o.devices) {
      if (failed[d]) continue;
      try {
        hetero[d].push(heteroRound(model, file, d, o));
        line.push(`${d} ${hetero[d][r].toFixed(2)} ms`);
      } catch (e) {
        failed[d] = e.message;
      }
    }
    ort.push(await ortRound(session, feeds, o));
    if (!o.json) process.stderr.write(`  ${model.name} round ${r + 1}/${o.rounds}: ${line.join(', ')}, ORT ${ort[r].toFixed(2)} ms\n`);
  }
  const t = summary(ort);
  const devices = {};
  for (const d of o.devices) devices[d] = failed[d] ? { error: failed[d] } : { ...summary(hetero[d]), ratio: summary(hetero[d]).median_ms / t.median_ms };
  return {
    model: model.name,
    input: inputs.map((i) => `${i.name}=${shapeText(i.shape)}`).join(' '),
    devices,
    onnxruntime: t,
  };
}

function printTable(results, o) {
  const head = ['model', 'input'];
  for (const d of o.devices) head.push(`${d} ms`, `${d}/ORT`);
  head.push('ORT ms');
  const rows = [head];
  const notes = [];
  for (const r of results) {
    if (r.error) {
      rows.push([r.model, r.input || '', ...head.slice(2).map(() => 'error')]);
      notes.push(`${r.model}: ${r.error}`);
      continue;
    }
    const range = (s) => `${s.median_ms.toFixed(2)} (${s.min_ms.toFixed(2)}-${s.max_ms.toFixed(2)})`;
    const row = [r.model, r.input];
    for (const d of o.devices) {
      const s = r.devices[d];
      if (s.error) {
        row.push('n/a', '');
        notes.push(`${r.model} on ${d}: ${s.error.split('\n')[0].slice(0, 300)}`);
      } else {
        row.push(range(s), s.ratio.toFixed(2));
      }
    }
    row.push(range(r.onnxruntime));
    rows.push(row);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row) => row.map((cell, c) => (c >= 2 ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) console.log(line(row));
  console.log(`\n${o.rounds} rounds x ${o.iterations} iterations (+${o.warmup} warm-up) per side, alternating; ` +
    'figures are medians of round medians (min-max of round medians); a ratio < 1 means heterod is faster. ' +
    `Load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}.`);
  for (const n of notes) console.log(n);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  const { ort, why } = fs.existsSync(cache) ? loadOrt(cache) : { ort: null, why: `${cache} does not exist` };
  if (!ort) usage(`${why}; run scripts/setup.sh --test-data`);
  const ctx = { ort, cache };
  o.cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-bench-'));
  const results = [];
  for (const model of MODELS) {
    if (o.only && model.name !== o.only) continue;
    try {
      results.push(await benchModel(model, o, ctx));
    } catch (e) {
      results.push({ model: model.name, error: e.message });
    }
  }
  fs.rmSync(o.cacheDir, { recursive: true, force: true });
  if (o.json) console.log(JSON.stringify({ rounds: o.rounds, iterations: o.iterations, warmup: o.warmup, devices: o.devices, results }, null, 2));
  else printTable(results, o);
  process.exit(results.some((r) => r.error) ? 1 : 0);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
