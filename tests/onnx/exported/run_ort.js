#!/usr/bin/env node
// Runs models exported by Ember in ONNX Runtime (onnxruntime-node, CPU) and
// writes its outputs as .npy, the reference data of tests/onnx/test_export.cpp:
//
//   node run_ort.js DIR name [name ...]
//
// reads DIR/<name>.onnx and DIR/<name>_input_<i>.npy (one per graph input, in
// graph order), writes DIR/<name>_ort_output_<i>.npy. The .npy reader and writer
// handle the little-endian float32, int64 and bool arrays these models use.
'use strict';
const fs = require('fs');
const path = require('path');

const ORT_DIR = process.env.EMBER_ORT_DIR ||
    path.join(__dirname, '..', '..', '..', 'bench', 'peers', 'ort', 'node_modules', 'onnxruntime-node');
const ort = require(ORT_DIR);

const TYPES = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '|b1': ['bool', Uint8Array] };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter(s => s.trim()).map(Number);
  const [type, Arr] = TYPES[descr] || [];
  if (!type) throw new Error(`${file}: dtype ${descr}`);
  const body = buf.subarray(start + hlen);
  const data = new Arr(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  return new ort.Tensor(type, type === 'bool' ? Array.from(data, v => v !== 0) : data, dims);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(TYPES).find(k => TYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`output type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // pad the preamble to 64 bytes
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.type === 'bool' ? Buffer.from(Uint8Array.from(tensor.data, v => (v ? 1 : 0)))
                                      : Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  const [dir, ...names] = process.argv.slice(2);
  if (!dir || names.length === 0) throw new Error('usage: run_ort.js DIR name [name ...]');
  for (const name of names) {
    const session = await ort.InferenceSession.create(path.join(dir, `${name}.onnx`),
                                                      { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
    const feeds = {};
    session.inputNames.forEach((input, i) => { feeds[input] = readNpy(path.join(dir, `${name}_input_${i}.npy`)); });
    const out = await session.run(feeds);
    session.outputNames.forEach((output, i) => writeNpy(path.join(dir, `${name}_ort_output_${i}.npy`), out[output]));
    console.log(`${name}: ${session.outputNames.length} outputs from onnxruntime-node ${require(path.join(ORT_DIR, 'package.json')).version}`);
  }
}

main().catch(e => { console.error(`run_ort.js: ${e.message}`); process.exit(1); });
