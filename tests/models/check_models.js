#!/usr/bin/env node
// Real-model accuracy: each model of model_set.js runs through
// `hetero run MODEL --device CPU --input ... --output-dir DIR` and through
// ONNX Runtime on the same seeded inputs; every output must match within
// rtol 1e-3 / atol 1e-4 (|got - ref| <= atol + rtol * |ref|, elementwise).
// With --reference R the reference is `hetero run MODEL --device R` instead
// of ONNX Runtime (the OpenCL tests compare with the CPU driver this way).
//
//   node check_models.js [HETERO] [--device D] [--config K=V]... [--reference R] [--only NAME] [--keep DIR]
//
// --config goes to the device under test only, not to the reference.
//
// HETERO is the hetero CLI (or $HETERO_BIN). Models and ONNX Runtime come from
// ${HETERO_TEST_CACHE:-~/.cache/heterod-test}; without that cache the test
// exits 77, which Meson reports as skipped.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { readNpy, writeNpy } = require('./npy.js');
const { MODELS, cacheDir, loadOrt, modelPath, makeInputs } = require('./model_set.js');

const RTOL = 1e-3;
const ATOL = 1e-4;
const SKIP = 77;

function parseArgs(argv) {
  const o = { hetero: process.env.HETERO_BIN || '', device: 'CPU', config: [], reference: '', only: '', keep: '' };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--device') o.device = value();
    else if (a === '--config') o.config.push(value());
    else if (a === '--only') o.only = value();
    else if (a === '--reference') o.reference = value();
    else if (a === '--keep') o.keep = value();
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else o.hetero = a;
  }
  if (!o.hetero) usage('no hetero executable given (argument or $HETERO_BIN)');
  return o;
}

function usage(why) {
  console.error(`check_models: ${why}\nusage: node check_models.js [HETERO] [--device D] [--config K=V]... [--reference R] [--only NAME] [--keep DIR]`);
  process.exit(2);
}

// Compares one output; returns { ok, text } with the error figures either way.
function compare(name, ref, got) {
  if (got.dtype !== ref.type) return { ok: false, text: `${name}: dtype ${got.dtype}, expected ${ref.type}` };
  if (got.shape.join('x') !== ref.dims.join('x'))
    return { ok: false, text: `${name}: shape [${got.shape}], expected [${ref.dims}]` };
  let maxAbs = 0;
  let maxRel = 0;
  let bad = 0;
  let worst = -1;
  let worstExcess = -Infinity;
  for (let i = 0; i < ref.data.length; ++i) {
    const e = Number(ref.data[i]);
    const g = Number(got.data[i]);
    if (Number.isNaN(e) || Number.isNaN(g)) {
      if (!(Number.isNaN(e) && Number.isNaN(g))) ++bad, (worst = i), (worstExcess = Infinity);
      continue;
    }
    const err = Math.abs(g - e);
    maxAbs = Math.max(maxAbs, err);
    if (e !== 0) maxRel = Math.max(maxRel, err / Math.abs(e));
    const excess = err - (ATOL + RTOL * Math.abs(e));
    if (excess > 0) {
      ++bad;
      if (excess > worstExcess) (worstExcess = excess), (worst = i);
    }
  }
  let text = `${name} [${ref.dims}]: max abs err ${maxAbs.toExponential(2)}, max rel err ${maxRel.toExponential(2)}`;
  if (bad) text += `; ${bad} of ${ref.data.length} outside tolerance, worst at [${worst}]: expected ${ref.data[worst]}, got ${got.data[worst]}`;
  return { ok: bad === 0, text };
}

function tail(text, n = 600) {
  text = (text || '').trim();
  return text.length > n ? '...' + text.slice(-n) : text;
}

// The file `hetero run --output-dir` wrote for each output, by index, from
// its "output K 'NAME': TYPE SHAPE -> FILE" lines.
function outputFiles(stdout) {
  const files = [];
  for (const m of stdout.matchAll(/^output (\d+) .* -> (.+)$/gm)) files[Number(m[1])] = m[2];
  return files;
}

async function checkModel(model, o, ctx, work) {
  const file = modelPath(ctx.cache, model);
  if (!fs.existsSync(file)) return { ok: false, lines: [`model file ${file} is missing (rerun scripts/setup.sh --test-data)`] };
  const dir = path.join(work, model.name);
  const outDir = path.join(dir, 'out');
  fs.mkdirSync(outDir, { recursive: true });

  const inputs = await makeInputs(model, ctx);
  const feeds = {};
  const args = ['run', file, '--device', o.device];
  for (const [i, input] of inputs.entries()) {
    const npy = path.join(dir, `input_${i}.npy`);
    writeNpy(npy, { dtype: 'float32', shape: input.shape, data: input.data });
    feeds[input.name] = new ctx.ort.Tensor('float32', input.data, input.shape);
    args.push('--input', npy);
  }
  args.push('--output-dir', outDir);

  const session = await ctx.ort.InferenceSession.create(file, { intraOpNumThreads: 2, interOpNumThreads: 1 });
  let refs;
  if (o.reference) {
    // The same inputs through another heterod device; its outputs in ORT's form.
    const refDir = path.join(dir, 'reference');
    fs.mkdirSync(refDir, { recursive: true });
    const refArgs = args.slice(0, args.length - 1);
    refArgs[refArgs.indexOf('--device') + 1] = o.reference;
    refArgs.push(refDir);
    const r = spawnSync(o.hetero, refArgs, { encoding: 'utf8', timeout: 300e3 });
    if (r.error || r.status !== 0)
      return { ok: false, lines: [`reference run hetero ${refArgs.join(' ')} failed: ${tail(r.stderr || String(r.error))}`] };
    refs = {};
    const refFiles = outputFiles(r.stdout);
    for (const [k, outName] of session.outputNames.entries()) {
      const npy = readNpy(refFiles[k]);
      refs[outName] = { type: npy.dtype, dims: npy.shape, data: npy.data };
    }
  } else {
    refs = await session.run(feeds);
  }

  for (const kv of o.config) args.push('--config', kv);
  const started = process.hrtime.bigint();
  const run = spawnSync(o.hetero, args, { encoding: 'utf8', timeout: 300e3 });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.error) return { ok: false, lines: [`cannot run ${o.hetero}: ${run.error.message}`] };
  if (run.status !== 0) {
    const how = run.signal ? `was killed by ${run.signal}` : `exited with status ${run.status}`;
    return { ok: false, lines: [`hetero ${args.join(' ')} ${how}: ${tail(run.stderr || run.stdout)}`] };
  }

  const lines = [];
  let ok = true;
  const files = outputFiles(run.stdout);
  for (const [k, outName] of session.outputNames.entries()) {
    const npy = files[k] || path.join(outDir, `${outName}.npy`);
    if (!fs.existsSync(npy)) {
      lines.push(`${outName}: hetero wrote no ${path.basename(npy)}`);
      ok = false;
      continue;
    }
    let got;
    try {
      got = readNpy(npy);
    } catch (e) {
      lines.push(`${outName}: ${e.message}`);
      ok = false;
      continue;
    }
    const r = compare(outName, refs[outName], got);
    lines.push(r.text);
    ok = ok && r.ok;
  }
  const extra = fs.readdirSync(outDir).filter((f) => /^output_\d+\.npy$/.test(f)).length - session.outputNames.length;
  if (extra > 0) {
    lines.push(`hetero wrote ${extra} output file(s) more than the model's ${session.outputNames.length} outputs`);
    ok = false;
  }
  lines.push(`(hetero run took ${seconds.toFixed(2)} s including compile)`);
  return { ok, lines };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  // No cache at all means this box was never set up for these tests: skip.
  // A cache without ONNX Runtime is a broken one: fail, so nobody mistakes
  // it for a pass.
  if (!fs.existsSync(cache)) {
    console.log(`SKIP real-model tests: ${cache} does not exist; run scripts/setup.sh --test-data to fetch the models and ONNX Runtime`);
    process.exit(SKIP);
  }
  const { ort, why } = loadOrt(cache);
  if (!ort) {
    console.error(`check_models: ${why}; rerun scripts/setup.sh --test-data`);
    process.exit(1);
  }
  if (!fs.existsSync(o.hetero)) usage(`${o.hetero} does not exist`);

  const work = o.keep || fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-models-'));
  const ctx = { ort, cache };
  let passed = 0;
  let failed = 0;
  try {
    for (const model of MODELS) {
      if (o.only && model.name !== o.only) continue;
      let r;
      try {
        r = await checkModel(model, o, ctx, work);
      } catch (e) {
        r = { ok: false, lines: [e.stack || String(e)] };
      }
      console.log(`${r.ok ? 'PASS' : 'FAIL'} ${model.name}`);
      for (const line of r.lines) console.log(`    ${line}`);
      r.ok ? ++passed : ++failed;
    }
  } finally {
    if (!o.keep) fs.rmSync(work, { recursive: true, force: true });
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed || passed === 0 ? 1 : 0);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
