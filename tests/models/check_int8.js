#!/usr/bin/env node
// int8 real models: PP-OCR cls and det and openWakeWord's embedding model,
// quantised at test time (int8_models.js), checked four ways:
//   ort     `hetero run` against ONNX Runtime on the same int8 file: every
//           output within one quantisation step (the scale of the DQ that
//           makes the output);
//   float   heterod's own float simulation of the QDQ graph (CPU with
//           optimize=false: Q and DQ as written, float ops between), for
//           information only: each int8 node is within one step of its
//           float form (the unit tests hold it to that), but over a whole
//           network an element that lies on a rounding tie goes one way in
//           float32 sums and the other in exact int8 ones, and the layers
//           after it can turn that step into many;
//   hetero  split across CPU.1 and CPU (CPU.device_count=2) by a policy
//           that cuts the graph where only quantised tensors cross: the
//           whole model's outputs;
//   blob    compiled to a blob (CPU, and the HETERO split) and run from it:
//           the outputs of compiling it directly.
//
//   node check_int8.js HETERO QUANTIZER DIR [--only NAME] [--device D]
//
// With --device D (a GPU device: OPENCL), the model runs whole on D, whose
// kernels compute the QDQ graph in float (QuantizeLinear -> DequantizeLinear
// as a rounding to the codes and back), and is checked against ONNX Runtime
// next to the CPU driver's float simulation of the same graph (below).
//
// DIR keeps the quantised models between runs. Skips (exit 77) without the
// test cache, as check_models.js does.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { readNpy, writeNpy } = require('./npy.js');
const { cacheDir, loadOrt, makeInputs } = require('./model_set.js');
const { INT8_MODELS, int8Model } = require('./int8_models.js');

const SKIP = 77;
// Outputs are DQ(codes): differences are whole steps up to float rounding.
const STEP_SLACK = 1e-3;

function run(hetero, args) {
  const r = spawnSync(hetero, args, { encoding: 'utf8', timeout: 300e3 });
  if (r.error) throw new Error(`cannot run ${hetero}: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`hetero ${args.join(' ')} failed (${r.signal || r.status}): ${(r.stderr || '').trim().slice(-600)}`);
  return r.stdout;
}

function outputs(dir) {
  // One .npy per output, named after it: the same names in every directory.
  return fs.readdirSync(dir).filter((f) => f.endsWith('.npy')).sort().map((f) => readNpy(path.join(dir, f)));
}

// Differences in steps of `scale`: { ok, text }.
function compareSteps(what, ref, got, scale) {
  if (got.shape.join('x') !== ref.shape.join('x')) return { ok: false, text: `${what}: shape [${got.shape}], expected [${ref.shape}]` };
  let worst = 0;
  let off = 0;
  for (let i = 0; i < ref.data.length; ++i) {
    const steps = Math.abs(Number(got.data[i]) - Number(ref.data[i])) / scale;
    if (!(steps <= worst)) worst = Number.isNaN(steps) ? Infinity : steps;
    if (steps > STEP_SLACK) ++off;
  }
  const ok = worst <= 1 + STEP_SLACK;
  return { ok, off, text: `${what}: max ${worst.toFixed(3)} steps of ${scale.toPrecision(3)}, ${off} of ${ref.data.length} elements off` };
}

function compareExact(what, ref, got) {
  let maxAbs = 0;
  for (let i = 0; i < ref.data.length; ++i) maxAbs = Math.max(maxAbs, Math.abs(Number(got.data[i]) - Number(ref.data[i])));
  const ok = got.shape.join('x') === ref.shape.join('x') && maxAbs === 0;
  return { ok, text: `${what}: ${ok ? 'identical' : `max abs diff ${maxAbs.toExponential(2)} (shape [${got.shape}])`}` };
}

async function checkModel(model, o, ctx, work) {
  const { file, report } = await int8Model(model, ctx, o.quantizer, o.dir);
  const dir = path.join(work, model.name);
  fs.mkdirSync(dir, { recursive: true });
  const sub = (name) => {
    const d = path.join(dir, name);
    fs.mkdirSync(d, { recursive: true });
    return d;
  };
  const inputs = await makeInputs(model, ctx);
  const inputArgs = [];
  const feeds = {};
  for (const [i, input] of inputs.entries()) {
    const npy = path.join(dir, `input_${i}.npy`);
    writeNpy(npy, { dtype: 'float32', shape: input.shape, data: input.data });
    inputArgs.push('--input', npy);
    feeds[input.name] = new ctx.ort.Tensor('float32', input.data, input.shape);
  }
  const session = await ctx.ort.InferenceSession.create(file, { intraOpNumThreads: 2, interOpNumThreads: 1 });
  const refs = await session.run(feeds);
  const names = session.outputNames;
  const scaleOf = (name) => {
    const p = report.outputs[name];
    if (!p) throw new Error(`the quantizer's report has no scale for output ${name}`);
    return p.scale;
  };

  const lines = [];
  let ok = true;
  const note = (r) => {
    lines.push(`  ${r.text}`);
    ok = ok && r.ok;
  };
  const core = ['--config', 'CPU.device_count=2'];
  // The CPU driver's float simulation of the QDQ graph (its int8 pass off):
  // what each path below is set beside.
  const floatSimulation = () => {
    const simDir = sub('float-simulation');
    run(o.hetero, ['run', file, '--device', 'CPU', ...core, '--config', 'CPU.optimize=false', ...inputArgs, '--output-dir', simDir]);
    return outputs(simDir);
  };

  if (o.device) {
    // The float form cannot be held to one step: where an exact int8 sum
    // lies on a rounding tie, float32 sums (in any order) may round it the
    // other way, and later layers turn that step into many. So the device
    // must be as close to ONNX Runtime as the CPU driver's float simulation
    // of the same graph is: no more elements off than it has, with slack
    // for summation order (1.5x, plus 1% of the elements).
    const sims = floatSimulation();
    const gotDir = sub(o.device);
    run(o.hetero, ['run', file, '--device', o.device, ...inputArgs, '--output-dir', gotDir]);
    const got = outputs(gotDir);
    if (got.length !== names.length) throw new Error(`hetero wrote ${got.length} outputs, the model has ${names.length}`);
    lines.push(`against ONNX Runtime, ${o.device} and the float simulation (CPU.optimize=false):`);
    names.forEach((name, k) => {
      const ref = { shape: refs[name].dims, data: refs[name].data };
      const mine = compareSteps(name, ref, got[k], scaleOf(name));
      const sim = compareSteps(name, ref, sims[k], scaleOf(name));
      const limit = Math.floor(1.5 * sim.off + 0.01 * ref.data.length);
      lines.push(`  ${o.device}: ${mine.text}`);
      lines.push(`  simulation: ${sim.text}`);
      if (mine.off > limit) {
        lines.push(`  ${o.device} has ${mine.off} elements off, more than ${limit}`);
        ok = false;
      }
    });
    return { ok, lines };
  }

  const wholeDir = sub('whole');
  run(o.hetero, ['run', file, '--device', 'CPU', ...core, ...inputArgs, '--output-dir', wholeDir]);
  const whole = outputs(wholeDir);
  if (whole.length !== names.length) throw new Error(`hetero wrote ${whole.length} outputs, the model has ${names.length}`);
  lines.push('against ONNX Runtime:');
  names.forEach((name, k) => {
    const ref = { shape: refs[name].dims, data: refs[name].data };
    note(compareSteps(name, ref, whole[k], scaleOf(name)));
  });

  lines.push('against the float simulation (CPU.optimize=false; for information):');
  floatSimulation().forEach((sim, k) => lines.push(`  ${compareSteps(names[k], sim, whole[k], scaleOf(names[k])).text}`));

  if (!report.split.length) {
    lines.push('no QDQ-preserving split point');
    ok = false;
  } else {
    const policy = path.join(dir, 'policy.yaml');
    fs.writeFileSync(policy, `devices: [CPU, CPU.1]\nrules:\n  - device: CPU.1\n    nodes: ${JSON.stringify(report.split)}\n`);
    const hetero = ['--device', 'HETERO:CPU,CPU.1', ...core, '--policy', policy];
    const splitDir = sub('split');
    const stdout = run(o.hetero, ['run', file, ...hetero, ...inputArgs, '--output-dir', splitDir]);
    const m = /\((\d+) submodels? on ([^)]*)\)/.exec(stdout);
    lines.push(`split across CPU.1 and CPU (${m ? `${m[1]} submodels on ${m[2]}` : 'submodels unknown'}):`);
    if (!m || Number(m[1]) < 2) {
      lines.push('  the policy did not split the model');
      ok = false;
    }
    outputs(splitDir).forEach((got, k) => note(compareExact(names[k], whole[k], got)));

    for (const [what, device] of [['CPU', ['--device', 'CPU', ...core]], ['HETERO', hetero]]) {
      const blob = path.join(dir, `${what}.blob`);
      run(o.hetero, ['compile', file, ...device, '-o', blob]);
      const blobDir = sub(`blob-${what}`);
      run(o.hetero, ['run', blob, ...core, ...inputArgs, '--output-dir', blobDir]);
      lines.push(`${what} blob (${(fs.statSync(blob).size / 1e6).toFixed(2)} MB):`);
      outputs(blobDir).forEach((got, k) => note(compareExact(names[k], what === 'CPU' ? whole[k] : outputs(splitDir)[k], got)));
    }
  }
  return { ok, lines };
}

async function main() {
  const argv = process.argv.slice(2);
  const o = { hetero: '', quantizer: '', dir: '', only: '', device: '' };
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--only' && i + 1 < argv.length) o.only = argv[++i];
    else if (argv[i] === '--device' && i + 1 < argv.length) o.device = argv[++i];
    else positional.push(argv[i]);
  }
  [o.hetero, o.quantizer, o.dir] = positional;
  if (!o.hetero || !o.quantizer || !o.dir || !fs.existsSync(o.hetero) || !fs.existsSync(o.quantizer)) {
    console.error('usage: node check_int8.js HETERO QUANTIZER DIR [--only NAME] [--device D]');
    process.exit(2);
  }
  const cache = cacheDir();
  if (!fs.existsSync(cache)) {
    console.log(`SKIP int8 model tests: ${cache} does not exist; run scripts/setup.sh --test-data`);
    process.exit(SKIP);
  }
  const { ort, why } = loadOrt(cache);
  if (!ort) {
    console.error(`check_int8: ${why}; rerun scripts/setup.sh --test-data`);
    process.exit(1);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-int8-'));
  let passed = 0;
  let failed = 0;
  try {
    for (const model of INT8_MODELS) {
      if (o.only && model.name !== o.only) continue;
      let r;
      try {
        r = await checkModel(model, o, { ort, cache }, work);
      } catch (e) {
        r = { ok: false, lines: [e.message || String(e)] };
      }
      console.log(`${r.ok ? 'PASS' : 'FAIL'} ${model.name} (int8)`);
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
