#!/usr/bin/env node
// HETERO on real models: each model of model_set.js runs whole on the CPU and
// then split across two devices, and the outputs must agree within 1e-4
// (|split - whole| <= 1e-4 + 1e-4 * |whole|, elementwise). The CPU driver
// lists the processor as two devices (CPU.device_count=2), so the split is a
// real one, through the planner, the cut, and tensors passed between
// submodels of separately compiled drivers' requests. Two splits per model:
//   policy   a YAML policy pins the heavy ops (Conv, MatMul, ...) to CPU and
//            everything else falls to CPU.1, the first device;
//   query    no policy: CPU.1's 'ops' config keeps it to the heavy ops, and
//            the rest goes to CPU because CPU.1's query() refuses it.
// Each split must cut the model into more than one submodel.
//
//   node check_hetero.js [HETERO] [--only NAME]
//
// Skips (exit 77) without the test cache, as check_models.js does.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { readNpy, writeNpy } = require('./npy.js');
const { MODELS, cacheDir, loadOrt, modelPath, makeInputs } = require('./model_set.js');

const TOL = 1e-4;
const SKIP = 77;
const HEAVY_OPS = ['Conv', 'ConvTranspose', 'MatMul', 'Gemm'];

const SPLITS = [
  {
    name: 'policy',
    args: (dir) => {
      const file = path.join(dir, 'policy.yaml');
      fs.writeFileSync(file, `devices: [CPU.1, CPU]\nrules:\n  - device: CPU\n    ops: [${HEAVY_OPS.join(', ')}]\n`);
      return ['--policy', file];
    },
  },
  { name: 'query', args: () => ['--config', `CPU.1:ops=${HEAVY_OPS.join(',')}`] },
];

function run(hetero, args) {
  const r = spawnSync(hetero, args, { encoding: 'utf8', timeout: 300e3 });
  if (r.error) throw new Error(`cannot run ${hetero}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`hetero ${args.join(' ')} failed (${r.signal || r.status}): ${(r.stderr || '').trim().slice(-600)}`);
  return r.stdout;
}

function compare(name, whole, split) {
  if (whole.dtype !== split.dtype || whole.shape.join('x') !== split.shape.join('x'))
    return { ok: false, text: `${name}: ${split.dtype} [${split.shape}], whole model gave ${whole.dtype} [${whole.shape}]` };
  let maxAbs = 0;
  let bad = 0;
  for (let i = 0; i < whole.data.length; ++i) {
    const w = Number(whole.data[i]);
    const s = Number(split.data[i]);
    const err = Math.abs(w - s);
    if (Number.isNaN(err) ? !(Number.isNaN(w) && Number.isNaN(s)) : err > TOL + TOL * Math.abs(w)) ++bad;
    if (!Number.isNaN(err)) maxAbs = Math.max(maxAbs, err);
  }
  const text = `${name}: max abs diff ${maxAbs.toExponential(2)}` + (bad ? `; ${bad} of ${whole.data.length} outside 1e-4` : '');
  return { ok: bad === 0, text };
}

async function checkModel(model, hetero, ctx, work) {
  const file = modelPath(ctx.cache, model);
  const dir = path.join(work, model.name);
  fs.mkdirSync(dir, { recursive: true });
  const inputArgs = [];
  for (const [i, input] of (await makeInputs(model, ctx)).entries()) {
    const npy = path.join(dir, `input_${i}.npy`);
    writeNpy(npy, { dtype: 'float32', shape: input.shape, data: input.data });
    inputArgs.push('--input', npy);
  }
  const outputs = (sub) => {
    const out = path.join(dir, sub);
    fs.mkdirSync(out, { recursive: true });
    return out;
  };
  const core = ['--config', 'CPU.device_count=2'];
  const wholeDir = outputs('whole');
  run(hetero, ['run', file, '--device', 'CPU', ...core, ...inputArgs, '--output-dir', wholeDir]);
  const names = fs.readdirSync(wholeDir).filter((f) => f.endsWith('.npy')).sort();

  let ok = names.length > 0;
  const lines = ok ? [] : ['the whole model wrote no outputs'];
  for (const split of SPLITS) {
    const outDir = outputs(split.name);
    const stdout = run(hetero, ['run', file, '--device', 'HETERO:CPU.1,CPU', ...core, ...split.args(dir), ...inputArgs,
                                '--output-dir', outDir]);
    const m = /\((\d+) submodels? on ([^)]*)\)/.exec(stdout);
    const submodels = m ? Number(m[1]) : 0;
    lines.push(`${split.name} split: ${submodels} submodels on ${m ? m[2] : '?'}`);
    if (submodels < 2) {
      lines.push(`  the ${split.name} split did not split the model`);
      ok = false;
    }
    for (const n of names) {
      const r = compare(n, readNpy(path.join(wholeDir, n)), readNpy(path.join(outDir, n)));
      lines.push(`  ${r.text}`);
      ok = ok && r.ok;
    }
  }
  return { ok, lines };
}

async function main() {
  const argv = process.argv.slice(2);
  let hetero = process.env.HETERO_BIN || '';
  let only = '';
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--only' && i + 1 < argv.length) only = argv[++i];
    else hetero = argv[i];
  }
  if (!hetero || !fs.existsSync(hetero)) {
    console.error('usage: node check_hetero.js HETERO [--only NAME]');
    process.exit(2);
  }
  const cache = cacheDir();
  if (!fs.existsSync(cache)) {
    console.log(`SKIP HETERO real-model tests: ${cache} does not exist; run scripts/setup.sh --test-data`);
    process.exit(SKIP);
  }
  const { ort, why } = loadOrt(cache);
  if (!ort) {
    console.error(`check_hetero: ${why}; rerun scripts/setup.sh --test-data`);
    process.exit(1);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-split-'));
  let passed = 0;
  let failed = 0;
  try {
    for (const model of MODELS) {
      if (only && model.name !== only) continue;
      let r;
      try {
        r = await checkModel(model, hetero, { ort, cache }, work);
      } catch (e) {
        r = { ok: false, lines: [e.message || String(e)] };
      }
      console.log(`${r.ok ? 'PASS' : 'FAIL'} ${model.name}`);
      for (const line of r.lines) console.log(`    ${line}`);
      r.ok ? ++passed : ++failed;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed || passed === 0 ? 1 : 0);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
