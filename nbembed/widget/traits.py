"""Binary traits: NumPy arrays cross between Python and the browser as raw bytes.

Positions go out as little-endian float32, category codes as uint16 and
selections come back as uint32. ipywidgets hands binary values from the
browser to Python as ``memoryview`` objects, which a plain ``traitlets.Bytes``
rejects; the kernel then drops the whole update, including every other trait
in the same message, without telling anyone. :func:`bytes_from_json` converts
them, so every binary trait must be declared with :func:`binary_trait`.
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
