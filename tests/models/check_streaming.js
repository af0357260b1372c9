#!/usr/bin/env node
// Streaming models (model_set.js STREAMING: Silero VAD v4 and v5) run chunk
// after chunk with their recurrent state carried from call to call, through
// every front door, against ONNX Runtime doing the same calls:
//   c-abi        stream_model (a C client of libhetero) in process, 100 calls
//   blob         the same on the model compiled to a blob by `hetero compile`
//   hetero       the same split by HETERO across CPU.1 and CPU (the If on
//                CPU.1, the rest on CPU); must cut more than one submodel
//   hetero-blob  that split compiled to a blob and imported
//   daemon       the same through heterod (hetero_core_connect), 100 calls
//   sequence     the same as a sequence, the state kept in heterod and the
//                sample rate given by its config (`defaults:`): the client
//                sends the chunks alone (the zero state with the first) and
//                gets the other outputs: 1000 calls (--sequence-calls), on
//                audio of their own, against ONNX Runtime's 1000
//   cli          `hetero run` once per chunk, the state carried in .npy files
//                that each call reads and then replaces (--output NAME=FILE);
//                the first 20 calls (each is a process of its own)
//   cli-connect  the same through heterod (`hetero --connect`), 20 calls
// With --device D (a GPU device: OPENCL), only the first two, the model
// whole on D, in process and through a blob compiled for D.
// Every output of every call must match ONNX Runtime's within rtol 1e-3 and
// atol 1e-4 (|got - ref| <= atol + rtol * |ref|); the report gives the
// largest error over all calls.
//
//   node check_streaming.js HETERO HETEROD STREAM_MODEL [--only NAME] [--calls N] [--cli-calls N]
//                           [--sequence-calls N] [--keep DIR]
//                           [--device D]
//
// Skips (exit 77) without the test cache, as check_models.js does.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn, spawnSync } = require('child_process');
const { readNpy, writeNpy } = require('./npy.js');
const { STREAMING, cacheDir, loadOrt, modelPath, audioChunks, zeroStates } = require('./model_set.js');

// The processor as two devices, the If (and its LSTMs) on CPU.1, the rest on CPU.
const HETERO_SPLIT = ['--device', 'HETERO:CPU.1,CPU', '--config', 'CPU.device_count=2', '--config', 'CPU.1:ops=If'];
const RTOL = 1e-3;
const ATOL = 1e-4;
const SKIP = 77;

function usage(why) {
  console.error(`check_streaming: ${why}\nusage: node check_streaming.js HETERO HETEROD STREAM_MODEL ` +
    '[--only NAME] [--calls N] [--cli-calls N] [--sequence-calls N] [--keep DIR] [--device D]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { only: '', calls: 100, sequenceCalls: 1000, cliCalls: 20, keep: '', device: '', programs: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--only') o.only = value();
    else if (a === '--calls') o.calls = Number(value());
    else if (a === '--cli-calls') o.cliCalls = Number(value());
    else if (a === '--sequence-calls') o.sequenceCalls = Number(value());
    else if (a === '--keep') o.keep = value();
    else if (a === '--device') o.device = value();
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else o.programs.push(a);
  }
  if (o.programs.length !== 3) usage('HETERO, HETEROD and STREAM_MODEL are required');
  [o.hetero, o.heterod, o.stream] = o.programs;
  for (const p of o.programs) if (!fs.existsSync(p)) usage(`${p} does not exist`);
  if (!(o.calls >= 1) || !(o.cliCalls >= 1) || !(o.sequenceCalls >= 1))
    usage('--calls, --cli-calls and --sequence-calls must be at least 1');
  o.cliCalls = Math.min(o.cliCalls, o.calls);
  return o;
}

function tail(text, n = 600) {
  text = (text || '').trim();
  return text.length > n ? '...' + text.slice(-n) : text;
}

function run(program, args, what) {
  const r = spawnSync(program, args, { encoding: 'utf8', timeout: 300e3 });
  if (r.error) throw new Error(`${what}: cannot run ${program}: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`${what}: ${path.basename(program)} ${args.join(' ')} failed (${r.signal || r.status}): ${tail(r.stderr || r.stdout)}`);
  return r.stdout;
}

// ONNX Runtime's outputs of `calls` calls, state carried: refs[k][name].
async function reference(model, file, chunks, ctx) {
  const session = await ctx.ort.InferenceSession.create(file, { intraOpNumThreads: 2, interOpNumThreads: 1 });
  const tensor = (t) => new ctx.ort.Tensor(t.dtype, t.data, t.shape);
  let states = zeroStates(model);
  const refs = [];
  for (const chunk of chunks) {
    const feeds = {};
    for (const t of [chunk, ...model.fixed, ...states]) feeds[t.name] = tensor(t);
    const out = await session.run(feeds);
    const call = {};
    for (const name of session.outputNames) call[name] = { dims: out[name].dims, data: out[name].data };
    refs.push(call);
    states = model.states.map((s) => ({ name: s.input, dtype: 'float32', shape: out[s.output].dims, data: out[s.output].data }));
  }
  return { refs, outputNames: session.outputNames };
}

// Output `name` of call k as a run wrote it: DIR/NAME.npy of all calls
// (stream_model) or DIR/NAME.K.npy (the CLI loops).
function readOutput(dir, name, k, cache) {
  const stacked = path.join(dir, `${name}.npy`);
  if (fs.existsSync(stacked)) {
    if (!cache[name]) cache[name] = readNpy(stacked);
    const all = cache[name];
    const shape = all.shape.slice(1);
    const n = shape.reduce((a, b) => a * b, 1);
    if (k >= all.shape[0]) return null;
    return { dtype: all.dtype, shape, data: all.data.subarray(k * n, (k + 1) * n) };
  }
  const file = path.join(dir, `${name}.${k}.npy`);
  return fs.existsSync(file) ? readNpy(file) : null;
}

// Compares the outputs of a run's calls with the reference: all of them, or
// those named in `only`.
function compareRun(dir, ref, calls, only) {
  let maxAbs = 0;
  let bad = 0;
  let total = 0;
  let first = '';
  const cache = {};
  for (let k = 0; k < calls; ++k) {
    for (const name of only || ref.outputNames) {
      const want = ref.refs[k][name];
      const got = readOutput(dir, name, k, cache);
      if (!got) return { ok: false, text: `call ${k}: no output ${name}` };
      if (got.dtype !== 'float32' || got.shape.join('x') !== want.dims.join('x'))
        return { ok: false, text: `call ${k}: ${name} is ${got.dtype} [${got.shape}], expected float32 [${want.dims}]` };
      for (let i = 0; i < want.data.length; ++i) {
        const e = want.data[i];
        const err = Math.abs(got.data[i] - e);
        ++total;
        if (!(err <= ATOL + RTOL * Math.abs(e))) {
          ++bad;
          if (!first) first = `; first at call ${k} ${name}[${i}]: expected ${e}, got ${got.data[i]}`;
        }
        if (!Number.isNaN(err)) maxAbs = Math.max(maxAbs, err);
      }
    }
  }
  const text = `max abs err ${maxAbs.toExponential(2)} over ${calls} calls` + (bad ? `; ${bad} of ${total} values outside tolerance${first}` : '');
  return { ok: bad === 0, text, maxAbs };
}

// `hetero [--connect SOCKET] run` once per chunk: each call reads the state
// files and replaces them with its state outputs; the test keeps a copy of
// every call's outputs under the reference's names.
function cliLoop(o, model, target, io, outDir, calls, connect) {
  const stateDir = path.join(outDir, 'state');
  fs.mkdirSync(stateDir, { recursive: true });
  for (const s of zeroStates(model)) writeNpy(path.join(stateDir, `${s.name}.npy`), s);
  const prefix = connect ? ['--connect', connect] : [];
  const cache = connect ? [] : ['--cache-dir', path.join(outDir, 'cache')];
  for (let k = 0; k < calls; ++k) {
    const args = [...prefix, 'run', target, ...cache, '--input', `${model.chunk.name}=${io.chunkFile(k)}`];
    for (const f of model.fixed) args.push('--input', `${f.name}=${io.fixedFile(f)}`);
    for (const s of model.states) {
      const file = path.join(stateDir, `${s.input}.npy`);
      args.push('--input', `${s.input}=${file}`, '--output', `${s.output}=${file}`);
    }
    for (const name of io.plainOutputs) args.push('--output', `${name}=${path.join(outDir, `${name}.${k}.npy`)}`);
    run(o.hetero, args, `call ${k}`);
    for (const s of model.states)
      fs.copyFileSync(path.join(stateDir, `${s.input}.npy`), path.join(outDir, `${s.output}.${k}.npy`));
  }
}

// heterod on a socket in `dir`, serving `model` as `name`, its scalar fixed
// inputs (the sample rate) given values by the config, so that a call may
// leave them out; resolves once it answers.
async function startDaemon(o, dir, name, file, model) {
  const socket = path.join(dir, 'heterod.sock');
  const config = path.join(dir, 'heterod.yaml');
  const defaults = model.fixed.filter((f) => f.shape.length === 0).map((f) => `${f.name}: ${Number(f.data[0])}`);
  fs.writeFileSync(config, `socket: {path: ${socket}}\nmodel_dirs: [${path.dirname(file)}]\nmodels:\n` +
    `  - {name: ${name}, path: ${file}, device: CPU, defaults: {${defaults.join(', ')}}}\n`);
  const log = fs.openSync(path.join(dir, 'heterod.log'), 'w');
  const daemon = spawn(o.heterod, ['--config', config], { stdio: ['ignore', log, log] });
  let exited = null;
  daemon.on('exit', (code, signal) => (exited = signal || code));
  for (let i = 0; i < 600 && exited === null; ++i) {
    const r = spawnSync(o.hetero, ['--connect', socket, 'models'], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.includes('ready')) return { daemon, socket, exited: () => exited };
    await new Promise((res) => setTimeout(res, 50));
  }
  daemon.kill('SIGTERM');
  throw new Error(`heterod did not come up (exit ${exited}): ${tail(fs.readFileSync(path.join(dir, 'heterod.log'), 'utf8'))}`);
}

async function stopDaemon(d) {
  if (d.exited() !== null) return d.exited();
  const done = new Promise((res) => d.daemon.on('exit', (code, signal) => res(signal || code)));
  d.daemon.kill('SIGTERM');
  return done;
}

async function checkModel(model, o, ctx, work) {
  const file = modelPath(ctx.cache, model);
  if (!fs.existsSync(file)) return { ok: false, lines: [`model file ${file} is missing (rerun scripts/setup.sh --test-data)`] };
  const dir = path.join(work, model.name);
  const inputs = path.join(dir, 'inputs');
  fs.mkdirSync(inputs, { recursive: true });
  const chunks = audioChunks(model, o.calls, 4000 + STREAMING.indexOf(model));
  const io = {
    chunkFile: (k) => path.join(inputs, `${model.chunk.name}.${k}.npy`),
    fixedFile: (f) => path.join(inputs, `${f.name}.npy`),
  };
  chunks.forEach((c, k) => writeNpy(io.chunkFile(k), c));
  for (const f of model.fixed) writeNpy(io.fixedFile(f), f);
  for (const s of zeroStates(model)) writeNpy(path.join(inputs, `${s.name}.npy`), s);
  const ref = await reference(model, file, chunks, ctx);
  const stateOutputs = new Set(model.states.map((s) => s.output));
  io.plainOutputs = ref.outputNames.filter((n) => !stateOutputs.has(n));

  // stream_model's arguments for the whole stream.
  const streamArgs = ['--calls', String(o.calls), '--chunk', `${model.chunk.name}=${path.join(inputs, `${model.chunk.name}.%ld.npy`)}`];
  for (const f of model.fixed) streamArgs.push('--input', `${f.name}=${io.fixedFile(f)}`);
  for (const s of model.states)
    streamArgs.push('--input', `${s.input}=${path.join(inputs, `${s.input}.npy`)}`, '--feed', `${s.output}=${s.input}`);
  const blob = path.join(dir, `${model.name}.blob`);
  const splitBlob = path.join(dir, `${model.name}.hetero.blob`);
  // stream_model's "device D, N submodels": the note, or an error without a split.
  const split = (stdout) => {
    const m = /(\d+) submodels/.exec(stdout);
    if (!m || Number(m[1]) < 2) throw new Error(`HETERO did not split the model: ${stdout.trim()}`);
    return `${m[1]} submodels`;
  };

  // On a GPU device, the chunk's and the states' shapes given, so that the
  // compile builds them up front and the blob carries them (without, a GPU
  // compiles a model's dynamic dims at the first inference of each shape).
  const device = ['--device', o.device || 'CPU'];
  if (o.device) {
    device.push('--shape', `${model.chunk.name}=1x${model.chunk.context + model.chunk.samples}`);
    for (const st of model.states) device.push('--shape', `${st.input}=${st.shape.join('x')}`);
  }
  const runs = [
    { name: 'c-abi', calls: o.calls, go: (out) => void run(o.stream, [file, out, ...device, ...streamArgs], 'in process') },
    {
      name: 'blob',
      calls: o.calls,
      go: (out) => {
        run(o.hetero, ['compile', file, ...device, '-o', blob], 'hetero compile');
        run(o.stream, [blob, out, ...streamArgs], 'blob');
      },
    },
    {
      name: 'hetero',
      calls: o.calls,
      go: (out) => split(run(o.stream, [file, out, ...HETERO_SPLIT, ...streamArgs], 'HETERO')),
    },
    {
      name: 'hetero-blob',
      calls: o.calls,
      go: (out) => {
        run(o.hetero, ['compile', file, ...HETERO_SPLIT, '-o', splitBlob], 'hetero compile');
        return split(run(o.stream, [splitBlob, out, '--config', 'CPU.device_count=2', ...streamArgs], 'HETERO blob'));
      },
    },
    { name: 'cli', calls: o.cliCalls, go: (out) => cliLoop(o, model, file, io, out, o.cliCalls, '') },
  ];
  const lines = [];
  let ok = true;
  // Runs one front door and compares what it wrote; `go` may return a note.
  const attempt = async (r) => {
    const out = path.join(dir, r.name);
    fs.mkdirSync(out, { recursive: true });
    const started = process.hrtime.bigint();
    try {
      const note = await r.go(out);
      const seconds = (Number(process.hrtime.bigint() - started) / 1e9).toFixed(1);
      const c = compareRun(out, r.ref || ref, r.calls, r.outputs);
      lines.push(`${r.name}: ${c.text} (${note ? `${note}, ` : ''}${seconds} s)`);
      ok = ok && c.ok;
    } catch (e) {
      lines.push(`${r.name}: ${e.message}`);
      ok = false;
    }
  };
  for (const r of (o.device ? runs.slice(0, 2) : runs)) await attempt(r);
  if (o.device) return { ok, lines };

  // Through the daemon: a C client, then the CLI.
  let d = null;
  try {
    d = await startDaemon(o, dir, model.name, file, model);
  } catch (e) {
    lines.push(`daemon: ${e.message}`);
    return { ok: false, lines };
  }
  try {
    await attempt({
      name: 'daemon',
      calls: o.calls,
      go: (out) => void run(o.stream, [model.name, out, '--connect', d.socket, ...streamArgs], 'daemon'),
    });
    // The state fed back in the daemon and the sample rate given by its
    // config: only the chunk (and the zero state once) goes, and only the
    // other outputs come back. A longer stream, on audio of its own.
    const long = path.join(dir, 'long');
    fs.mkdirSync(long, { recursive: true });
    const longChunks = audioChunks(model, o.sequenceCalls, 5000 + STREAMING.indexOf(model));
    longChunks.forEach((c, k) => writeNpy(path.join(long, `${model.chunk.name}.${k}.npy`), c));
    const longRef = await reference(model, file, longChunks, ctx);
    const sequenceArgs = ['--calls', String(o.sequenceCalls), '--sequence', '1',
      '--chunk', `${model.chunk.name}=${path.join(long, `${model.chunk.name}.%ld.npy`)}`];
    for (const f of model.fixed.filter((f) => f.shape.length > 0))
      sequenceArgs.push('--input', `${f.name}=${io.fixedFile(f)}`);
    for (const s of model.states) sequenceArgs.push('--input', `${s.input}=${path.join(inputs, `${s.input}.npy`)}`);
    await attempt({
      name: 'sequence',
      calls: o.sequenceCalls,
      ref: longRef,
      outputs: io.plainOutputs,
      go: (out) => void run(o.stream, [model.name, out, '--connect', d.socket, ...sequenceArgs], 'sequence'),
    });
    await attempt({
      name: 'cli-connect',
      calls: o.cliCalls,
      go: (out) => cliLoop(o, model, model.name, io, out, o.cliCalls, d.socket),
    });
  } finally {
    const status = await stopDaemon(d);
    if (status !== 0) {
      lines.push(`heterod exited with ${status} on SIGTERM: ${tail(fs.readFileSync(path.join(dir, 'heterod.log'), 'utf8'))}`);
      ok = false;
    }
  }
  return { ok, lines };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  if (!fs.existsSync(cache)) {
    console.log(`SKIP streaming-model tests: ${cache} does not exist; run scripts/setup.sh --test-data`);
    process.exit(SKIP);
  }
  const { ort, why } = loadOrt(cache);
  if (!ort) {
    console.error(`check_streaming: ${why}; rerun scripts/setup.sh --test-data`);
    process.exit(1);
  }
  const work = o.keep || fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-streaming-'));
  const ctx = { ort, cache };
  let passed = 0;
  let failed = 0;
  try {
    for (const model of STREAMING) {
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
