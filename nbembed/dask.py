"""Placing rows that do not fit in memory: a fitted map applied chunk by chunk with Dask.

:func:`transform`, :func:`predict`, :func:`predict_proba` and
:func:`far_from_training` take a fitted estimator (HSSNE, SNE, NeRV, SNeRV,
Mbed; :func:`transform` also SpectralSSDR and ParametricEmbedding) or its
fitted map (:func:`~nbembed.fitted_map.fitted_map`) and a dask array (or a
dask DataFrame of numeric columns) and return a lazy dask collection with one
row per input row; :func:`memberships_at` classifies positions that
:func:`transform` returned, without placing the rows again. Each chunk is placed by the map alone, so the result equals
the in-memory ``transform`` of the same rows whatever the chunks, their order,
the scheduler (threads, processes, a ``dask.distributed`` cluster) or the
number of threads. See docs/dask.md.

Dask is optional (``pip install "nbembed[dask]"``, and ``dask[dataframe]`` for
DataFrames); it is imported when one of these functions is called.

Examples
--------
With ``model`` a fitted HSSNE on 64 features (tests/test_dask.py runs this on a
cluster):

>>> import dask.array as da                                       # doctest: +SKIP
>>> import nbembed.dask                                           # doctest: +SKIP
>>> X = da.from_array(X_new, chunks=500)                          # doctest: +SKIP
>>> Y = nbembed.dask.transform(model, X)                          # doctest: +SKIP
>>> Y.shape, Y.chunks[0]                                          # doctest: +SKIP
((1497, 2), (500, 500, 497))
>>> Y.compute()                                                   # doctest: +SKIP
"""

from __future__ import annotations

import importlib

import numpy as np

from ._map_base import MapBase
from .fitted_map import fitted_map

#: The dtype of what each function returns.
OUTPUTS = dict(transform=np.float64, predict_proba=np.float64, predict=np.intp,
               far_from_training=np.bool_, memberships_at=np.float64)


def transform(model, X):
    """Positions of the rows of a dask array or DataFrame in a fitted map, lazily.

    Parameters
    ----------
    model : fitted map or fitted HSSNE, SNE, NeRV, SNeRV, Mbed, SpectralSSDR or ParametricEmbedding
        An estimator is turned into its map once
        (:func:`~nbembed.fitted_map.fitted_map`); make the map yourself to
        choose the placement's ``perplexity`` or to reuse it.
    X : dask.array.Array (n_rows, n_features) or dask.dataframe.DataFrame
        New rows, chunked along the rows any way (chunks along the columns are
        joined first); a DataFrame's columns must be numeric.

    Returns
    -------
    dask.array.Array (n_rows, n_components) or dask.dataframe.DataFrame
        float64, chunked as the rows of ``X``; a DataFrame keeps ``X``'s index
        and has the estimator's output names (``hssne0``, ``hssne1``, ...).

    Raises
    ------
    ValueError
        At once for a wrong number of columns; when computed, for a chunk with
        NaN or infinity, naming the chunk and its rows.
    TypeError
        For an ``X`` that is no dask collection, or non-numeric columns.
    """
    return _apply(model, X, "transform")


def predict_proba(model, X):
    """Class probabilities of the rows of ``X`` where :func:`transform` puts them (Mbed).

    Parameters and errors as :func:`transform`.

    Returns
    -------
    dask.array.Array (n_rows, n_classes) or dask.dataframe.DataFrame
        A DataFrame has columns ``class0``, ``class1``, ...
    """
    return _apply(model, X, "predict_proba")


def predict(model, X):
    """The most probable class of each row of ``X`` (Mbed).

    Parameters and errors as :func:`transform`.

    Returns
    -------
    dask.array.Array of int (n_rows,) or dask.dataframe.Series
    """
    return _apply(model, X, "predict")


def memberships_at(model, Y):
    """Class memberships of positions in the map (Mbed), lazily.

    What :func:`predict_proba` gives for rows that :func:`transform` put at
    ``Y``, without placing them again: place once, then classify the places.

    Parameters
    ----------
    model : FittedMap or fitted Mbed
    Y : dask.array.Array (n_rows, n_components)
        Positions, for example ``nbembed.dask.transform(model, X)``.

    Returns
    -------
    dask.array.Array (n_rows, n_classes)
        Chunked as the rows of ``Y``.
    """
    if _is_dask_dataframe(Y):
        raise TypeError("memberships_at takes the dask array of positions that "
                        "nbembed.dask.transform returns for a dask array; for a DataFrame "
                        "use nbembed.dask.predict_proba.")
    return _apply(model, Y, "memberships_at")


def far_from_training(model, X):
    """Which rows of ``X`` lie far outside the training data
    (:meth:`~nbembed.fitted_map.FittedMap.far_from_training`).

    On a cluster the warning that ``transform`` gives for such rows goes to the
    workers' logs; ``far_from_training(model, X).sum().compute()`` counts them.

    Returns
    -------
    dask.array.Array of bool (n_rows,) or dask.dataframe.Series
    """
    return _apply(model, X, "far_from_training")


def _dask():
    try:
        return importlib.import_module("dask")
    except ImportError:
        raise ImportError('nbembed.dask needs Dask: pip install "nbembed[dask]".') from None


def _as_map(model, method):
    placer = model if isinstance(model, MapBase) else fitted_map(model)
    if method in ("predict", "predict_proba", "memberships_at") and placer.n_classes is None:
        raise ValueError(f"The fitted map of {placer.method} places points but does not "
                         f"classify them: {method} needs Mbed. Use nbembed.dask.transform.")
    if method == "far_from_training" and not hasattr(placer, method):
        raise ValueError(f"The fitted map of {placer.method} measures no distance to the "
                         f"training points: {method} needs the map of a neighbour embedding "
                         f"(HSSNE, SNE, NeRV, SNeRV or Mbed).")
    return placer


def _apply(model, X, method):
    dask = _dask()
    placer = _as_map(model, method)
    # The map goes into the graph once, as a single task that the chunks' tasks depend
    # on: each worker receives it once and keeps it for all its chunks. Passed as a plain
    # argument it would be serialized into every chunk's task. Its token names its content,
    # so transform and predict of one map share that task.
    shared = dask.delayed(placer, pure=True)
    if _is_dask_dataframe(X):
        return _apply_to_frame(placer, shared, X, method)
    if _is_dask_array(X):
        return _apply_to_array(placer, shared, X, method)
    raise TypeError(f"X must be a dask.array.Array or a dask.dataframe.DataFrame; got "
                    f"{type(X).__module__}.{type(X).__name__}. For rows in memory call the "
                    f"map's or the estimator's own {method}(X).")


def _is_dask_array(X):
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


def _is_dask_dataframe(X):
    module = type(X).__module__
    return module.startswith("dask.dataframe") or module.startswith("dask_expr")


def _apply_to_array(placer, shared, X, method):
    import dask.array as da

    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D dask array (n_rows, n_features); got "
                         f"{X.ndim} dimension(s), shape {X.shape}.")
    if method == "memberships_at":
        if not np.isnan(X.shape[1]) and X.shape[1] != placer.n_components:
            raise ValueError(f"Y has {X.shape[1]} columns, but the map of {placer.method} has "
                             f"{placer.n_components} dimensions: pass the positions that "
                             f"nbembed.dask.transform returns.")
    elif not np.isnan(X.shape[1]):
        placer._check_width(X.shape[1], "columns")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # a row is placed from all its features at once
    dtype = OUTPUTS[method]
    if method in ("transform", "predict_proba", "memberships_at"):
        width = placer.n_components if method == "transform" else placer.n_classes
        return da.map_blocks(_place_block, X, shared, method, dtype=dtype,
                             chunks=(X.chunks[0], (width,)), meta=np.empty((0, width), dtype),
                             token=f"nbembed-{method.replace('_', '-')}")
    return da.map_blocks(_place_block, X, shared, method, dtype=dtype, drop_axis=1,
                         chunks=(X.chunks[0],), meta=np.empty((0,), dtype),
                         token=f"nbembed-{method.replace('_', '-')}")


def _place_block(chunk, placer, method, block_info=None):
    """``placer``'s ``method`` of one chunk; an error names the chunk and its rows."""
    try:
        return getattr(placer, method)(chunk)
    except (ValueError, TypeError) as err:
        where = "a chunk of X"
        if block_info:
            number = block_info[0]["chunk-location"][0]
            start, stop = block_info[0]["array-location"][0]
            where = f"chunk {number} of X"
            if stop > start:
                where += f" (rows {start} to {stop - 1}; indices below count from its first row)"
        raise type(err)(f"In {where}: {err}") from err


def _output_columns(placer, method):
    if method == "transform":
        return list(placer.get_feature_names_out())
    if method == "predict_proba":
        return [f"class{k}" for k in range(placer.n_classes)]
    return None


def _apply_to_frame(placer, shared, X, method):
    import pandas as pd
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    if not hasattr(X, "columns"):
        raise TypeError(f"X must be a dask DataFrame of numeric columns; got a "
                        f"{type(X).__name__}. Turn a Series into a frame with "
                        f"X.to_frame().")
    wrong = [str(name) for name, dtype in X.dtypes.items()
             if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype))]
    if wrong:
        raise TypeError(f"X has non-numeric columns {wrong[:10]}"
                        f"{' ...' if len(wrong) > 10 else ''}: every column must hold numbers. "
                        f"Select the numeric ones first, X[[...]].")
    placer._check_columns(X._meta, "columns")
    columns = _output_columns(placer, method)
    index = X._meta.index
    dtype = OUTPUTS[method]
    if columns is None:
        meta = pd.Series(np.empty(0, dtype), index=index[:0], name=method)
    else:
        meta = pd.DataFrame(np.empty((0, len(columns))), index=index[:0], columns=columns)
    return X.map_partitions(_place_partition, shared, method, columns, meta=meta,
                            token=f"nbembed-{method.replace('_', '-')}")


def _place_partition(frame, placer, method, columns, partition_info=None):
    """``placer``'s ``method`` of one partition, with its index; an error names the
    partition."""
    import pandas as pd

    rows = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        result = getattr(placer, method)(rows)
    except (ValueError, TypeError) as err:
        number = partition_info["number"] if partition_info else None
        where = "a partition of X" if number is None else f"partition {number} of X"
        if len(frame):
            where += (f" (index {frame.index[0]} to {frame.index[-1]}; positions below count "
                      f"from its first row)")
        raise type(err)(f"In {where}: {err}") from err
    if columns is None:
        return pd.Series(result, index=frame.index, name=method)
    return pd.DataFrame(result, index=frame.index, columns=columns)
