"""Binary traits: NumPy arrays cross between Python and the browser as raw bytes.

Point positions go out as 16-bit coordinates relative to their frame's bounds
(:func:`encode_positions`), anchors as little-endian float32, category codes
as uint16, and selections go both ways as uint32 indices or, when shorter, a
bitmask (:func:`encode_selection`). ipywidgets hands binary values
from the browser to Python as ``memoryview`` objects, which a plain
``traitlets.Bytes`` rejects; the kernel then drops the whole update, including
every other trait in the same message, without telling anyone.
:func:`bytes_from_json` converts them, so every binary trait must be declared
with :func:`binary_trait`.

Layout of the positions of a frame (``_positions``), all little-endian:

========  ===========================  ==========================================
bytes     type                         content
========  ===========================  ==========================================
0-31      4 float64                    x_min, y_min, x_max, y_max of the points
32-...    n x 2 uint16, interleaved    x, y of each point as a code q in
                                       [0, 65535]: x = x_min + q * step_x with
                                       step_x = (x_max - x_min) / 65535
========  ===========================  ==========================================

That is 4 bytes a point instead of 8 for float32, with an error of at most
half a step per axis: in the normalized plot, whose wider axis spans 1.9, a
step is 2.9e-5, a hundredth of a pixel on a plot 640 pixels wide. The browser
computes each coordinate in float64, as written above, and rounds it to
float32; :func:`decode_positions` does the same, so both read the same
positions. A frame whose points share a coordinate (max == min) has a step of
0 and decodes that coordinate exactly.

Threads: functions of their arguments and trait types, without state of their
own; the traits' values belong to the Explorer's ``_sync_lock``.
"""

from __future__ import annotations

import numpy as np
import traitlets

#: Wire formats of the arrays exchanged with the browser (little-endian, as in
#: every browser's typed arrays).
FLOAT32 = np.dtype("<f4")
UINT16 = np.dtype("<u2")
UINT32 = np.dtype("<u4")
UINT8 = np.dtype("u1")

#: Steps between a frame's lowest and highest coordinate: the largest uint16 code.
POSITION_STEPS = 65535
#: Bytes before the point codes in encoded positions: x_min, y_min, x_max, y_max.
BOUNDS_DTYPE = np.dtype("<f8")
BOUNDS_BYTES = 4 * BOUNDS_DTYPE.itemsize


def bytes_from_json(value, widget=None):
    """Turn a binary value sent by the browser into ``bytes``.

    Parameters
    ----------
    value : memoryview, bytes, bytearray or None
        What ipywidgets passes for a binary buffer (a ``memoryview``) or for
        an unset value (None).
    widget : Widget, optional
        Unused; part of the ``from_json`` signature.

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        For anything that is not binary data.
    """
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected binary data (an ArrayBuffer or typed array), got "
                    f"{type(value).__name__}.")


def bytes_to_json(value, widget=None):
    """Send ``bytes`` as one binary buffer (not as base64 text)."""
    return memoryview(value)


def binary_trait():
    """A synced ``Bytes`` trait that accepts the browser's memoryviews."""
    return traitlets.Bytes(b"").tag(sync=True, from_json=bytes_from_json, to_json=bytes_to_json)


def encode(array, dtype):
    """``array`` as contiguous ``dtype`` bytes, ready for a binary trait."""
    return np.ascontiguousarray(array, dtype=dtype).tobytes()


def decode(data, dtype, *, name="buffer"):
    """The array of ``dtype`` held in ``data``.

    Raises
    ------
    ValueError
        If the length of ``data`` is not a multiple of the item size.
    """
    data = bytes_from_json(data)
    itemsize = np.dtype(dtype).itemsize
    if len(data) % itemsize:
        raise ValueError(f"{name} has {len(data)} bytes, not a multiple of {itemsize} "
                         f"({np.dtype(dtype).name}).")
    return np.frombuffer(data, dtype=dtype)


def positions_nbytes(n):
    """Bytes of ``n`` points encoded by :func:`encode_positions`."""
    return BOUNDS_BYTES + 2 * n * UINT16.itemsize


def encode_positions(points):
    """2-D positions as the bounds of the points and one uint16 code per coordinate.

    Parameters
    ----------
    points : array-like (n, 2)
        Finite positions.

    Returns
    -------
    bytes
        ``positions_nbytes(n)`` bytes laid out as the module describes.

    Raises
    ------
    ValueError
        If ``points`` is not of shape (n, 2), holds NaN or infinity (which
        cannot be placed between finite bounds), or spans more than float64
        holds.
    """
    P = np.asarray(points, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != 2:
        raise ValueError(f"positions must have shape (n, 2); got {P.shape}.")
    if not len(P):
        return np.zeros(4, BOUNDS_DTYPE).tobytes()
    # Column by column: min(axis=0) of an (n, 2) array is many times slower.
    low = np.array([P[:, 0].min(), P[:, 1].min()])
    high = np.array([P[:, 0].max(), P[:, 1].max()])
    # min and max carry NaN and infinities through, so the bounds tell.
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError("positions must be finite; got NaN or infinity. Skip such a "
                         "frame instead of sending it.")
    with np.errstate(over="ignore"):
        span = high - low
    if not np.all(np.isfinite(span)):
        raise ValueError(f"positions span {span.tolist()}, more than float64 holds; "
                         f"scale them down first.")
    # Where max == min every coordinate equals min, and its code is 0.
    codes_per_unit = np.divide(POSITION_STEPS, span, out=np.zeros(2), where=span > 0)
    Q = P - low
    Q *= codes_per_unit
    np.rint(Q, out=Q)
    np.minimum(Q, POSITION_STEPS, out=Q)  # x <= max, but rounding may pass it
    bounds = np.concatenate([low, high]).astype(BOUNDS_DTYPE)
    return bounds.tobytes() + Q.astype(UINT16).tobytes()


def decode_positions(data, *, name="positions"):
    """The (n, 2) float32 positions held in bytes from :func:`encode_positions`.

    Computed as the browser computes them (in float64, then rounded to
    float32), so both see the same positions. Empty ``data`` (a trait not yet
    set) gives no points.

    Raises
    ------
    ValueError
        If ``data`` is not laid out as the module describes: too short, a
        length that is not the bounds plus whole points, or bounds that are not
        finite (nor their differences) or have a minimum above the maximum.
    """
    data = bytes_from_json(data)
    if not data:
        return np.zeros((0, 2), dtype=FLOAT32)
    if len(data) < BOUNDS_BYTES or (len(data) - BOUNDS_BYTES) % (2 * UINT16.itemsize):
        raise ValueError(f"{name} has {len(data)} bytes; expected {BOUNDS_BYTES} bytes of "
                         f"bounds and {2 * UINT16.itemsize} bytes a point.")
    bounds = np.frombuffer(data, dtype=BOUNDS_DTYPE, count=4)
    low, high = bounds[:2], bounds[2:]
    with np.errstate(over="ignore", invalid="ignore"):
        span = high - low
    if not (np.all(np.isfinite(span)) and np.all(low <= high)):
        raise ValueError(f"{name} has invalid bounds {bounds.tolist()}; expected finite "
                         f"x_min, y_min, x_max, y_max with each min <= max.")
    codes = np.frombuffer(data, dtype=UINT16, offset=BOUNDS_BYTES).reshape(-1, 2)
    return (low + codes * (span / POSITION_STEPS)).astype(FLOAT32)


#: First uint32 of a selection sent as a bitmask. Never a point index: an
#: Explorer holds fewer than 2**32 - 1 points.
SELECTION_MASK_TAG = 0xFFFFFFFF
#: Bytes before the bits of a bitmask selection: the tag and the number of points.
SELECTION_MASK_HEADER = 8


def encode_selection(indices, n):
    """Selected points in the shorter of the two selection formats.

    A list of k indices takes 4k bytes as uint32; a bitmask takes
    ``SELECTION_MASK_HEADER`` + ceil(n / 8) bytes: the uint32 tag
    ``SELECTION_MASK_TAG``, n as uint32, then one bit a point, point i in bit
    i % 8 of byte i // 8 (little-endian bit order). The list is used when it
    is no longer, so small selections keep the plain uint32 format; a lasso
    of 10⁵ points in a 10⁶-point map goes as a 125 kB bitmask instead of a
    400 kB list.

    Parameters
    ----------
    indices : array-like of int
        Sorted, unique indices in [0, n).
    n : int
        Number of points.

    Returns
    -------
    bytes
    """
    idx = np.asarray(indices, dtype=np.int64)
    mask_bytes = SELECTION_MASK_HEADER + (n + 7) // 8
    if UINT32.itemsize * idx.size <= mask_bytes:
        return encode(idx, UINT32)
    bits = np.zeros(n, dtype=bool)
    bits[idx] = True
    header = np.array([SELECTION_MASK_TAG, n], dtype=UINT32)
    return header.tobytes() + np.packbits(bits, bitorder="little").tobytes()


def decode_selection(data, *, n=None, name="the selection"):
    """Point indices (int64) of a selection in either format of :func:`encode_selection`.

    Parameters
    ----------
    data : bytes or memoryview
    n : int, optional
        Number of points the selection must be for; a bitmask for another
        number is refused. Indices of a list are not checked here.
    name : str
        What the data is, for error messages.

    Raises
    ------
    ValueError
        For a list whose length is not a multiple of 4, a bitmask whose length
        does not match its number of points (or ``n``), or bits set past its
        last point.
    """
    data = bytes_from_json(data)
    is_mask = (len(data) >= UINT32.itemsize
               and int.from_bytes(data[:UINT32.itemsize], "little") == SELECTION_MASK_TAG)
    if not is_mask:
        return decode(data, UINT32, name=name).astype(np.int64)
    if len(data) < SELECTION_MASK_HEADER:
        raise ValueError(f"{name} is a bitmask without its number of points "
                         f"({len(data)} bytes).")
    points = int.from_bytes(data[UINT32.itemsize:SELECTION_MASK_HEADER], "little")
    if n is not None and points != n:
        raise ValueError(f"{name} is a bitmask of {points} points; the map has {n}.")
    body = np.frombuffer(data, dtype=UINT8, offset=SELECTION_MASK_HEADER)
    if body.size != (points + 7) // 8:
        raise ValueError(f"{name} is a bitmask of {points} points, which takes "
                         f"{(points + 7) // 8} bytes after its header; it has {body.size}.")
    bits = np.unpackbits(body, bitorder="little")
    if bits[points:].any():
        raise ValueError(f"{name} has bits set past its last point ({points}).")
    return np.flatnonzero(bits[:points]).astype(np.int64)
