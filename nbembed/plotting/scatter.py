"""Scatter plot of an embedding: classes, hover, lasso selection, standalone HTML."""

from __future__ import annotations

import base64
import html
import pathlib
import struct
import zlib

import numpy as np

from .._validation import check_data, check_option
from ._bokeh import require_bokeh

#: Legend entry and colour of points with label -1 (or an empty label).
UNLABELLED = "unlabelled"
UNLABELLED_COLOR = "#b4b4b4"

#: Above this many points the figure draws with WebGL (canvas gets slow).
WEBGL_ABOVE = 10_000

#: Width in pixels of the image shown in the hover tooltip.
THUMBNAIL_WIDTH = 64


def scatter(Y, labels=None, hover=None, images=None, class_names=None, anchors=None,
            title=None, *, anchor_names=None, size=None, alpha=0.8, width=700, height=600):
    """A 2-D embedding as an interactive bokeh scatter plot.

    The figure has pan, wheel zoom, box zoom, lasso selection, reset and save
    tools and a hover tooltip; with ``labels`` each class is its own legend
    entry (click it to hide the class) and colour, and unlabelled points are
    grey. All points share one data source, so a lasso selection spans classes
    and its indices are positions in ``Y``.

    Parameters
    ----------
    Y : array-like of shape (n_samples, 2)
        The embedding.
    labels : array-like of shape (n_samples,), optional
        Class of each point: integers with -1 for unlabelled points (colours
        then follow the class number, so they stay the same when some classes
        are absent), or any other values such as strings (an empty string or
        None is unlabelled).
    hover : dict of str to array-like, optional
        More values to show in the tooltip, each of length n_samples, under
        its key (a pandas DataFrame works too).
    images : array-like of shape (n_samples, height, width[, channels]), optional
        An image per point, shown in the tooltip (grey levels, RGB or RGBA; the
        values are scaled to the full range together), or a sequence of image
        URLs or data URIs.
    class_names : sequence of str or dict, optional
        Names of integer classes, indexed by class number.
    anchors : array-like of shape (n_anchors, 2), optional
        Positions drawn as large outlined diamonds above the points, for
        example Parametric Embedding's class positions. Anchor k takes the
        colour of class k when there is such a class.
    title : str, optional
    anchor_names : sequence of str, optional
        Text next to each anchor; defaults to the class names when there is
        one anchor per class.
    size : float, optional
        Marker size in screen pixels; by default it shrinks as n grows.
    alpha : float, default=0.8
        Marker opacity.
    width, height : int
        Figure size in pixels.

    Returns
    -------
    bokeh.plotting.figure
        Show it with ``bokeh.io.show`` or write it with :func:`save_html`.

    Raises
    ------
    ValueError
        If ``Y`` is not a finite (n_samples, 2) array or an argument does not
        have one entry per point.
    ImportError
        If bokeh is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> fig = scatter(np.random.default_rng(0).normal(size=(30, 2)), labels=[0, 1, -1] * 10)
    >>> [item.label.value for item in fig.legend[0].items]
    ['unlabelled', '0', '1']
    """
    require_bokeh()
    from bokeh.models import (BoxZoomTool, CDSView, ColumnDataSource, GroupFilter, HoverTool,
                              LassoSelectTool, Legend, LegendItem, PanTool, ResetTool, SaveTool,
                              WheelZoomTool)
    from bokeh.plotting import figure

    Y = check_data(Y, name="Y")
    if Y.shape[1] != 2:
        raise ValueError(f"Y must have 2 columns to be drawn; got {Y.shape[1]}. Plot two of "
                         f"them, for example Y[:, :2].")
    n = Y.shape[0]
    classes = _Classes(labels, n, class_names)
    data = {"x": Y[:, 0], "y": Y[:, 1], "index": np.arange(n)}
    if labels is not None:
        data["label"] = classes.point_names
    hover_names = []
    for k, (name, values) in enumerate(_hover_items(hover, n)):
        data[f"hover_{k}"] = values
        hover_names.append(str(name))
    image_size = None
    if images is not None:
        data["image"], image_size = _image_uris(images, n)
    source = ColumnDataSource(data)

    pan, wheel = PanTool(), WheelZoomTool()
    hover_tool = HoverTool(tooltips=_tooltips(labels is not None, hover_names, image_size))
    fig = figure(title=title, width=width, height=height, match_aspect=True,
                 tools=[pan, wheel, BoxZoomTool(match_aspect=True), LassoSelectTool(),
                        hover_tool, ResetTool(), SaveTool()],
                 output_backend="webgl" if n > WEBGL_ABOVE else "canvas")
    fig.toolbar.active_drag = pan
    fig.toolbar.active_scroll = wheel
    size = float(np.clip(40.0 / n ** 0.25, 2.0, 8.0)) if size is None else size
    style = dict(source=source, size=size, alpha=alpha, line_color=None)

    items = []
    if labels is None:
        points = [fig.scatter("x", "y", color=classes.color(0), **style)]
    else:
        points = []
        for name, color in classes.groups():
            view = CDSView(filter=GroupFilter(column_name="label", group=name))
            renderer = fig.scatter("x", "y", view=view, color=color, **style)
            points.append(renderer)
            items.append(LegendItem(label=name, renderers=[renderer]))
    hover_tool.renderers = points

    if anchors is not None:
        items.append(_draw_anchors(fig, anchors, anchor_names, classes))
    if items:
        fig.add_layout(Legend(items=items, click_policy="hide"), "right")
    return fig


def save_html(fig, path, *, title=None, resources="inline"):
    """Write a bokeh figure (or layout) to a standalone HTML file.

    Parameters
    ----------
    fig : bokeh model
        What :func:`scatter` or the diagnostics return, or a bokeh layout.
    path : str or path
    title : str, optional
        The page title; defaults to the figure's title.
    resources : {"inline", "cdn"}, default="inline"
        "inline" embeds BokehJS in the file (about 1 MB), so it opens offline;
        "cdn" makes a small file that loads BokehJS from the network when
        opened.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    require_bokeh()
    from bokeh.embed import file_html
    from bokeh.resources import CDN, INLINE

    check_option(resources, "resources", ("inline", "cdn"))
    if title is None:
        title = getattr(getattr(fig, "title", None), "text", None) or "nbembed"
    page = file_html(fig, INLINE if resources == "inline" else CDN, title)
    path = pathlib.Path(path)
    path.write_text(page, encoding="utf-8")
    return path


class _Classes:
    """Per-point class names, drawing order and colours of the labels."""

    def __init__(self, labels, n, class_names):
        self.point_names = None
        self._codes = {}  # class name -> colour number
        self._has_unlabelled = False
        if labels is None:
            return
        values = np.asarray(labels)
        if values.shape != (n,):
            raise ValueError(f"labels must have one entry per point ({n}); got shape "
                             f"{values.shape}.")
        if _integer_valued(values):
            self._from_integers(values.astype(np.int64), class_names)
        else:
            self._from_values(values)

    def _from_integers(self, codes, class_names):
        if np.any(codes < -1):
            raise ValueError(f"Integer labels must be -1 (unlabelled) or class numbers >= 0; "
                             f"got {int(codes[codes < -1][0])}.")
        present = np.unique(codes[codes >= 0])
        names = {int(c): _class_name(int(c), class_names) for c in present}
        self._codes = {name: code for code, name in names.items()}
        self._has_unlabelled = bool(np.any(codes == -1))
        self.point_names = np.full(codes.shape, UNLABELLED, dtype=object)
        for code, name in names.items():
            self.point_names[codes == code] = name

    def _from_values(self, values):
        text = np.array(["" if v is None else str(v) for v in values], dtype=object)
        unlabelled = text == ""
        self._has_unlabelled = bool(np.any(unlabelled))
        self._codes = {name: code for code, name in enumerate(sorted(set(text[~unlabelled])))}
        text[unlabelled] = UNLABELLED
        self.point_names = text

    def _palette(self):
        from bokeh.palettes import Category10, Category20, turbo

        n_colors = max(self._codes.values(), default=0) + 1
        if n_colors <= 10:
            return Category10[10]
        if n_colors <= 20:
            return Category20[20]
        return turbo(n_colors)

    def color(self, code):
        return self._palette()[code]

    def color_of_class(self, code):
        """The colour of class number ``code``, or None if there is no such class."""
        return self.color(code) if code in self._codes.values() else None

    def names_in_order(self):
        return sorted(self._codes, key=self._codes.get)

    def groups(self):
        """(name, colour) per legend entry; unlabelled first, so it is drawn below."""
        groups = [(UNLABELLED, UNLABELLED_COLOR)] if self._has_unlabelled else []
        return groups + [(name, self.color(self._codes[name])) for name in self.names_in_order()]


def _integer_valued(values):
    if values.dtype.kind in "iub":
        return True
    if values.dtype.kind == "f":
        return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))
    return False


def _class_name(code, class_names):
    if class_names is None:
        return str(code)
    if isinstance(class_names, dict):
        return str(class_names.get(code, code))
    if code >= len(class_names):
        raise ValueError(f"class_names has {len(class_names)} names but the labels include "
                         f"class {code}.")
    return str(class_names[code])


def _hover_items(hover, n):
    if hover is None:
        return []
    if not hasattr(hover, "items"):
        raise TypeError(f"hover must be a dict (or DataFrame) of name -> values; got "
                        f"{type(hover).__name__}.")
    items = []
    for name, values in hover.items():
        values = np.asarray(values)
        if values.shape != (n,):
            raise ValueError(f"hover[{name!r}] must have one value per point ({n}); got "
                             f"shape {values.shape}.")
        items.append((name, values))
    return items


def _tooltips(labelled, hover_names, image_size):
    fields = ([("class", "@label")] if labelled else []) + [("index", "@index")] + \
        [(name, f"@{{hover_{k}}}") for k, name in enumerate(hover_names)]
    if image_size is None:
        return fields
    width, height = image_size
    rows = "".join(f"<div><b>{html.escape(name)}:</b> {value}</div>" for name, value in fields)
    return (f'<div style="display: flex; gap: 8px; align-items: center;">'
            f'<img src="@image{{safe}}" width="{width}" height="{height}" '
            f'style="image-rendering: pixelated; border: 1px solid #ccc;">'
            f"<div>{rows}</div></div>")


def _image_uris(images, n):
    """Data URIs (or the given URLs) of the images, and their display size."""
    if isinstance(images, (list, tuple)) and all(isinstance(v, str) for v in images):
        images = np.array(images, dtype=object)
    else:
        images = np.asarray(images)
    if images.dtype.kind in "OUS":
        if images.shape != (n,):
            raise ValueError(f"images given as URLs must be one per point ({n}); got "
                             f"shape {images.shape}.")
        return images.astype(str), (THUMBNAIL_WIDTH, THUMBNAIL_WIDTH)
    if images.ndim not in (3, 4) or images.shape[0] != n or \
            (images.ndim == 4 and images.shape[3] not in (1, 3, 4)):
        raise ValueError(f"images must have shape (n_samples, height, width) or (n_samples, "
                         f"height, width, 1|3|4) with n_samples = {n}; got {images.shape}. "
                         f"Flattened square images can be reshaped, e.g. "
                         f"X.reshape(len(X), 8, 8).")
    pixels = _to_uint8(images)
    if pixels.ndim == 4 and pixels.shape[3] == 1:
        pixels = pixels[..., 0]
    uris = [f"data:image/png;base64,{base64.b64encode(_png_bytes(p)).decode('ascii')}"
            for p in pixels]
    height, width = pixels.shape[1:3]
    return np.array(uris, dtype=object), (THUMBNAIL_WIDTH,
                                          max(1, round(THUMBNAIL_WIDTH * height / width)))


def _to_uint8(images):
    if images.dtype == np.uint8:
        return images
    values = images.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("images contain NaN or infinity.")
    low, high = values.min(), values.max()
    scaled = (values - low) / (high - low) if high > low else np.zeros_like(values)
    return np.round(255 * scaled).astype(np.uint8)


def _png_bytes(pixels):
    """Encode an 8-bit grey (h, w), RGB (h, w, 3) or RGBA (h, w, 4) image as PNG.

    Parameters
    ----------
    pixels : ndarray of uint8

    Returns
    -------
    bytes
    """
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    color_type = {1: 0, 3: 2, 4: 6}[channels]
    rows = pixels.reshape(height, width * channels)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)  # filter type 0 per row

    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload +
                struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def _draw_anchors(fig, anchors, anchor_names, classes):
    from bokeh.models import ColumnDataSource, LegendItem

    anchors = check_data(anchors, name="anchors")
    if anchors.shape[1] != 2:
        raise ValueError(f"anchors must have 2 columns like Y; got {anchors.shape[1]}.")
    k = anchors.shape[0]
    if anchor_names is None:
        names = classes.names_in_order()
        anchor_names = names if len(names) == k else [str(i) for i in range(k)]
    if len(anchor_names) != k:
        raise ValueError(f"anchor_names must have one name per anchor ({k}); got "
                         f"{len(anchor_names)}.")
    colors = [classes.color_of_class(i) or "black" for i in range(k)]
    source = ColumnDataSource(dict(x=anchors[:, 0], y=anchors[:, 1],
                                   name=[str(a) for a in anchor_names], color=colors))
    markers = fig.scatter("x", "y", source=source, marker="diamond", size=18,
                          fill_color="color", line_color="black", line_width=2)
    text = fig.text("x", "y", text="name", source=source, x_offset=10, y_offset=-4,
                    text_font_size="11pt", text_font_style="bold")
    return LegendItem(label="anchors", renderers=[markers, text])
