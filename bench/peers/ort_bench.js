#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node, its CPU execution provider) as the peer of
// ember-bench's onnx suite (bench/suite_onnx.cpp): times one model at one batch
// size and prints ONE line of JSON with the latency percentiles and a checksum of
// the output, so that the suite can check both sides computed the same thing.
//
//   node ort_bench.js --model m.onnx --input m_input_0.pb --batch 1000 \
//        --threads 2 --warmup 20 --iters 200
//   node ort_bench.js --model m.onnx --shape 1,784 --dtype float32 ...
//
// The input batch is the .pb's rows repeated cyclically up to --batch (Ember's side
// builds it the same way), or, with --shape/--dtype, a fixed pseudo-random tensor.
// Timed: the binding's synchronous InferenceSession.run (ORT's C++ Run plus the JS
// tensor wrapping), which is what an embedder of ORT pays; the public async
// session.run adds a Promise and a setImmediate per call, reported as api_median_us.
// The package lives in bench/peers/ort/node_modules (scripts/install-ort).
'use strict';
const fs = require('fs');
const path = require('path');

const ORT_DIR = process.env.EMBER_ORT_DIR || path.join(__dirname, 'ort', 'node_modules', 'onnxruntime-node');
const ort = require(ORT_DIR);
const { binding, initOrt } = require(path.join(ORT_DIR, 'dist', 'binding.js'));

function parseArgs(argv) {
  const a = { threads: 2, warmup: 10, iters: 100, batch: 1 };
  for (let i = 2; i < argv.length; i += 2) a[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const k of ['threads', 'warmup', 'iters', 'batch']) a[k] = Number(a[k]);
  if (!a.model || (!a.input && !a.shape)) throw new Error('need --model and --input or --shape/--dtype');
  return a;
}

// A serialized onnx.TensorProto: dims (1), data_type (2), float_data (4),
// int64_data (7), raw_data (9); only float32 (1) and int64 (7) tensors.
function readTensorProto(file) {
  const buf = fs.readFileSync(file);
  const varint = (b, p) => {  // [value, next position]
    let v = 0n, shift = 0n, byte;
    do { byte = b[p++]; v |= BigInt(byte & 0x7f) << shift; shift += 7n; } while (byte & 0x80);
    return [v, p];
  };
  const dims = [], floats = [], ints = [];
  let type = 0, raw = null, pos = 0, v;
  while (pos < buf.length) {
    [v, pos] = varint(buf, pos);
    const field = Number(v >> 3n), wire = Number(v & 7n);
    if (wire === 0) {
      [v, pos] = varint(buf, pos);
      if (field === 1) dims.push(Number(v)); else if (field === 2) type = Number(v); else if (field === 7) ints.push(v);
    } else if (wire === 2) {
      [v, pos] = varint(buf, pos);
      const body = buf.subarray(pos, pos + Number(v));
      pos += body.length;
      if (field === 9) raw = body;
      if (field === 4) for (let p = 0; p < body.length; p += 4) floats.push(body.readFloatLE(p));
      const packed = field === 1 ? dims : field === 7 ? ints : null;  // packed repeated int64
      for (let p = 0; packed && p < body.length;) { [v, p] = varint(body, p); packed.push(field === 1 ? Number(v) : v); }
    } else if (wire === 5 || wire === 1) pos += wire === 5 ? 4 : 8;
    else throw new Error(`${file}: wire type ${wire}`);
  }
  if (type !== 1 && type !== 7) throw new Error(`${file}: data type ${type} not read here`);
  const Arr = type === 1 ? Float32Array : BigInt64Array;
  const n = dims.reduce((x, y) => x * y, 1);
  const data = raw ? new Arr(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length))
                   : Arr.from(type === 1 ? floats : ints);
  if (data.length !== n) throw new Error(`${file}: ${data.length} values for dims ${dims}`);
  return { type: type === 1 ? 'float32' : 'int64', dims, data };
}

// Rows of `t` repeated cyclically up to `batch` rows.
function tileBatch(t, batch) {
  const row = t.data.length / t.dims[0];
  const out = new t.data.constructor(batch * row);
  for (let i = 0; i < batch; ++i) out.set(t.data.subarray((i % t.dims[0]) * row, (i % t.dims[0] + 1) * row), i * row);
  return new ort.Tensor(t.type, out, [batch, ...t.dims.slice(1)]);
}

function generated(shape, dtype, batch) {
  const dims = [batch, ...shape.split(',').map(Number).slice(1)];
  const n = dims.reduce((x, y) => x * y, 1);
  let s = 12345;
  const next = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const data = dtype === 'int64' ? BigInt64Array.from({ length: n }, () => BigInt(Math.floor(next() * 100)))
                                 : Float32Array.from({ length: n }, () => next() * 2 - 1);
  return new ort.Tensor(dtype, data, dims);
}

function percentile(sorted, q) { return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]; }

async function main() {
  const a = parseArgs(process.argv);
  const options = { intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential',
                    graphOptimizationLevel: 'all' };
  initOrt();
  const session = new binding.InferenceSession();
  session.loadModel(a.model, options);
  const inputName = session.inputMetadata[0].name, outputName = session.outputMetadata[0].name;
  const x = a.input ? tileBatch(readTensorProto(a.input), a.batch) : generated(a.shape, a.dtype, a.batch);
  const feeds = { [inputName]: x }, fetches = { [outputName]: null };
  const run = () => session.run(feeds, fetches, {});

  for (let i = 0; i < a.warmup; ++i) run();
  const t = [];
  for (let i = 0; i < a.iters; ++i) {
    const t0 = process.hrtime.bigint();
    run();
    t.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  t.sort((p, q) => p - q);

  // The public API's per-call cost, for the record (fewer calls: it is the same Run).
  const api = await ort.InferenceSession.create(a.model, options);
  const apiIters = Math.max(5, Math.floor(a.iters / 4)), ta = [];
  for (let i = 0; i < apiIters + 3; ++i) {
    const t0 = process.hrtime.bigint();
    await api.run(feeds);
    if (i >= 3) ta.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  ta.sort((p, q) => p - q);

  const y = run()[outputName].data;
  let sum = 0, absSum = 0;
  for (const v of y) { sum += v; absSum += Math.abs(v); }
  console.log(JSON.stringify({
    ort: require(path.join(ORT_DIR, 'package.json')).version, threads: a.threads, batch: a.batch, iters: a.iters,
    median_us: percentile(t, 0.5), p10_us: percentile(t, 0.1), p90_us: percentile(t, 0.9),
    p99_us: percentile(t, 0.99), min_us: t[0], api_median_us: percentile(ta, 0.5),
    output_shape: run()[outputName].dims, output_sum: sum, output_abs_sum: absSum,
  }));
}

main().catch((e) => { console.error(`ort_bench.js: ${e.message}`); process.exit(1); });
