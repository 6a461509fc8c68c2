import { describe, expect, it } from "vitest";
import {
  BOUNDS_BYTES,
  POSITION_STEPS,
  SELECTION_MASK_HEADER,
  SELECTION_MASK_TAG,
  decodeFloat32,
  decodePositions,
  decodeSelection,
  decodeUint16,
  decodeUint32,
  encodeSelection,
  encodeUint32,
  toBytes,
} from "../src/codecs.js";
import { positionsView } from "./positions.js";

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

/** Encoded positions with the given bounds and codes, `offset` bytes into a larger buffer. */
function rawPositions(bounds, codes, offset = 0) {
  const view = new DataView(new ArrayBuffer(offset + BOUNDS_BYTES + 2 * codes.length), offset);
  bounds.forEach((v, k) => view.setFloat64(8 * k, v, true));
  codes.forEach((q, k) => view.setUint16(BOUNDS_BYTES + 2 * k, q, true));
  return view;
}

describe("decoding positions", () => {
  it("maps codes linearly from the bounds, in float64 rounded to float32", () => {
    const bounds = [-0.95, -0.3, 0.95, 0.7];
    const codes = [0, 0, 65535, 65535, 1, 32768, 12345, 54321];
    const xy = decodePositions(rawPositions(bounds, codes));
    expect(xy).toBeInstanceOf(Float32Array);
    const sx = (bounds[2] - bounds[0]) / POSITION_STEPS;
    const sy = (bounds[3] - bounds[1]) / POSITION_STEPS;
    const expected = codes.map((q, k) => Math.fround(k % 2 ? bounds[1] + q * sy : bounds[0] + q * sx));
    expect(Array.from(xy)).toEqual(expected);
    // The codes 0 and 65535 are the bounds.
    expect(Array.from(xy.subarray(0, 4))).toEqual([-0.95, -0.3, 0.95, 0.7].map(Math.fround));
  });

  it("round-trips within half a step per axis", () => {
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 1.9 - 0.95;
    const original = Array.from({ length: 2000 }, (_, k) => (k % 2 ? 0.4 * random() : random()));
    const xy = decodePositions(positionsView(original, 3));
    const range = [0, 1].map((a) => {
      const axis = original.filter((_, k) => k % 2 === a);
      return Math.max(...axis) - Math.min(...axis);
    });
    let worst = 0;
    original.forEach((v, k) => {
      const error = Math.abs(xy[k] - v);
      expect(error).toBeLessThanOrEqual(range[k % 2] / POSITION_STEPS / 2 + 2 ** -24);
      worst = Math.max(worst, error / range[k % 2]);
    });
    expect(worst).toBeGreaterThan(0); // the positions did go through 16 bits
  });

  it("decodes a coordinate shared by all points exactly", () => {
    const xy = decodePositions(positionsView([0.25, -0.1, 0.25, 0.3, 0.25, 0.9]));
    expect([xy[0], xy[2], xy[4]]).toEqual([0.25, 0.25, 0.25]);
    const same = decodePositions(rawPositions([0.1, 0.1, 0.1, 0.1], [0, 0, 0, 0]));
    expect(Array.from(same)).toEqual([0.1, 0.1, 0.1, 0.1].map(Math.fround));
  });

  it("reads bounds and codes at any byteOffset, and nothing around them", () => {
    const codes = [1, 2, 65535, 0];
    const bounds = [-1, -2, 1, 2];
    const aligned = Array.from(decodePositions(rawPositions(bounds, codes, 8)));
    for (const offset of [1, 3, 16]) {
      const view = rawPositions(bounds, codes, offset);
      const bytes = new Uint8Array(offset + view.byteLength + 5).fill(0xee);
      bytes.set(new Uint8Array(view.buffer, offset, view.byteLength), offset);
      expect(Array.from(decodePositions(new DataView(bytes.buffer, offset, view.byteLength)))).toEqual(aligned);
    }
  });

  it("gives no points for an empty value and rejects malformed ones", () => {
    expect(decodePositions(null).length).toBe(0);
    expect(decodePositions(new DataView(new ArrayBuffer(0))).length).toBe(0);
    expect(decodePositions(rawPositions([0, 0, 1, 1], [])).length).toBe(0);
    expect(() => decodePositions(new DataView(new ArrayBuffer(7)))).toThrow(RangeError);
    expect(() => decodePositions(new DataView(new ArrayBuffer(BOUNDS_BYTES + 2)))).toThrow(RangeError);
    expect(() => decodePositions(rawPositions([0, NaN, 1, 1], [0, 0]))).toThrow(/bounds/);
    expect(() => decodePositions(rawPositions([1, 0, 0, 1], [0, 0]))).toThrow(/bounds/);
    expect(() => decodePositions(rawPositions([-1e308, 0, 1e308, 1], [0, 0]))).toThrow(/bounds/);
    expect(() => decodePositions(rawPositions([0, 0, Infinity, 1], [0, 0]))).toThrow(/bounds/);
    expect(() => decodePositions("abc")).toThrow(TypeError);
  });
});

describe("selections", () => {
  it("keep a short selection as a uint32 list", () => {
    const encoded = encodeSelection(Uint32Array.from([3, 7]), 1000);
    expect(Array.from(new Uint8Array(encoded.buffer))).toEqual([3, 0, 0, 0, 7, 0, 0, 0]);
    expect(Array.from(decodeSelection(encoded))).toEqual([3, 7]);
  });

  it("send a long selection as a bitmask, byte for byte as Python writes it", () => {
    // 3 indices take 12 bytes as a list, 8 + 2 as a bitmask of 12 points.
    const encoded = encodeSelection(Uint32Array.from([0, 9, 10]), 12);
    expect(Array.from(new Uint8Array(encoded.buffer))).toEqual(
      [0xff, 0xff, 0xff, 0xff, 12, 0, 0, 0, 0x01, 0x06],
    );
    expect(SELECTION_MASK_HEADER).toBe(8);
    expect(Array.from(decodeSelection(encoded))).toEqual([0, 9, 10]);
  });

  it("round-trip a lasso of 10^5 points in a map of 10^6 in an eighth of a megabyte", () => {
    const n = 1_000_000;
    const picked = new Uint32Array(100_000);
    for (let k = 0; k < picked.length; k += 1) picked[k] = 10 * k + (k % 7);
    const encoded = encodeSelection(picked, n);
    expect(encoded.byteLength).toBe(8 + n / 8);
    expect(new DataView(encoded.buffer).getUint32(0, true)).toBe(SELECTION_MASK_TAG);
    expect(decodeSelection(encoded)).toEqual(picked);
  });

  it("decode a bitmask at an unaligned offset", () => {
    const encoded = new Uint8Array(encodeSelection(Uint32Array.from([1, 2, 3, 4, 5]), 9).buffer);
    const bytes = new Uint8Array(encoded.length + 3);
    bytes.set(encoded, 3);
    expect(Array.from(decodeSelection(new DataView(bytes.buffer, 3, encoded.length)))).toEqual([1, 2, 3, 4, 5]);
  });

  it("send an index outside the map as a list, for Python to refuse", () => {
    const encoded = encodeSelection(Uint32Array.from([0, 1, 2, 3, 40]), 8);
    expect(Array.from(decodeSelection(encoded))).toEqual([0, 1, 2, 3, 40]);
  });

  it("refuse a malformed bitmask", () => {
    const header = (n, extra) => {
      const bytes = new Uint8Array(8 + extra.length);
      new DataView(bytes.buffer).setUint32(0, SELECTION_MASK_TAG, true);
      new DataView(bytes.buffer).setUint32(4, n, true);
      bytes.set(extra, 8);
      return bytes;
    };
    expect(() => decodeSelection(header(12, [1]))).toThrow(/takes 2 bytes/);
    expect(() => decodeSelection(header(4, [0x10]))).toThrow(/bit 4 set/);
    expect(() => decodeSelection(new Uint8Array([0xff, 0xff, 0xff, 0xff, 1, 0]))).toThrow(
      /no number of points/,
    );
  });
});
