import { describe, expect, it } from "vitest";
import { decodeFloat32, decodeUint16, decodeUint32, encodeUint32, toBytes } from "../src/codecs.js";

/** A DataView of `values` (as `Type`) placed `offset` bytes into a larger buffer. */
function viewAt(Type, values, offset) {
  const bytes = new Uint8Array(offset + values.length * Type.BYTES_PER_ELEMENT + 5);
  bytes.fill(0xee);
  new Uint8Array(bytes.buffer, offset).set(new Uint8Array(Type.from(values).buffer));
  return new DataView(bytes.buffer, offset, values.length * Type.BYTES_PER_ELEMENT);
}

describe("decoding binary traits", () => {
  it("respects a non-zero aligned byteOffset", () => {
    const view = viewAt(Float32Array, [1.5, -2.25, 3e7], 8);
    const out = decodeFloat32(view);
    expect(Array.from(out)).toEqual([1.5, -2.25, 3e7]);
    expect(out.buffer).toBe(view.buffer); // no copy when aligned
  });

  it("copies when the byteOffset is not aligned", () => {
    const view = viewAt(Float32Array, [0.5, 7], 3);
    expect(Array.from(decodeFloat32(view))).toEqual([0.5, 7]);
    const codes = viewAt(Uint16Array, [1, 65535, 3], 1);
    expect(Array.from(decodeUint16(codes))).toEqual([1, 65535, 3]);
  });

  it("never reads the bytes around the view", () => {
    const view = viewAt(Uint32Array, [42], 4);
    expect(decodeUint32(view).length).toBe(1);
    expect(toBytes(view).byteLength).toBe(4);
  });

  it("accepts ArrayBuffers, typed arrays and null", () => {
    expect(Array.from(decodeUint32(Uint32Array.of(4, 5).buffer))).toEqual([4, 5]);
    expect(Array.from(decodeUint32(Uint32Array.of(9)))).toEqual([9]);
    expect(decodeFloat32(null).length).toBe(0);
  });

  it("rejects a length that is not a whole number of items", () => {
    expect(() => decodeFloat32(new DataView(new ArrayBuffer(6)))).toThrow(RangeError);
    expect(() => decodeFloat32("abc")).toThrow(TypeError);
  });

  it("round-trips a selection", () => {
    const encoded = encodeUint32([3, 1, 4000000000]);
    expect(encoded).toBeInstanceOf(DataView);
    expect(Array.from(decodeUint32(encoded))).toEqual([3, 1, 4000000000]);
  });
});
