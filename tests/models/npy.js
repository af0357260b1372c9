// Strict reader and writer of NumPy .npy files (format versions 1.0-3.0),
// little-endian C-order arrays of fixed-size numeric or bool elements. What it
// does not understand (Fortran order, big-endian, object or structured dtypes,
// a size that disagrees with the shape) is an error, never a guess: the tests
// use it to check what `hetero run` writes.
'use strict';

const fs = require('fs');

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

// NumPy descr → our dtype name and the typed array that holds it. float16
// stays as raw bits in a Uint16Array (JavaScript has no half type); bool is
// one byte per element.
const DTYPES = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<f2': ['float16', Uint16Array],
  '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array],
  '<i2': ['int16', Int16Array],
  '<u2': ['uint16', Uint16Array],
  '<i4': ['int32', Int32Array],
  '<u4': ['uint32', Uint32Array],
  '<i8': ['int64', BigInt64Array],
  '<u8': ['uint64', BigUint64Array],
  '|b1': ['bool', Uint8Array],
};
const DESCR_OF = Object.fromEntries(Object.entries(DTYPES).map(([descr, [name]]) => [name, descr]));

function fail(file, why) {
  throw new Error(`${file}: ${why}`);
}

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }
// accepting exactly the three keys NumPy writes and nothing else.
function parseHeader(text, file) {
  const m = /^\{\s*(.*?)\s*\}\s*$/s.exec(text);
  if (!m) fail(file, `header is not a dict: ${JSON.stringify(text)}`);
  const inner = m[1];
  const item = /'([a-z_]+)'\s*:\s*('[^']*'|True|False|\([^)]*\))\s*(?:,\s*|$)/y;
  const fields = {};
  for (let pos = 0; pos < inner.length; pos = item.lastIndex) {
    item.lastIndex = pos;
    const match = item.exec(inner);
    if (!match) fail(file, `cannot parse header ${JSON.stringify(text)}`);
    if (match[1] in fields) fail(file, `header repeats key '${match[1]}'`);
    fields[match[1]] = match[2];
  }
  const keys = Object.keys(fields).sort().join(', ');
  if (keys !== 'descr, fortran_order, shape') fail(file, `header has keys {${keys}}, expected descr, fortran_order, shape`);

  const descr = fields.descr.slice(1, -1);
  if (!(descr in DTYPES)) fail(file, `unsupported dtype '${descr}'`);
  if (fields.fortran_order !== 'False') fail(file, 'Fortran-order arrays are not supported');
  const parts = fields.shape.slice(1, -1).split(',').map((s) => s.trim());
  const trailingComma = parts.length > 1 && parts[parts.length - 1] === '';
  if (trailingComma) parts.pop();
  if (parts.length === 1 && parts[0] === '') parts.pop(); // "()": a scalar
  // Python needs the trailing comma of a one-element tuple: "(3,)".
  if (parts.some((d) => !/^\d+$/.test(d)) || (parts.length === 1 && !trailingComma))
    fail(file, `bad shape ${fields.shape}`);
  return { descr, shape: parts.map(Number) };
}

function numel(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

// Returns { dtype, shape, data } with `data` a typed array of its own memory.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(MAGIC)) fail(file, 'not a .npy file (bad magic)');
  const major = buf[6];
  if (major < 1 || major > 3) fail(file, `unsupported format version ${major}.${buf[7]}`);
  const lenBytes = major === 1 ? 2 : 4;
  const headerStart = 8 + lenBytes;
  if (buf.length < headerStart) fail(file, 'truncated header');
  const headerLen = lenBytes === 2 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const dataStart = headerStart + headerLen;
  if (buf.length < dataStart) fail(file, 'truncated header');
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', headerStart, dataStart);
  const { descr, shape } = parseHeader(header, file);

  const [dtype, Ctor] = DTYPES[descr];
  const n = numel(shape);
  const want = n * Ctor.BYTES_PER_ELEMENT;
  if (buf.length - dataStart !== want)
    fail(file, `holds ${buf.length - dataStart} data bytes, shape [${shape}] of ${dtype} needs ${want}`);
  // Copy into a fresh buffer: the file's data offset need not suit the
  // typed array's alignment.
  const bytes = new Uint8Array(want);
  bytes.set(buf.subarray(dataStart));
  return { dtype, shape, data: new Ctor(bytes.buffer, 0, n) };
}

// Writes { dtype, shape, data } as format 1.0 (2.0 when the header needs it),
// through a temporary file so that a failed write leaves nothing half-written.
function writeNpy(file, { dtype, shape, data }) {
  const descr = DESCR_OF[dtype];
  if (!descr) throw new Error(`${file}: cannot write dtype ${dtype}`);
  const Ctor = DTYPES[descr][1];
  if (!(data instanceof Ctor)) throw new Error(`${file}: ${dtype} data must be a ${Ctor.name}`);
  if (data.length !== numel(shape)) throw new Error(`${file}: ${data.length} values for shape [${shape}]`);
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // NumPy pads with spaces so that the data starts at a multiple of 64 bytes.
  const major = header.length + 11 < 65536 ? 1 : 2;
  const prefix = 8 + (major === 1 ? 2 : 4);
  header += ' '.repeat((64 - ((prefix + header.length + 1) % 64)) % 64) + '\n';
  const head = Buffer.alloc(prefix);
  MAGIC.copy(head, 0);
  head[6] = major;
  head[7] = 0;
  if (major === 1) head.writeUInt16LE(header.length, 8);
  else head.writeUInt32LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

module.exports = { readNpy, writeNpy, numel };
