// Binary traits: Python sends point positions as 16-bit codes within their
// bounds (decodePositions), anchors as little-endian float32, uint16 colour
// codes and uint8 images; selections go both ways as uint32 indices or, when
// shorter, a bitmask (encodeSelection).
//
// ipywidgets hands a binary trait to JavaScript as a DataView whose
// byteOffset is often not zero (it points into a larger message buffer), so a
// typed array must be built from (buffer, byteOffset, length), never from the
// buffer alone; when the offset is not a multiple of the item size the bytes
// are copied first.

/** The bytes of a binary value (DataView, ArrayBuffer, typed array; null = empty). */
export function toBytes(value) {
  if (value == null) return new Uint8Array(0);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  throw new TypeError(`expected binary data, got ${typeof value}`);
}

function decode(value, Type) {
  const bytes = toBytes(value);
  const size = Type.BYTES_PER_ELEMENT;
  if (bytes.byteLength % size !== 0) {
    throw new RangeError(
      `${bytes.byteLength} bytes is not a whole number of ${Type.name} items`,
    );
  }
  const length = bytes.byteLength / size;
  if (bytes.byteOffset % size === 0) {
    return new Type(bytes.buffer, bytes.byteOffset, length);
  }
  return new Type(bytes.slice().buffer, 0, length);
}

export const decodeFloat32 = (value) => decode(value, Float32Array);
export const decodeUint16 = (value) => decode(value, Uint16Array);
export const decodeUint32 = (value) => decode(value, Uint32Array);
export const decodeUint8 = (value) => decode(value, Uint8Array);

/** Point indices as a DataView of uint32, the wire format of a selection. */
export function encodeUint32(indices) {
  const array = Uint32Array.from(indices ?? []);
  return new DataView(array.buffer);
}

/** First uint32 of a selection sent as a bitmask (never a point index). */
export const SELECTION_MASK_TAG = 0xffffffff;
/** Bytes before the bits of a bitmask selection: the tag and the number of points. */
export const SELECTION_MASK_HEADER = 8;

/**
 * Selected points (sorted, unique, in [0, n)) in the shorter of two formats,
 * as Python's nbembed.widget.traits.encode_selection: k indices as 4k bytes of
 * uint32, or the uint32 tag SELECTION_MASK_TAG, n as uint32, then one bit a
 * point (point i in bit i % 8 of byte i / 8). The list is kept when it is no
 * longer than the bitmask, or when an index is outside [0, n).
 */
export function encodeSelection(indices, n) {
  const k = indices?.length ?? 0;
  const maskBytes = SELECTION_MASK_HEADER + Math.ceil(n / 8);
  if (4 * k <= maskBytes) return encodeUint32(indices);
  const bytes = new Uint8Array(maskBytes);
  const header = new DataView(bytes.buffer, 0, SELECTION_MASK_HEADER);
  header.setUint32(0, SELECTION_MASK_TAG, true);
  header.setUint32(4, n, true);
  for (const i of indices) {
    // An index the bitmask cannot hold goes as a list, for Python to refuse by name.
    if (!(i >= 0 && i < n)) return encodeUint32(indices);
    bytes[SELECTION_MASK_HEADER + (i >> 3)] |= 1 << (i & 7);
  }
  return new DataView(bytes.buffer);
}

/** Point indices (ascending for a bitmask) of a selection in either format of encodeSelection. */
export function decodeSelection(value) {
  const bytes = toBytes(value);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 4 || view.getUint32(0, true) !== SELECTION_MASK_TAG) {
    return decodeUint32(value);
  }
  if (bytes.byteLength < SELECTION_MASK_HEADER) {
    throw new RangeError(`a bitmask selection of ${bytes.byteLength} bytes has no number of points`);
  }
  const n = view.getUint32(4, true);
  const bits = bytes.subarray(SELECTION_MASK_HEADER);
  if (bits.length !== Math.ceil(n / 8)) {
    throw new RangeError(`a bitmask of ${n} points takes ${Math.ceil(n / 8)} bytes, not ${bits.length}`);
  }
  let count = 0;
  for (let b = 0; b < bits.length; b += 1) {
    for (let v = bits[b]; v; v &= v - 1) count += 1;
  }
  const indices = new Uint32Array(count);
  let at = 0;
  for (let b = 0; b < bits.length; b += 1) {
    for (let v = bits[b]; v; v &= v - 1) {
      const i = 8 * b + Math.log2(v & -v);
      if (i >= n) throw new RangeError(`a bitmask of ${n} points has bit ${i} set`);
      indices[at] = i;
      at += 1;
    }
  }
  return indices;
}

/** Steps between a frame's lowest and highest coordinate: the largest uint16 code. */
export const POSITION_STEPS = 65535;
/** Bytes of bounds (float64 x_min, y_min, x_max, y_max) before the point codes. */
export const BOUNDS_BYTES = 32;

/**
 * Interleaved float32 xy of a frame's positions: 32 bytes of float64 bounds
 * (x_min, y_min, x_max, y_max), then one uint16 code q per coordinate, read as
 * x = x_min + q * ((x_max - x_min) / 65535) in float64 and rounded to float32,
 * exactly as Python's nbembed.widget.traits.decode_positions. Empty = no points.
 */
export function decodePositions(value) {
  const bytes = toBytes(value);
  if (bytes.byteLength === 0) return new Float32Array(0);
  if (bytes.byteLength < BOUNDS_BYTES || (bytes.byteLength - BOUNDS_BYTES) % 4 !== 0) {
    throw new RangeError(
      `positions of ${bytes.byteLength} bytes are not ${BOUNDS_BYTES} bytes of bounds and 4 bytes a point`,
    );
  }
  const header = new DataView(bytes.buffer, bytes.byteOffset, BOUNDS_BYTES);
  const [x0, y0, x1, y1] = [0, 1, 2, 3].map((k) => header.getFloat64(8 * k, true));
  // A span beyond float64 (bounds near ±1.8e308) is as unusable as NaN bounds.
  if (![x1 - x0, y1 - y0].every(Number.isFinite) || x0 > x1 || y0 > y1) {
    throw new RangeError(`invalid position bounds ${[x0, y0, x1, y1].join(", ")}`);
  }
  const codes = decodeUint16(bytes.subarray(BOUNDS_BYTES));
  const sx = (x1 - x0) / POSITION_STEPS;
  const sy = (y1 - y0) / POSITION_STEPS;
  const xy = new Float32Array(codes.length);
  for (let k = 0; k < codes.length; k += 2) {
    xy[k] = x0 + codes[k] * sx;
    xy[k + 1] = y0 + codes[k + 1] * sy;
  }
  return xy;
}
