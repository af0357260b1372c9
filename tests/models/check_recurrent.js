#!/usr/bin/env node
// LSTM, GRU and RNN with the attribute combinations ONNX's backend test data
// leaves out (make_rnn_models.cpp writes them: clip, input_forget, peepholes,
// sequence lengths, every activation function with its alpha and beta,
// linear_before_reset), each run once by `hetero run` and once by ONNX
// Runtime on the same inputs; every output must match within rtol 1e-3 and
// atol 1e-4. Where ONNX leaves a reading open (which activations consume
// activation_alpha, whether clip bounds the cell state), ONNX Runtime's
// reading is the one users meet.
//
//   node check_recurrent.js HETERO MODEL_DIR
//
// Skips (exit 77) without the test cache, as check_models.js does.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { readNpy, writeNpy } = require('./npy.js');
const { cacheDir, loadOrt } = require('./model_set.js');

const RTOL = 1e-3;
const ATOL = 1e-4;
const SKIP = 77;

// Inputs from the model's declared shapes: x and the states smooth values,
// lens a mix of full and shorter sequences (the first full).
function makeInput({ name, type, shape }) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (type === 'int32') {
    const steps = 4; // x is [4, 3, 3]
    return { dtype: 'int32', shape, data: Int32Array.from({ length: n }, (_, i) => (i === 0 ? steps : 1 + ((i * 2) % steps))) };
  }
  const scale = name === 'x' ? 1.5 : 0.5;
  return { dtype: 'float32', shape, data: Float32Array.from({ length: n }, (_, i) => scale * Math.sin(i * 1.7 + name.length)) };
}

async function checkModel(file, hetero, ort, work) {
  const session = await ort.InferenceSession.create(file, { intraOpNumThreads: 2, interOpNumThreads: 1 });
  const base = path.join(work, path.basename(file, '.onnx'));
  const feeds = {};
  const args = ['run', file];
  for (const meta of session.inputMetadata) {
    const t = makeInput(meta);
    feeds[meta.name] = new ort.Tensor(t.dtype, t.data, t.shape);
    writeNpy(`${base}.${meta.name}.npy`, t);
    args.push('--input', `${meta.name}=${base}.${meta.name}.npy`);
  }
  for (const name of session.outputNames) args.push('--output', `${name}=${base}.out.${name}.npy`);
  const refs = await session.run(feeds);
  const r = spawnSync(hetero, args, { encoding: 'utf8', timeout: 120e3 });
  if (r.status !== 0) return { ok: false, text: `hetero ${args.join(' ')} failed: ${(r.stderr || String(r.error)).trim()}` };
  let maxAbs = 0;
  let bad = 0;
  for (const name of session.outputNames) {
    const got = readNpy(`${base}.out.${name}.npy`);
    const want = refs[name];
    if (got.shape.join('x') !== want.dims.join('x')) return { ok: false, text: `${name}: shape [${got.shape}], expected [${want.dims}]` };
    for (let i = 0; i < want.data.length; ++i) {
      const err = Math.abs(got.data[i] - want.data[i]);
      if (!(err <= ATOL + RTOL * Math.abs(want.data[i]))) ++bad;
      maxAbs = Math.max(maxAbs, err);
    }
  }
  return { ok: bad === 0, text: `max abs err ${maxAbs.toExponential(2)}${bad ? `; ${bad} values outside tolerance` : ''}` };
}

async function main() {
  const [hetero, dir] = process.argv.slice(2);
  if (!hetero || !dir || !fs.existsSync(hetero) || !fs.existsSync(dir)) {
    console.error('usage: node check_recurrent.js HETERO MODEL_DIR');
    process.exit(2);
  }
  const cache = cacheDir();
  if (!fs.existsSync(cache)) {
    console.log(`SKIP recurrent-layer tests: ${cache} does not exist; run scripts/setup.sh --test-data`);
    process.exit(SKIP);
  }
  const { ort, why } = loadOrt(cache);
  if (!ort) {
    console.error(`check_recurrent: ${why}; rerun scripts/setup.sh --test-data`);
    process.exit(1);
  }
  const models = fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-recurrent-'));
  let passed = 0;
  let failed = 0;
  try {
    for (const m of models) {
      let r;
      try {
        r = await checkModel(path.join(dir, m), hetero, ort, work);
      } catch (e) {
        r = { ok: false, text: e.stack || String(e) };
      }
      console.log(`${r.ok ? 'PASS' : 'FAIL'} ${m}: ${r.text}`);
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
