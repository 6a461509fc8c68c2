"""The Explorer's arguments when its data is an AnnData object.

``Explorer(adata, use_rep="X_pca", color="cell_type", labels="partial")``
shows the cells of ``adata``: the matrix to embed is ``adata.X`` or the
``obsm`` entry ``use_rep``, ``color`` names what to colour by at first (an
``obs`` column or a gene of ``var_names``, offered in the colour menu under
its name) and ``labels`` may name an ``obs`` column of starting labels (its
classes become the class names). :func:`explorer_input` turns these into the
arrays the Explorer takes; for other data it only checks that ``color``
names a column of ``data``. anndata is never imported here: an AnnData
object exists only where anndata was imported already.

Threads: functions of their arguments, called by the Explorer's constructor
in the kernel's main thread; no state of their own.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import tl
from .frames import MEMBERSHIP_COLORINGS


class ExplorerInput(NamedTuple):
    """What the Explorer is built from once an AnnData is taken apart."""

    X: object
    labels: object
    class_names: object
    data: object
    color: str | None


def explorer_input(X, *, use_rep=None, labels=None, class_names=None, color=None, data=None):
    """The Explorer's ``X``, ``labels``, ``class_names``, ``data`` and first colouring.

    Parameters
    ----------
    X : anndata.AnnData or array-like
    use_rep : str, optional
        With an AnnData: the ``obsm`` entry to embed; None uses ``adata.X``.
    labels : str or array-like, optional
        With an AnnData, a string names an ``obs`` column of class labels,
        missing for unlabelled cells (:func:`nbembed.tl.labels_from_obs`).
    class_names : list of str, optional
        Passed on; refused with ``labels`` given as a column (its classes
        name themselves).
    color : str or list of str, optional
        What to colour by: names of ``obs`` columns or genes of ``var_names``
        (with an AnnData) or of columns of ``data`` (otherwise). All are
        offered in the colour menu; the points are coloured by the first.
    data : pandas.DataFrame or dict of array-like, optional
        Further columns for the colour menu.

    Returns
    -------
    ExplorerInput
        ``color`` is the name of the first colouring, or None.

    Raises
    ------
    TypeError
        For ``use_rep`` or a column name of ``labels`` without an AnnData, or
        names that are not strings.
    KeyError
        For a ``use_rep``, labels column or ``color`` the data do not have.
    ValueError
        For ``class_names`` beside a labels column.
    """
    names = _color_names(color)
    if not tl.is_anndata(X):
        if use_rep is not None:
            raise TypeError(f"use_rep names a representation of an AnnData object, but X is "
                            f"a {type(X).__name__}; pass the AnnData, or the array alone.")
        if isinstance(labels, str):
            raise TypeError(f"labels={labels!r} names an obs column only when X is an AnnData; "
                            f"otherwise pass one integer label per point (-1 for unlabelled).")
        columns = [] if data is None else [str(c) for c in data.keys()]
        missing = [name for name in names if name not in columns]
        if missing:
            raise KeyError(f"color names columns of data, which has no {missing} (its columns: "
                           f"{columns or 'none'}).")
        return ExplorerInput(X, labels, class_names, data, names[0] if names else None)

    adata = X
    if isinstance(labels, str):
        if class_names is not None:
            raise ValueError(f"class_names cannot go with labels={labels!r}: the classes of "
                             f"obs[{labels!r}] name themselves.")
        labels, class_names = tl.labels_from_obs(adata, labels)
        class_names = class_names or None
    columns = {} if data is None else {str(c): data[c] for c in data.keys()}
    for name in names:
        columns[name] = _cell_values(adata, name)
    return ExplorerInput(tl.representation(adata, use_rep), labels, class_names,
                         columns or None, names[0] if names else None)


def _color_names(color):
    if color is None:
        return []
    names = [color] if isinstance(color, str) else list(color)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"color must be a column name or a list of them; got {color!r}.")
        if name in ("label",) + MEMBERSHIP_COLORINGS:
            raise ValueError(f"color={name!r} is the name of a built-in colouring; copy the "
                             f"column under another name to colour by it.")
    return names


def _cell_values(adata, name):
    """One value per cell: an ``obs`` column (categories as text, missing as "NA") or
    the expression of a gene."""
    import pandas as pd

    if name in adata.obs.columns:
        column = adata.obs[name]
        if isinstance(column.dtype, pd.CategoricalDtype) or column.dtype.kind in "OU":
            text = column.astype(object)
            return np.where(column.isna().to_numpy(), "NA",
                            text.astype(str).to_numpy()).astype(str)
        return column.to_numpy()
    if name in adata.var_names:
        return np.asarray(adata.obs_vector(name), dtype=np.float64)
    shown = ", ".join(map(repr, list(adata.obs.columns)[:20])) or "none"
    raise KeyError(f"color={name!r} is neither a column of adata.obs (its columns: {shown}) "
                   f"nor a gene of adata.var_names.")
