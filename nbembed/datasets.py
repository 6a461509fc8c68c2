"""Datasets: small ones shipped with scikit-learn, and benchmark files on disk.

The package itself needs no files from outside: :func:`load_digits` uses the
copy of the UCI digits that scikit-learn ships. Benchmark sets (``.npz`` files
with ``X`` and ``y``) are read from a folder you name, or from the environment
variable ``NBEMBED_DATA``.
"""

import os
import pathlib

import numpy as np


def load_digits():
    """The 1797 8x8 handwritten digits shipped with scikit-learn.

    Returns
    -------
    X : ndarray (1797, 64)
    y : ndarray (1797,) of int
    """
    from sklearn.datasets import load_digits as _load

    X, y = _load(return_X_y=True)
    return X.astype(np.float64), y.astype(np.int64)


def load_benchmark(name, data_home=None):
    """Load ``<data_home>/<name>/data.npz`` (arrays ``X``, ``y`` and any splits).

    Parameters
    ----------
    name : str
        Folder name, e.g. ``"vehicle"``.
    data_home : str or path, optional
        Defaults to the environment variable ``NBEMBED_DATA``.

    Returns
    -------
    dict of ndarray

    Raises
    ------
    ValueError
        If ``name`` is not a plain folder name (a path such as ``"../x"``).
    FileNotFoundError
        Naming the path that was tried and how to point to the data.
    """
    home = data_home if data_home is not None else os.environ.get("NBEMBED_DATA")
    if home is None:
        raise FileNotFoundError(f"No data folder given for {name!r}: pass data_home=... or set "
                                f"the environment variable NBEMBED_DATA.")
    if not isinstance(name, str) or not name or pathlib.Path(name).name != name \
            or name in (".", ".."):
        raise ValueError(f"name must be the name of one folder inside the data folder, such "
                         f"as 'vehicle'; got {name!r}.")
    path = pathlib.Path(home) / name / "data.npz"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist.")
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}
