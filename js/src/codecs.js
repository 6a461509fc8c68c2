// Binary traits: Python sends little-endian float32 positions, uint16 colour
// codes and uint8 images; the browser sends uint32 selections back.
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
