#!/usr/bin/env node
// Times one model in ONNX Runtime (onnxruntime-node) the way `minnow bench` times Minnow:
// one session, same input, warm-up runs untimed, then timed runs of session.run() only.
//   node bench/ort_bench.js --ort DIR --model M.onnx --input X.npy [--threads N]
//        [--warmup W] [--runs R | --seconds S] [--output OUT.npy]
// Prints one JSON line: median_ms, min_ms, max_ms, runs, threads, create_ms.
// --ort is the folder holding node_modules/onnxruntime-node (bench/compare.sh installs it).
'use strict';
const path = require('path');
const { readNpy, writeNpy } = require('./npy');

function parseArgs(argv) {
  const o = { threads: 1, warmup: 5, runs: 0, seconds: 0 };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i], v = argv[i + 1];
    const num = (x) => { const n = Number(x); if (!Number.isFinite(n) || n < 0) throw new Error(`${k}: bad number '${x}'`); return n; };
    switch (k) {
      case '--ort': o.ort = v; ++i; break;
      case '--model': o.model = v; ++i; break;
      case '--input': o.input = v; ++i; break;
      case '--output': o.output = v; ++i; break;
      case '--threads': o.threads = num(v); ++i; break;
      case '--warmup': o.warmup = num(v); ++i; break;
      case '--runs': o.runs = num(v); ++i; break;
      case '--seconds': o.seconds = num(v); ++i; break;
      default: throw new Error(`unknown argument '${k}'`);
    }
  }
  for (const k of ['ort', 'model', 'input']) if (!o[k]) throw new Error(`--${k} is required`);
  if (o.threads < 1) throw new Error('--threads must be >= 1');
  return o;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require(path.resolve(o.ort, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    throw new Error(`cannot load onnxruntime-node from ${o.ort}: ${e.message}`);
  }
  const x = readNpy(o.input);
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(o.model, {
    intraOpNumThreads: o.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
  });
  const createMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (session.inputNames.length !== 1) throw new Error(`${o.model}: ${session.inputNames.length} inputs, the bench feeds one`);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.dims) };
  let out;
  for (let i = 0; i < Math.max(1, o.warmup); ++i) out = await session.run(feeds);
  const times = [];
  const target = o.runs > 0 ? o.runs : (o.seconds > 0 ? Infinity : 50);
  const start = process.hrtime.bigint();
  while (times.length < target) {
    const r0 = process.hrtime.bigint();
    out = await session.run(feeds);
    const r1 = process.hrtime.bigint();
    times.push(Number(r1 - r0) / 1e6);
    if (o.seconds > 0 && Number(r1 - start) / 1e9 >= o.seconds) break;
  }
  if (o.output) {
    const y = out[session.outputNames[0]];
    writeNpy(o.output, y.dims, y.data);
  }
  process.stdout.write(JSON.stringify({
    median_ms: median(times), min_ms: Math.min(...times), max_ms: Math.max(...times), runs: times.length,
    threads: o.threads, create_ms: createMs, ort_version: ort.env && ort.env.versions ? ort.env.versions.common : undefined,
  }) + '\n');
}

main().catch((e) => { process.stderr.write(`ort_bench: error: ${e.message}\n`); process.exit(1); });
