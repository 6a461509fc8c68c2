"""Point colours: category codes plus a palette, whatever the points are coloured by.

The browser draws each point with ``palette[code]``. Class labels, predicted
classes and categorical user arrays map to one code per category and one grey
code for "none"; continuous user arrays are binned into a sequential ramp.

Threads: functions of their arguments, without state of their own.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass, field

import numpy as np

#: Colours of the first classes (Tableau 10, then its lighter partners).
CATEGORICAL = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
               "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78",
               "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
               "#dbdb8d", "#9edae5")
#: Points without a class.
NONE_COLOR = "#c8c8c8"
#: Anchors of classes beyond the palette, and anchors when colouring by a user array.
ANCHOR_COLOR = "#222222"
#: Stops of the sequential ramp for continuous values (viridis).
RAMP_STOPS = ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")
RAMP_STEPS = 64


def categorical_colors(k):
    """``k`` distinct colours: the fixed palette, then evenly spaced hues."""
    colors = list(CATEGORICAL[:k])
    extra = k - len(colors)
    for i in range(extra):
        r, g, b = colorsys.hls_to_rgb((i * 0.618034) % 1.0, 0.5, 0.65)
        colors.append(_hex((r, g, b)))
    return colors


def _hex(rgb):
    return "#" + "".join(f"{int(round(255 * c)):02x}" for c in rgb)


def _rgb(color):
    return np.array([int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def ramp(steps=RAMP_STEPS):
    """``steps`` colours interpolated through :data:`RAMP_STOPS`."""
    stops = np.array([_rgb(c) for c in RAMP_STOPS])
    where = np.linspace(0, len(stops) - 1, steps)
    low = np.minimum(where.astype(int), len(stops) - 2)
    frac = (where - low)[:, None]
    return [_hex(c) for c in stops[low] * (1 - frac) + stops[low + 1] * frac]


@dataclass
class Coloring:
    """Codes for the points (and anchors) with their palette and legend.

    Attributes
    ----------
    codes : ndarray of uint16
        One code per point, then one per anchor.
    palette : list of str
        ``palette[code]`` is the colour of a code.
    legend : list of dict
        Entries ``{"name", "code", "count"}`` shown in the legend.
    continuous : bool
        Whether the codes bin a continuous value.
    """

    codes: np.ndarray
    palette: list
    legend: list = field(default_factory=list)
    continuous: bool = False


def by_class(labels, names):
    """Colour by class index (-1 for none), one legend entry per class."""
    k = len(names)
    codes = np.where(labels >= 0, labels, k)
    counts = np.bincount(codes, minlength=k + 1)
    legend = [{"name": name, "code": c, "count": int(counts[c])} for c, name in enumerate(names)]
    if counts[k]:
        legend.append({"name": "unlabelled", "code": k, "count": int(counts[k])})
    return Coloring(codes.astype(np.uint16), categorical_colors(k) + [NONE_COLOR], legend)


def by_values(values, value_range=None):
    """Colour by a user array: categories for non-float data, a ramp for floats.

    ``value_range`` (low, high) fixes the ends of the ramp; by default they
    are the smallest and largest finite values. Non-finite values are grey.
    """
    values = np.asarray(values)
    if values.dtype.kind != "f":
        categories, codes = np.unique(values, return_inverse=True)
        return by_class(codes.reshape(-1), [str(c) for c in categories])
    finite = np.isfinite(values)
    if value_range is not None:
        low, high = map(float, value_range)
    elif finite.any():
        low, high = float(values[finite].min()), float(values[finite].max())
    else:
        low, high = 0.0, 1.0
    span = high - low if high > low else 1.0
    codes = np.clip(np.round((values - low) / span * (RAMP_STEPS - 1)), 0, RAMP_STEPS - 1)
    codes = np.where(finite, codes, RAMP_STEPS).astype(np.uint16)
    legend = [{"name": f"{low:.4g}", "code": 0, "count": -1},
              {"name": f"{high:.4g}", "code": RAMP_STEPS - 1, "count": -1}]
    return Coloring(codes, ramp() + [NONE_COLOR], legend, continuous=True)


def with_anchors(coloring, n_anchors, n_classes):
    """Append codes for ``n_anchors`` anchors: anchor k takes class k's colour
    when k < n_classes, a dark one otherwise."""
    if not n_anchors:
        return coloring
    dark = len(coloring.palette)
    anchor_codes = np.array([k if k < n_classes else dark for k in range(n_anchors)],
                            dtype=np.uint16)
    return Coloring(np.concatenate([coloring.codes, anchor_codes]),
                    coloring.palette + [ANCHOR_COLOR], coloring.legend, coloring.continuous)
