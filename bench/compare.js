#!/usr/bin/env node
// Side-by-side ONNX Runtime vs Minnow (bench/compare.sh prepares everything and runs this).
// For each model and thread count the two engines are timed ALTERNATELY in rounds
// (ORT, Minnow, Minnow, ORT, ...: the order flips every round so a slow drift of the
// machine's load hits both alike), each round a fresh process of each engine with its own
// warm-up, the same input file and the same thread count. Reported: the median over rounds
// of each round's median, the ratio Minnow/ORT, the largest |difference| between the two
// engines' outputs on that input, and Minnow's load + prepare time.
//   node bench/compare.js --minnow BIN --ort DIR --models DIR [--threads 1,2]
//        [--rounds R] [--seconds S] [--warmup W] [--only name,name] [--markdown FILE]
//        [--pin on|off] [--probe CPU_PROBE]
// --pin on (the default where `taskset` exists): every process of a run with T threads is
// bound to the same T CPUs (the first T this process may use), so both engines run on
// the same cores. On a VM whose virtual CPUs are not alike (a busy neighbour on one host
// core) a 1-thread process otherwise lands on either and its median moves with it: on
// the Zen 4 guest of BENCHMARKS.md squeezenet1_1 took 6.5-6.9 ms on one vCPU and 8.3 ms
// on the other, whichever engine it was.
// --probe (bench/cpu_probe.c, built by compare.sh): before and after each row, each CPU
// the row runs on is timed on a fixed loop; the row's line says so where one ran at less
// than kSlowProbe of the fastest probe seen on this machine (models/cpu_probe_best.json):
// the host slowed it, and the row's ratios then say more about the host than about the
// engines (Minnow's kernels lose more there than ONNX Runtime's: BENCHMARKS.md).
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { readNpy, writeNpy } = require('./npy');

function parseArgs(argv) {
  const o = { threads: [1, 2], rounds: 5, seconds: 1, warmup: 3, only: null, pin: 'on' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i], v = argv[i + 1];
    if (v === undefined) throw new Error(`${k} needs a value`);
    switch (k) {
      case '--minnow': o.minnow = v; break;
      case '--ort': o.ort = v; break;
      case '--models': o.models = v; break;
      case '--threads': o.threads = v.split(',').map(Number); break;
      case '--rounds': o.rounds = Number(v); break;
      case '--seconds': o.seconds = Number(v); break;
      case '--warmup': o.warmup = Number(v); break;
      case '--only': o.only = v.split(','); break;
      case '--markdown': o.markdown = v; break;
      case '--probe': o.probe = v; break;
      case '--pin':
        if (v !== 'on' && v !== 'off') throw new Error(`--pin: 'on' or 'off', not '${v}'`);
        o.pin = v;
        break;
      default: throw new Error(`unknown argument '${k}'`);
    }
  }
  for (const k of ['minnow', 'ort', 'models']) if (!o[k]) throw new Error(`--${k} is required`);
  if (!(o.rounds >= 1) || o.threads.some((t) => !(t >= 1))) throw new Error('--rounds and --threads must be >= 1');
  return o;
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
};

// Uniform [-1, 1) from a fixed-seed xorshift: the same input for both engines, every run.
function randomInput(dims, seed) {
  const n = dims.reduce((a, d) => a * d, 1), data = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; ++i) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    data[i] = (s / 4294967296) * 2 - 1;
  }
  return data;
}

// The CPUs this process may run on (Linux: /proc/self/status), or null.
function allowedCpus() {
  try {
    const m = fs.readFileSync('/proc/self/status', 'utf8').match(/^Cpus_allowed_list:\s*(\S+)/m);
    if (!m) return null;
    const cpus = [];
    for (const part of m[1].split(',')) {
      const [a, b] = part.split('-').map(Number);
      for (let c = a; c <= (b === undefined ? a : b); ++c) cpus.push(c);
    }
    return cpus.length ? cpus : null;
  } catch (e) {
    return null;
  }
}

// `taskset -c LIST` for runs with `threads` threads, or null (pinning off or impossible).
function pinPrefix(o, threads) {
  if (o.pin !== 'on') return null;
  const cpus = allowedCpus();
  if (!cpus || cpus.length < threads) return null;
  const t = spawnSync('taskset', ['-c', String(cpus[0]), 'true']);
  if (t.error || t.status !== 0) return null;
  return ['taskset', '-c', cpus.slice(0, threads).join(',')];
}

function runJson(cmd, args, what, pin = null) {
  if (pin) {
    args = [...pin.slice(1), cmd, ...args];
    cmd = pin[0];
  }
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${what}: cannot start ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what}: ${cmd} exited ${r.status}:\n${(r.stderr || '').trim()}`);
  const line = r.stdout.trim().split('\n').pop();
  try { return JSON.parse(line); } catch (e) { throw new Error(`${what}: no JSON from ${cmd}: ${line}`); }
}

// Each CPU of `cpus` (or the first one this process may use) on the probe's loop: million
// multiply-adds a second, null for a CPU the probe could not run on.
function probeCpus(o, cpus) {
  if (!o.probe) return null;
  const list = cpus || [(allowedCpus() || [0])[0]];
  return list.map((c) => {
    const r = spawnSync('taskset', ['-c', String(c), o.probe], { encoding: 'utf8' });
    if (r.error || r.status !== 0) return { cpu: c, mops: null };
    try { return { cpu: c, mops: JSON.parse(r.stdout.trim()).mops }; } catch (e) { return { cpu: c, mops: null }; }
  });
}
const kSlowProbe = 0.85;

function maxAbsDiff(a, b, what) {
  if (a.data.length !== b.data.length) throw new Error(`${what}: output sizes differ (${a.dims} vs ${b.dims})`);
  let m = 0;
  for (let i = 0; i < a.data.length; ++i) {
    const d = Math.abs(a.data[i] - b.data[i]);
    if (!(d <= m)) m = d;  // NaN propagates as NaN
  }
  return m;
}

function benchOne(o, model, threads, tmp) {
  const onnx = path.join(o.models, model.file);
  const mnw = onnx.replace(/\.onnx$/, '.minnow');
  const input = path.join(tmp, `${model.name}.input.npy`);
  const ortOut = path.join(tmp, `${model.name}.t${threads}.ort.npy`);
  const mnwDir = path.join(tmp, `${model.name}.t${threads}.minnow`);
  const ort = [], mn = [], load = [], prep = [], create = [];
  let mnLast = null;
  const pin = o.pins.get(threads);
  const pinCpus = pin ? pin[2].split(',').map(Number) : null;
  const probeBefore = probeCpus(o, pinCpus);
  for (let r = 0; r < o.rounds; ++r) {
    const last = r === o.rounds - 1;
    const runOrt = () => {
      const args = [path.join(__dirname, 'ort_bench.js'), '--ort', o.ort, '--model', onnx, '--input', input,
        '--threads', String(threads), '--warmup', String(o.warmup), '--seconds', String(o.seconds)];
      if (last) args.push('--output', ortOut);
      const j = runJson(process.execPath, args, `${model.name} ORT`, pin);
      ort.push(j.median_ms); create.push(j.create_ms);
    };
    const runMinnow = () => {
      const args = ['bench', mnw, '-i', input, '-t', String(threads), '--warmup', String(o.warmup),
        '--seconds', String(o.seconds), '--json'];
      if (last) args.push('-o', mnwDir);
      const j = runJson(o.minnow, args, `${model.name} Minnow`, pin);
      mn.push(j.median_ms); load.push(j.load_ms); prep.push(j.prepare_ms);
      mnLast = j;
    };
    if (r % 2 === 0) { runOrt(); runMinnow(); } else { runMinnow(); runOrt(); }
  }
  const probeAfter = probeCpus(o, pinCpus);
  const outs = fs.readdirSync(mnwDir).filter((f) => f.endsWith('.npy'));
  if (outs.length !== 1) throw new Error(`${model.name}: Minnow wrote ${outs.length} outputs, expected 1`);
  const ortY = readNpy(ortOut);
  const diff = maxAbsDiff(ortY, readNpy(path.join(mnwDir, outs[0])), model.name);
  // The scale the difference is to be read against (random weights can give large logits).
  const maxAbs = ortY.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  return {
    model: model.name, threads, ort_ms: median(ort), minnow_ms: median(mn), diff, max_abs_output: maxAbs,
    load_ms: median(load), prepare_ms: median(prep), ort_create_ms: median(create),
    ort_rounds: ort, minnow_rounds: mn, peak_bytes: mnLast.peak_bytes, weight_bytes: mnLast.weight_bytes,
    cpus: pin ? pin[2] : 'any', probe_before: probeBefore, probe_after: probeAfter,
  };
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const index = JSON.parse(fs.readFileSync(path.join(o.models, 'models.json'), 'utf8'));
  const models = index.filter((m) => !o.only || o.only.includes(m.name));
  if (!models.length) throw new Error(`no model matches --only ${o.only}`);
  // The taskset prefix per thread count, worked out once (not per model).
  o.pins = new Map(o.threads.map((t) => [t, pinPrefix(o, t)]));
  const tmp = fs.mkdtempSync(path.join(require('os').tmpdir(), 'minnow-compare-'));
  const rows = [];
  const fmt = (x, d) => (x === undefined || x === null || Number.isNaN(x) ? 'n/a' : x.toFixed(d));
  const line = (r) => `| ${r.model} | ${r.threads} | ${fmt(r.ort_ms, 2)} | ${fmt(r.minnow_ms, 2)} | ` +
    `${fmt(r.minnow_ms / r.ort_ms, 2)} | ${r.diff.toExponential(1)} | ${fmt(r.load_ms, 1)} + ${fmt(r.prepare_ms, 1)} |`;
  const head = '| model | threads | ORT median ms | Minnow median ms | ratio Minnow/ORT | max abs diff | Minnow load + prepare ms |\n' +
    '|---|---:|---:|---:|---:|---:|---:|';
  console.log(head);
  // The fastest CPU probe seen (--probe), in this run or an earlier one on this machine
  // (kept beside the models): a run that the host slows from start to end is still seen.
  const bestFile = path.join(o.models, 'cpu_probe_best.json');
  let fastest = 0;
  try { fastest = JSON.parse(fs.readFileSync(bestFile, 'utf8')).mops || 0; } catch (e) { fastest = 0; }
  for (const m of models) {
    const dims = m.shape;
    writeNpy(path.join(tmp, `${m.name}.input.npy`), dims, randomInput(dims, 12345));
    for (const t of o.threads) {
      const r = benchOne(o, m, t, tmp);
      rows.push(r);
      console.log(line(r));
      // On a shared, noisy host the round medians drift together: the two rounds of one
      // round pair ran seconds apart, so their ratios, and the ratio of the best rounds,
      // say more than medians taken minutes apart.
      const paired = r.minnow_rounds.map((x, i) => x / r.ort_rounds[i]);
      if (r.probe_before) {
        const all = [...r.probe_before, ...r.probe_after].map((p) => p.mops).filter((x) => x);
        const top = Math.max(fastest, ...all);
        fastest = top;
        const fmt1 = (p) => (p.mops ? (p.mops / 1000).toFixed(1) : 'n/a');
        const slow = all.some((x) => x < kSlowProbe * top);
        console.error(`  ${m.name} t${t}: CPU probe (G multiply-adds/s) before ` +
          r.probe_before.map((p) => `cpu${p.cpu} ${fmt1(p)}`).join(', ') + '; after ' +
          r.probe_after.map((p) => `cpu${p.cpu} ${fmt1(p)}`).join(', ') +
          (slow ? `; below ${kSlowProbe}x the fastest seen here (${(top / 1000).toFixed(1)}): the host slowed this row` : ''));
      }
      console.error(`  ${m.name} t${t}: ORT rounds ${r.ort_rounds.map((x) => x.toFixed(2)).join(' ')}; ` +
        `Minnow rounds ${r.minnow_rounds.map((x) => x.toFixed(2)).join(' ')}; ` +
        `paired ratios ${paired.map((x) => x.toFixed(2)).join(' ')} (median ${median(paired).toFixed(2)}, ` +
        `best rounds ${(Math.min(...r.minnow_rounds) / Math.min(...r.ort_rounds)).toFixed(2)}); ` +
        `ORT session create ${r.ort_create_ms.toFixed(0)} ms; max |ORT output| ${r.max_abs_output.toPrecision(3)}; ` +
        `CPUs ${r.cpus}`);
    }
  }
  if (o.markdown) fs.writeFileSync(o.markdown, head + '\n' + rows.map(line).join('\n') + '\n');
  fs.writeFileSync(path.join(o.models, 'last_compare.json'), JSON.stringify(rows, null, 1));
  if (o.probe && fastest > 0) fs.writeFileSync(bestFile, JSON.stringify({ mops: fastest }) + '\n');
  fs.rmSync(tmp, { recursive: true, force: true });
}

try { main(); } catch (e) { console.error(`compare: error: ${e.message}`); process.exit(1); }
