#!/usr/bin/env node
// Time to first inference of PP-OCR det (1x3x640x640), from the ONNX file,
// from a blob made by `hetero compile`, and from a warm --cache-dir, on CPU
// and under HETERO (CPU listed as two devices, convolutions on CPU.1). Each
// way runs in a fresh `hetero run` process, as a service start would;
// figures are medians over rounds:
//   load   reading + compiling the model, or importing it
//   first  the first inference (oneDNN creates its primitives there)
//
//   node bench_startup.js [--hetero PATH] [--rounds N]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { MODELS, cacheDir, modelPath } = require('../models/model_set.js');

function parseArgs(argv) {
  const o = { hetero: process.env.HETERO_BIN || path.join(__dirname, '../../build/tools/hetero'), rounds: 5 };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--hetero') o.hetero = argv[++i];
    else if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
    else {
      console.error('usage: node bench_startup.js [--hetero PATH] [--rounds N]');
      process.exit(2);
    }
  }
  return o;
}

function run(hetero, args) {
  const r = spawnSync(hetero, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hetero ${args.join(' ')}: ${(r.stderr || '').trim()}`);
  return r.stdout;
}

// "model M: compiled for D in X ms" and "inference: Y ms" of hetero run.
function timings(stdout) {
  const load = /(?:compiled|imported) for .* in ([\d.]+) ms/.exec(stdout);
  const first = /inference: ([\d.]+) ms/.exec(stdout);
  if (!load || !first) throw new Error(`unexpected hetero run output:\n${stdout}`);
  return { load: Number(load[1]), first: Number(first[1]) };
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

function main() {
  const o = parseArgs(process.argv.slice(2));
  const det = MODELS.find((m) => m.name === 'ppocr-det');
  const model = modelPath(cacheDir(), det);
  const shape = ['--shape', 'x=1x3x640x640'];
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-startup-'));
  const blob = path.join(work, 'det.blob');
  const hblob = path.join(work, 'det-hetero.blob');
  const cache = path.join(work, 'cache');
  const twoCpus = ['--config', 'CPU.device_count=2'];
  const hetero = ['--device', 'HETERO:CPU.1,CPU', ...twoCpus, '--config', 'CPU.1:ops=Conv'];
  const ways = [
    { name: 'CPU, from the ONNX file', args: [model, ...shape] },
    { name: 'CPU, from a compiled blob', args: [blob] },
    { name: 'CPU, from a warm cache', args: [model, ...shape, '--cache-dir', cache] },
    { name: 'HETERO, from the ONNX file', args: [model, ...shape, ...hetero] },
    { name: 'HETERO, from a compiled blob', args: [hblob, ...twoCpus] },
    { name: 'HETERO, from a warm cache', args: [model, ...shape, ...hetero, '--cache-dir', cache] },
  ];
  try {
    run(o.hetero, ['compile', model, ...shape, '-o', blob]);
    run(o.hetero, ['compile', model, ...shape, ...hetero, '-o', hblob]);
    run(o.hetero, ['run', model, ...shape, '--cache-dir', cache]);  // fills the cache
    run(o.hetero, ['run', model, ...shape, ...hetero, '--cache-dir', cache]);
    const results = ways.map(() => ({ load: [], first: [] }));
    for (let round = 0; round < o.rounds; ++round) {
      ways.forEach((way, i) => {  // interleaved, so drift spreads over all ways
        const t = timings(run(o.hetero, ['run', ...way.args]));
        results[i].load.push(t.load);
        results[i].first.push(t.first);
      });
    }
    console.log('way                             load ms   first inference ms   to first result ms');
    console.log('------------------------------  -------  -------------------  ------------------');
    ways.forEach((way, i) => {
      const load = median(results[i].load), first = median(results[i].first);
      console.log(`${way.name.padEnd(30)}  ${load.toFixed(1).padStart(7)}  ${first.toFixed(1).padStart(19)}  ` +
                  `${(load + first).toFixed(1).padStart(18)}`);
    });
    const ratio = (a, b) => (median(results[a].load) / median(results[b].load)).toFixed(1);
    console.log(`\nimport is ${ratio(0, 1)}x faster than reading and compiling the ONNX file on CPU, ` +
                `${ratio(3, 4)}x under HETERO (${o.rounds} rounds, medians)`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main();
