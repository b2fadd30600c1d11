// Minimal .npy (version 1.0, little-endian float32, C order) reader and writer: the
// format both engines exchange inputs and outputs in (minnow reads/writes .npy natively).
'use strict';
const fs = require('fs');

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.length < 10 || b[0] !== 0x93 || b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = b.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape) throw new Error(`${path}: cannot parse the .npy header`);
  if (descr[1] !== '<f4') throw new Error(`${path}: dtype ${descr[1]}, only float32 (<f4) is compared`);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: Fortran order not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const n = dims.reduce((a, d) => a * d, 1);
  if (b.length < start + 4 * n) throw new Error(`${path}: truncated (${b.length - start} bytes for ${n} floats)`);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) data[i] = b.readFloatLE(start + 4 * i);
  return { dims, data };
}

function writeNpy(path, dims, data) {
  const shape = '(' + dims.join(', ') + (dims.length === 1 ? ',' : '') + ')';
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const out = Buffer.alloc(10 + h.length + 4 * data.length);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(out, 0);
  out.writeUInt16LE(h.length, 8);
  out.write(h, 10, 'latin1');
  for (let i = 0; i < data.length; ++i) out.writeFloatLE(data[i], 10 + h.length + 4 * i);
  fs.writeFileSync(path + '.tmp', out);
  fs.renameSync(path + '.tmp', path);
}

module.exports = { readNpy, writeNpy };
