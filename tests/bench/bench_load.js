#!/usr/bin/env node
// heterod against ONNX Runtime on the box users have: beside busy co-tenants
// and at the cadence edge models run, not only quiet and flat out.
//
// For each model and each condition, rounds alternate the two sides (which
// goes first alternates too):
//   hetero bench MODEL --device CPU --time T [--rate R] --json
//   ONNX Runtime (onnxruntime-node, intraOpNumThreads 2, interOpNumThreads 1)
//     running the same inputs for T seconds, flat out or at R per second
// Conditions:
//   quiet         nothing else runs
//   cotenants=N   N busy loops at nice 0 (plain `while :; do :; done` shells
//                 this script starts before the round and kills after it)
//   rate=R        R inferences per second on a fixed schedule, the cadence of
//                 a VAD (31.25/s: 32 ms chunks) or a wake-word model (12.5/s)
// Each side reports p50, p99, max and the CPU time its whole process used
// per inference (getrusage / process.cpuUsage over the measured loop: idle
// threads' spinning counts, which is the point at a cadence). The table
// gives the median over rounds of each figure.
//
// With --daemon, each round also runs the model through heterod (started by
// this script on a temporary socket, serving the model on CPU):
//   hetero --connect SOCKET bench NAME --time T [--rate R] --json
// and the daemon's CPU time per inference is read from its threads'
// /proc/PID/task/TID/schedstat.
//
//   node bench_load.js [--hetero PATH] [--heterod PATH] [--daemon] [--rounds R] [--time S]
//                      [--only NAME]... [--condition C]... [--json]
//
// Default conditions per model: quiet, cotenants=1, cotenants=2, and the
// model's cadence where it has one (RATES below).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn, spawnSync } = require('child_process');
const { MODELS, STREAMING, cacheDir, loadOrt, modelPath } = require('../models/model_set.js');
const { benchInputs, median } = require('./bench_models.js');

// The models of the issue that asked for this bench, and their cadences.
const DEFAULT_MODELS = ['oww-embedding', 'ppocr-cls', 'silero-vad-v5', 'oww-hey-mycroft', 'oww-melspectrogram'];
const RATES = { 'oww-embedding': 12.5, 'silero-vad-v5': 31.25, 'oww-hey-mycroft': 12.5, 'oww-melspectrogram': 12.5 };

function usage(why) {
  console.error(`bench_load: ${why}\n` +
    'usage: node bench_load.js [--hetero PATH] [--rounds R] [--time S] [--only NAME]... [--condition C]... [--json]\n' +
    '       [--daemon] [--heterod PATH]\n       C: quiet | cotenants=N | rate=R');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { hetero: process.env.HETERO_BIN || '', heterod: '', daemon: false, rounds: 3, time: 4, only: [],
    conditions: [], json: false };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--hetero') o.hetero = value();
    else if (a === '--heterod') o.heterod = value();
    else if (a === '--daemon') o.daemon = true;
    else if (a === '--rounds') o.rounds = Number(value());
    else if (a === '--time') o.time = Number(value());
    else if (a === '--only') o.only.push(value());
    else if (a === '--condition') o.conditions.push(parseCondition(value()));
    else if (a === '--json') o.json = true;
    else usage(`unknown argument ${a}`);
  }
  if (!Number.isInteger(o.rounds) || o.rounds < 1) usage('--rounds wants an integer >= 1');
  if (!(o.time > 0)) usage('--time wants a positive number of seconds');
  if (!o.hetero || !fs.existsSync(o.hetero)) usage(`no hetero executable at '${o.hetero}' (--hetero or $HETERO_BIN)`);
  if (!o.only.length) o.only = DEFAULT_MODELS;
  if (o.daemon && !o.heterod) o.heterod = path.join(path.dirname(o.hetero), '..', 'daemon', 'heterod');
  if (o.daemon && !fs.existsSync(o.heterod)) usage(`no heterod at '${o.heterod}' (--heterod)`);
  return o;
}

function parseCondition(text) {
  if (text === 'quiet') return { label: 'quiet', cotenants: 0, rate: 0 };
  let m = /^cotenants=(\d+)$/.exec(text);
  if (m) return { label: `${m[1]} co-tenant${m[1] === '1' ? '' : 's'}`, cotenants: Number(m[1]), rate: 0 };
  m = /^rate=([0-9.]+)$/.exec(text);
  if (m && Number(m[1]) > 0) return { label: `at ${m[1]}/s`, cotenants: 0, rate: Number(m[1]) };
  usage(`unknown condition '${text}'`);
}

function conditionsFor(model, o) {
  if (o.conditions.length) return o.conditions;
  const list = ['quiet', 'cotenants=1', 'cotenants=2'];
  if (RATES[model.name]) list.push(`rate=${RATES[model.name]}`);
  return list.map(parseCondition);
}

// Busy loops at nice 0, the load of a camera pipeline or a build beside us.
function startCotenants(n) {
  const procs = [];
  for (let i = 0; i < n; ++i) procs.push(spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  return procs;
}

async function stopCotenants(procs) {
  await Promise.all(procs.map((p) => new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', resolve);
    p.kill('SIGKILL');
  })));
}

function percentile(sorted, p) {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1];
}

const WARMUP = 3;

// One `hetero bench` run: in process on FILE, or with `daemon` through it
// on the model it serves (its CPU time from /proc).
function heteroRound(file, args, cond, o, daemon) {
  const cmd = daemon ? ['--connect', daemon.socket, 'bench', daemon.name, ...args.filter((a, i) => !isShapeArg(args, i))]
    : ['bench', file, '--device', 'CPU', '--cache-dir', o.cacheDir, ...args];
  cmd.push('--warmup', String(WARMUP), '--time', String(o.time), '--json', '--quiet');
  if (cond.rate) cmd.push('--rate', String(cond.rate));
  const cpu0 = daemon ? daemonCpuMs(daemon) : 0;
  const r = spawnSync(o.hetero, cmd, { encoding: 'utf8', timeout: 600e3 });
  if (r.status !== 0) throw new Error(`hetero ${cmd.join(' ')}: ${r.signal || r.status}: ${(r.stderr || '').trim().slice(-300)}`);
  const j = JSON.parse(r.stdout);
  // The daemon's figure spans the whole client run: its warm-up inferences
  // count as inferences it served.
  const cpu = daemon ? (daemonCpuMs(daemon) - cpu0) / (j.iterations + WARMUP) : j.cpu_ms_per_inference;
  return { p50: j.latency_ms.median, p99: j.latency_ms.p99, max: j.latency_ms.max, cpu, count: j.iterations };
}

// `--shape NAME=DIMS` pairs: the daemon's config fixes its model's shapes.
function isShapeArg(args, i) {
  return args[i] === '--shape' || (i > 0 && args[i - 1] === '--shape');
}

// CPU time (ms) the daemon's threads have run: the first field of each
// thread's /proc/PID/task/TID/schedstat, in ns. /proc/PID/stat's clock ticks
// are 10 ms apart, a quarter of what 40 inferences at a cadence take.
// The threads that serve inferences (the loop, the streams and their
// OpenMP teams) live as long as the daemon does, so none is missed.
function daemonCpuMs(daemon) {
  const tasks = `/proc/${daemon.process.pid}/task`;
  let ns = 0;
  for (const tid of fs.readdirSync(tasks)) {
    try {
      ns += Number(fs.readFileSync(`${tasks}/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch (e) {
      if (e.code !== 'ENOENT' && e.code !== 'ESRCH') throw e;  // a thread that ended since the listing
    }
  }
  return ns / 1e6;
}

// heterod serving `model` (its declared input shapes fixed) on a socket in `dir`.
async function startDaemon(model, file, o, dir) {
  const socket = path.join(dir, `${model.name}.sock`);
  const config = path.join(dir, `${model.name}.yaml`);
  const shapes = model.chunk
    ? [[model.chunk.name, [1, model.chunk.context + model.chunk.samples]], ...model.states.map((s) => [s.input, s.shape])]
    : model.inputs.map((i) => [i.name, i.shape]);
  const shapeText = shapes.map(([n, s]) => `${JSON.stringify(n)}: [${s.join(', ')}]`).join(', ');
  fs.writeFileSync(config, `socket: {path: ${socket}}\ncache_dir: ${path.join(dir, 'daemon-cache')}\n` +
    `models:\n  - {name: ${model.name}, path: ${file}, device: CPU, shapes: {${shapeText}}, parallel: 1}\n`);
  const log = path.join(dir, `${model.name}.log`);
  const proc = spawn(o.heterod, ['--config', config], { stdio: ['ignore', fs.openSync(log, 'w'), fs.openSync(log, 'a')] });
  for (let i = 0; i < 600 && proc.exitCode === null; ++i) {
    const r = spawnSync(o.hetero, ['--connect', socket, 'models'], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.includes('ready')) return { process: proc, socket, name: model.name };
    await sleepMs(50);
  }
  proc.kill('SIGKILL');
  throw new Error(`heterod did not serve ${model.name}: ${fs.readFileSync(log, 'utf8').slice(-400)}`);
}

async function stopDaemon(daemon) {
  if (!daemon || daemon.process.exitCode !== null) return;
  await new Promise((resolve) => {
    daemon.process.once('exit', resolve);
    daemon.process.kill('SIGTERM');
  });
}

function sleepMs(ms) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

async function ortRound(session, feeds, cond, o) {
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  const times = [];
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const period = cond.rate ? 1e3 / cond.rate : 0;
  for (let k = 0; ; ++k) {
    if (period) {
      if (k * period >= o.time * 1e3) break;
      await sleepMs(start + k * period - performance.now());
    } else if (performance.now() - start >= o.time * 1e3) {
      break;
    }
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), max: times[times.length - 1],
    cpu: (cpu.user + cpu.system) / 1e3 / times.length, count: times.length };
}

const FIGURES = ['p50', 'p99', 'max', 'cpu'];

function summarize(rounds) {
  const out = {};
  for (const f of FIGURES) out[f] = median(rounds.map((r) => r[f]));
  out.count = median(rounds.map((r) => r.count));
  return out;
}

async function benchModel(model, o, ctx, dir) {
  const file = modelPath(ctx.cache, model);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing (run scripts/setup.sh --test-data)`);
  const { feeds, args } = await benchInputs(model, ctx, dir);
  const session = await ctx.ort.InferenceSession.create(file, {
    intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const daemon = o.daemon ? await startDaemon(model, file, o, dir) : null;
  const rows = [];
  try {
    for (const cond of conditionsFor(model, o)) {
      const h = [], d = [], t = [];
      for (let r = 0; r < o.rounds; ++r) {
        const cotenants = startCotenants(cond.cotenants);
        try {
          await sleepMs(cond.cotenants ? 200 : 0);  // let the loops take their cores
          const sides = [() => h.push(heteroRound(file, args, cond, o)),
            async () => t.push(await ortRound(session, feeds, cond, o))];
          if (daemon) sides.splice(1, 0, () => d.push(heteroRound(file, args, cond, o, daemon)));
          if (r % 2) sides.reverse();
          for (const side of sides) await side();
        } finally {
          await stopCotenants(cotenants);
        }
        if (!o.json) {
          const f = (x) => `p50 ${x.p50.toFixed(2)} p99 ${x.p99.toFixed(2)} cpu ${x.cpu.toFixed(2)}`;
          process.stderr.write(`  ${model.name} ${cond.label} round ${r + 1}/${o.rounds}: heterod ${f(h[r])}; ` +
            `${daemon ? `daemon ${f(d[r])}; ` : ''}ORT ${f(t[r])}\n`);
        }
      }
      rows.push({ model: model.name, condition: cond.label, heterod: summarize(h), daemon: daemon ? summarize(d) : null,
        onnxruntime: summarize(t) });
    }
  } finally {
    await stopDaemon(daemon);
  }
  return rows;
}

function printTable(rows, o) {
  const header = ['model', 'condition', 'heterod p50', 'p99', 'max', 'cpu/inf',
    ...(o.daemon ? ['daemon p50', 'p99', 'max', 'cpu/inf'] : []), 'ORT p50', 'p99', 'max', 'cpu/inf', 'p99 h/ORT',
    ...(o.daemon ? ['p99 daemon/h'] : [])];
  const table = [header];
  for (const r of rows) {
    if (r.error) {
      table.push([r.model, 'error', ...header.slice(2).map(() => '')]);
      continue;
    }
    const h = r.heterod, d = r.daemon, t = r.onnxruntime;
    const figures = (x) => FIGURES.map((f) => x[f].toFixed(3));
    table.push([r.model, r.condition, ...figures(h), ...(d ? figures(d) : []), ...figures(t), (h.p99 / t.p99).toFixed(2),
      ...(d ? [(d.p99 / h.p99).toFixed(2)] : [])]);
  }
  const widths = header.map((_, c) => Math.max(...table.map((row) => row[c].length)));
  const line = (row) => row.map((cell, c) => (c >= 2 ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  console.log(line(table[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table.slice(1)) console.log(line(row));
  console.log(`\nms; cpu/inf: CPU time of the whole process per inference (through the daemon: heterod's). ${o.rounds} rounds of ${o.time} s per side ` +
    'and condition, alternating; each figure is the median over rounds. ' +
    `${os.cpus().length} CPUs: ${os.cpus()[0].model}.`);
  for (const r of rows) if (r.error) console.log(`${r.model}: ${r.error.split('\n')[0].slice(0, 300)}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cache = cacheDir();
  const { ort, why } = fs.existsSync(cache) ? loadOrt(cache) : { ort: null, why: `${cache} does not exist` };
  if (!ort) usage(`${why}; run scripts/setup.sh --test-data`);
  const ctx = { ort, cache };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hetero-bench-load-'));
  o.cacheDir = path.join(dir, 'cache');
  const rows = [];
  try {
    for (const name of o.only) {
      const model = [...MODELS, ...STREAMING].find((m) => m.name === name);
      if (!model) usage(`no model '${name}' in tests/models/model_set.js`);
      try {
        rows.push(...(await benchModel(model, o, ctx, dir)));
      } catch (e) {
        rows.push({ model: name, error: e.message });
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (o.json) console.log(JSON.stringify({ rounds: o.rounds, time_s: o.time, rows }, null, 2));
  else printTable(rows, o);
  process.exit(rows.some((r) => r.error) ? 1 : 0);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
