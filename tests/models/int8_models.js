// The int8 models the int8 test and the benchmark share: PP-OCR cls and det
// and openWakeWord's embedding model of model_set.js, quantised at test time
// by quantize_model (tests/models/quantize_model.cpp: ONNX Runtime's
// quantize_static defaults, QDQ format) into a directory of the build tree.
// Nothing is committed: a quantised file is remade when it is missing or
// older than its float model or the quantizer.
//
// On a processor without VNNI the weights are made 7-bit (--reduce-range),
// as ONNX Runtime advises for its quantize_static there: 8-bit products
// summed in pairs would saturate int16 in both runtimes' int8 kernels
// (heterod would then keep those layers in float, ONNX Runtime would
// saturate), and neither would match the other.
'use strict';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { writeNpy } = require('./npy.js');
const { MODELS, modelPath, makeInputs } = require('./model_set.js');

const INT8_MODELS = ['ppocr-cls', 'ppocr-det', 'oww-embedding'].map((name) => MODELS.find((m) => m.name === name));

// Calibration runs on inputs of the same kind as the test's, not the same ones.
const CALIBRATION_VARIANT = 1;

function hasVnni() {
  try {
    return /\b(avx512_vnni|avx_vnni|amx_int8)\b/.test(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  } catch (e) {
    return false;
  }
}

function mtime(file) {
  return fs.statSync(file).mtimeMs;
}

// { file, report } of `model`'s int8 version; report is quantize_model's
// --report (output scales, a QDQ-preserving split).
async function int8Model(model, ctx, quantizer, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const source = modelPath(ctx.cache, model);
  if (!fs.existsSync(source)) throw new Error(`model file ${source} is missing (rerun scripts/setup.sh --test-data)`);
  const variant = hasVnni() ? 'int8' : 'int8-7bit';
  const file = path.join(dir, `${model.name}.${variant}.onnx`);
  const report = path.join(dir, `${model.name}.${variant}.json`);
  const fresh = fs.existsSync(file) && fs.existsSync(report) &&
    mtime(report) >= Math.max(mtime(source), mtime(quantizer));
  if (!fresh) {
    const args = [source, file, '--report', report, ...(variant === 'int8' ? [] : ['--reduce-range'])];
    for (const [i, input] of (await makeInputs(model, ctx, CALIBRATION_VARIANT)).entries()) {
      const npy = path.join(dir, `${model.name}.calibration_${i}.npy`);
      writeNpy(npy, { dtype: 'float32', shape: input.shape, data: input.data });
      args.push('--input', `${input.name}=${npy}`);
    }
    const r = spawnSync(quantizer, args, { encoding: 'utf8', timeout: 600e3 });
    if (r.error || r.status !== 0)
      throw new Error(`quantize_model ${args.join(' ')} failed: ${(r.stderr || String(r.error)).trim().slice(-600)}`);
  }
  return { file, report: JSON.parse(fs.readFileSync(report, 'utf8')) };
}

module.exports = { INT8_MODELS, int8Model };
