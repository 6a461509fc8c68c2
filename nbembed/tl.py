"""Embed AnnData objects the way scanpy's ``tl`` functions do.

Each function takes an ``anndata.AnnData``, fits one of nbembed's
estimators on a representation of it (``adata.X`` or an ``obsm`` entry named
by ``use_rep``), optionally learning from the labels of an ``obs`` column,
and writes the result back:

- the embedding to ``adata.obsm["X_<name>"]`` (or ``obsm[key_added]``);
- the parameters and a few facts about the fit (iterations, final cost,
  convergence) to ``adata.uns["<name>"]`` (or ``uns[key_added]``);
- for :func:`mbed`, the predicted class of every cell to the categorical
  column ``adata.obs["<name>"]`` and the class probabilities to
  ``adata.obsm["<name>_membership"]``.

With ``copy=False`` (the default) ``adata`` is changed in place and the
function returns None; with ``copy=True`` a changed copy is returned and
``adata`` is left as it was.

Labels come from an ``obs`` column: every distinct value is a class (the
categories of a categorical column, in their order, unused ones dropped),
and a missing value (NaN, None) marks a cell as unlabelled. The same
conversion gives the Explorer its starting labels, and
:func:`annotations_to_obs` writes labels made in the Explorer back as a
categorical column.

Needs the ``anndata`` extra (``pip install nbembed[anndata]``); anndata is
imported only when one of these functions is called. See docs/anndata.md.
"""

from __future__ import annotations

import sys

import numpy as np

from .annotations import Annotations
from .methods import registry

__all__ = ["embed", "hssne", "sne", "mbed", "nerv", "snerv", "spectral",
           "annotations_to_obs", "annotations_from_obs", "labels_from_obs", "representation",
           "is_anndata"]

#: Column :func:`annotations_to_obs` writes when given no key.
DEFAULT_LABELS_KEY = "nbembed_labels"
#: Fitted attributes copied to ``uns`` (without the trailing underscore) where
#: an estimator has them as a number or a bool.
FITTED_FACTS = ("n_iter_", "kl_divergence_", "cost_", "objective_", "converged_",
                "n_recoveries_", "sigma_", "radius_")


# --------------------------------------------------------------------------- input

def is_anndata(obj):
    """Whether ``obj`` is an ``anndata.AnnData`` (without importing anndata).

    An AnnData object exists only once anndata was imported, so a module not
    yet imported means the answer is no.
    """
    anndata = sys.modules.get("anndata")
    return anndata is not None and isinstance(obj, anndata.AnnData)


def _check_adata(adata):
    if is_anndata(adata):
        return
    try:
        import anndata  # noqa: F401
    except ImportError:
        raise ImportError("nbembed.tl works on AnnData objects and needs the anndata "
                          "package: pip install nbembed[anndata]") from None
    raise TypeError(f"adata must be an anndata.AnnData; got {type(adata).__name__}. For an "
                    f"array, use the estimators directly, e.g. nbembed.HSSNE().fit_transform(X).")


def representation(adata, use_rep=None):
    """The matrix of ``adata`` to embed.

    Parameters
    ----------
    adata : anndata.AnnData
    use_rep : str or None, default None
        A key of ``adata.obsm`` (such as "X_pca"); None or "X" means
        ``adata.X``, dense or sparse as it is stored.

    Returns
    -------
    ndarray or scipy.sparse matrix (n_obs, n_features)

    Raises
    ------
    TypeError
        If ``adata`` is not an AnnData or ``use_rep`` not a string.
    KeyError
        If ``obsm`` has no entry ``use_rep`` (the message lists those it has).
    ValueError
        If ``adata.X`` is None.
    """
    _check_adata(adata)
    if use_rep is None or use_rep == "X":
        if adata.X is None:
            raise ValueError("adata.X is None: there is no data matrix to embed. Name an obsm "
                             "entry with use_rep, e.g. use_rep='X_pca'.")
        return adata.X
    if not isinstance(use_rep, str):
        raise TypeError(f"use_rep must be the name of an obsm entry (a string) or None for "
                        f"adata.X; got {type(use_rep).__name__}.")
    if use_rep not in adata.obsm:
        have = ", ".join(map(repr, adata.obsm.keys())) or "none"
        raise KeyError(f"use_rep={use_rep!r} is not in adata.obsm (its keys: {have}); compute "
                       f"it first (e.g. scanpy.pp.pca for 'X_pca') or pass use_rep=None for "
                       f"adata.X.")
    rep = adata.obsm[use_rep]
    return rep.to_numpy() if hasattr(rep, "to_numpy") else rep


def _obs_column(adata, key, argument):
    if not isinstance(key, str):
        raise TypeError(f"{argument} must be the name of an obs column (a string); got "
                        f"{type(key).__name__}.")
    if key not in adata.obs.columns:
        columns = list(map(str, adata.obs.columns))
        shown = ", ".join(map(repr, columns[:20])) + (", ..." if len(columns) > 20 else "")
        raise KeyError(f"{argument}={key!r} is not a column of adata.obs (its columns: "
                       f"{shown or 'none'}).")
    return adata.obs[key]


def labels_from_obs(adata, key):
    """Class labels from the ``obs`` column ``key``: a class per distinct value.

    Parameters
    ----------
    adata : anndata.AnnData
    key : str
        A column of ``adata.obs``: categorical, strings, integers, booleans,
        or floats holding whole numbers. Missing values (NaN, None) mark
        unlabelled cells.

    Returns
    -------
    labels : ndarray of int64 (n_obs,)
        Class numbers, -1 for unlabelled cells.
    class_names : list of str
        The name of each class: the categories of a categorical column in
        their order (those no cell has dropped), otherwise the sorted values.

    Raises
    ------
    KeyError
        If ``obs`` has no column ``key``.
    TypeError
        For a column of floats that are not whole numbers (a continuous
        value, not classes) or of another kind of value (dates, ...).
    ValueError
        If two classes have the same name once written as text (such as 1
        and "1" in one column).
    """
    import pandas as pd

    _check_adata(adata)
    column = _obs_column(adata, key, "the labels column")
    if not isinstance(column.dtype, pd.CategoricalDtype):
        kind = column.dtype.kind
        if kind == "f":
            values = column.to_numpy()
            finite = values[~np.isnan(values)]
            if not np.all(np.isfinite(finite)) or np.any(finite != np.round(finite)):
                raise TypeError(f"obs[{key!r}] holds floats that are not whole numbers: a "
                                f"continuous value, not classes. Labels are categories; "
                                f"convert them, e.g. adata.obs[{key!r}].astype('category').")
            column = column.astype("Int64")
        elif kind not in "biuOU" and not isinstance(column.dtype, pd.StringDtype):
            raise TypeError(f"obs[{key!r}] has dtype {column.dtype}; labels must be "
                            f"categories, strings, integers or booleans.")
    categorical = pd.Categorical(column).remove_unused_categories()
    names = [str(c) for c in categorical.categories]
    if len(set(names)) != len(names):
        raise ValueError(f"obs[{key!r}] has classes whose names coincide as text "
                         f"({names}); make its values all strings or all numbers.")
    return np.asarray(categorical.codes, dtype=np.int64), names


def _labels_for(spec, adata, labels_key):
    """The labels ``spec``'s estimator is fitted with, as (codes or None, names)."""
    name = spec.name if spec is not None else "this estimator"
    uses = spec.labels if spec is not None else "optional"
    if labels_key is None:
        if uses == "required":
            raise ValueError(f"{name} learns from labels: pass labels_key, the obs column "
                             f"holding them (missing values for unlabelled cells).")
        return None, []
    if uses == "unused":
        raise ValueError(f"{name} does not use labels; leave labels_key out.")
    codes, names = labels_from_obs(adata, labels_key)
    if not np.any(codes >= 0):
        raise ValueError(f"obs[{labels_key!r}] labels no cell (every value is missing); "
                         f"label some cells or leave labels_key out.")
    return codes, names


# --------------------------------------------------------------------------- output

def _plain(value):
    """``value`` as something every AnnData version writes to h5ad, or None to leave it out."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, np.ndarray):
        return None
    return repr(value)  # an estimator or object parameter, as its repr says


def _params_record(model, extra):
    params = {}
    for name, value in sorted(model.get_params(deep=False).items()):
        plain = _plain(value)
        if plain is not None:
            params[name] = plain
    params.update(extra)
    return params


def _fitted_facts(model):
    facts = {}
    for attribute in FITTED_FACTS:
        value = getattr(model, attribute, None)
        if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            facts[attribute.rstrip("_")] = _plain(value)
    return facts


def _class_names(known, n_classes):
    """``known`` names, then "class k" for further classes (primed where taken)."""
    names = list(known[:n_classes])
    for k in range(len(names), n_classes):
        name = f"class {k}"
        while name in names or name in known:
            name += "'"
        names.append(name)
    return names


def _write_categorical(adata, key, codes, names):
    import pandas as pd

    adata.obs[key] = pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64),
                                               categories=list(names))


# --------------------------------------------------------------------------- embedding

def _method_spec(method):
    """(registry entry or None, name) of a method name or an estimator."""
    if isinstance(method, str):
        try:
            spec = registry.get(method)
        except KeyError as err:
            raise ValueError(err.args[0]) from None
        if spec.kind == "metric":
            raise ValueError(f"{spec.name} is a metric, not an embedding; embed in it with "
                             f"'snerv'.")
        return spec, spec.name
    if not callable(getattr(method, "fit", None)):
        raise TypeError(f"method must be a method name (e.g. 'hssne') or an nbembed estimator; "
                        f"got {type(method).__name__}.")
    try:
        spec = registry.get(type(method))
    except KeyError:
        return None, type(method).__name__.lower()
    return spec, spec.name


def _estimator(method, spec, params, class_names):
    """The estimator to fit: ``method`` itself, or a new one of ``spec`` with ``params``."""
    if not isinstance(method, str):
        if params:
            raise TypeError(f"parameters ({', '.join(sorted(params))}) go with a method name; "
                            f"set them on the estimator instead (estimator.set_params(...)).")
        return method
    allowed = spec.cls._get_param_names()
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise TypeError(f"{spec.class_name} has no parameter(s) {', '.join(unknown)}; its "
                        f"parameters are {', '.join(allowed)}.")
    if "random_state" in allowed:
        params = {"random_state": 0, **params}  # reproducible by default, as in scanpy
    if "n_classes" in allowed and class_names:
        # Mbed: one class per class of the labels unless told otherwise.
        params = {"n_classes": max(2, len(class_names)), **params}
    return spec.cls(**params)


def embed(adata, method, *, use_rep=None, labels_key=None, annotations=None, key_added=None,
          copy=False, **params):
    """Embed the cells of ``adata`` with any of nbembed's methods.

    Parameters
    ----------
    adata : anndata.AnnData
    method : str or estimator
        A method name of :data:`nbembed.methods.registry.REGISTRY` ("hssne",
        "mbed", "sslfda", ...; see the command line's ``--method``), built
        with ``params``; or an nbembed estimator, fitted in place (its fitted
        attributes stay available, e.g. for ``transform`` of new cells).
    use_rep : str or None, default None
        The ``obsm`` entry to embed (such as "X_pca"); None uses ``adata.X``
        (dense or sparse; see :func:`representation`).
    labels_key : str, optional
        An ``obs`` column of class labels to learn from, missing for
        unlabelled cells (see :func:`labels_from_obs`). Needed by methods that
        require labels, refused by methods that use none.
    annotations : Annotations, optional
        Labels and constraints for the fit, such as ``explorer.annotations``.
    key_added : str, optional
        Where to write: ``obsm[key_added]`` and ``uns[key_added]`` (and, for
        Mbed, ``obs[key_added]``). By default ``obsm["X_<name>"]`` and
        ``uns["<name>"]`` (``obs["<name>"]``), with ``<name>`` the method name.
    copy : bool, default False
        Work on a copy of ``adata`` and return it, leaving ``adata`` unchanged.
    **params
        Parameters of the method (only with a method name). ``random_state``
        is 0 unless given, so that repeated calls agree.

    Returns
    -------
    anndata.AnnData or None
        The changed copy with ``copy=True``, otherwise None.

    Raises
    ------
    TypeError
        If ``adata`` is not an AnnData, for an unknown parameter, or for a
        wrong type of ``use_rep`` or ``labels_key``.
    KeyError
        If ``use_rep`` is not in ``obsm`` or ``labels_key`` not in ``obs``.
    ValueError
        For an unknown method, labels where the method takes none (or none
        where it needs them), or whatever the estimator refuses in the data.

    Notes
    -----
    ``uns[<key>]`` holds ``params`` (the estimator's parameters that are
    numbers, strings or booleans, other objects as their repr; ``use_rep``,
    ``labels_key`` and the estimator's class as ``method``) and the fitted
    facts the estimator has: ``n_iter``, ``kl_divergence`` or ``cost``,
    ``converged``, ``n_recoveries`` and method-specific ones (``sigma``,
    ``objective``, ...).
    """
    _check_adata(adata)
    if key_added is not None and (not isinstance(key_added, str) or not key_added):
        raise TypeError(f"key_added must be a non-empty string or None; got {key_added!r}.")
    if annotations is not None and not isinstance(annotations, Annotations):
        raise TypeError(f"annotations must be an nbembed.Annotations (e.g. "
                        f"explorer.annotations); got {type(annotations).__name__}.")
    spec, name = _method_spec(method)
    X = representation(adata, use_rep)
    y, class_names = _labels_for(spec, adata, labels_key)
    model = _estimator(method, spec, params, class_names)
    fit_options = {} if annotations is None else {"annotations": annotations}
    model.fit(X, y, **fit_options)
    Y = model.embedding_ if hasattr(model, "embedding_") else model.transform(X)

    if copy:
        adata = adata.copy()
    uns_key, obsm_key = (name, f"X_{name}") if key_added is None else (key_added, key_added)
    adata.obsm[obsm_key] = np.asarray(Y)
    record = {"use_rep": "X" if use_rep is None else use_rep,
              "method": type(model).__name__}
    if labels_key is not None:
        record["labels_key"] = labels_key
    adata.uns[uns_key] = {"params": _params_record(model, record), **_fitted_facts(model)}
    if getattr(model, "labels_", None) is not None and hasattr(model, "membership_"):
        membership = np.asarray(model.membership_)
        _write_categorical(adata, uns_key, model.labels_,
                           _class_names(class_names, membership.shape[1]))
        adata.obsm[f"{uns_key}_membership"] = membership
    return adata if copy else None


def _method_function(name, summary, labels, extra=""):
    """The function ``tl.<name>``: :func:`embed` with ``method=name``."""
    spec = registry.get(name)

    def function(adata, *, use_rep=None, labels_key=None, annotations=None, key_added=None,
                 copy=False, **params):
        return embed(adata, name, use_rep=use_rep, labels_key=labels_key,
                     annotations=annotations, key_added=key_added, copy=copy, **params)

    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    function.__doc__ = f"""{summary}

    :func:`embed` with :class:`~nbembed.{spec.class_name}`; the embedding goes
    to ``adata.obsm["X_{name}"]`` and the parameters and fitted facts to
    ``adata.uns["{name}"]`` (both ``key_added`` if given).{extra}

    Parameters
    ----------
    adata : anndata.AnnData
    use_rep : str or None, default None
        The ``obsm`` entry to embed (such as "X_pca"); None uses ``adata.X``.
    labels_key : str, optional
        {labels}
    annotations : Annotations, optional
        Labels and constraints for the fit, such as ``explorer.annotations``.
    key_added : str, optional
        Where to write instead of the default keys.
    copy : bool, default False
        Work on a copy of ``adata`` and return it, leaving ``adata`` unchanged.
    **params
        Parameters of :class:`~nbembed.{spec.class_name}`; ``random_state`` is
        0 unless given.

    Returns
    -------
    anndata.AnnData or None
        The changed copy with ``copy=True``, otherwise None.

    Raises
    ------
    TypeError, KeyError, ValueError
        As :func:`embed`.
    """
    return function


_SEMI_SUPERVISED = ("An obs column of class labels to learn from, missing (NaN) for "
                    "unlabelled cells.")

hssne = _method_function(
    "hssne", "Heavy-tailed symmetric SNE (t-SNE at ``alpha=1``) of the cells of ``adata``.",
    _SEMI_SUPERVISED + " Cells of one class are must-linked (weight ``rho``).")
sne = _method_function(
    "sne", "Stochastic neighbour embedding of the cells of ``adata``.",
    "Not taken: SNE uses no labels.")
nerv = _method_function(
    "nerv", "Neighbour retrieval visualizer (NeRV) of the cells of ``adata``.",
    "Not taken: NeRV uses no labels.")
snerv = _method_function(
    "snerv", "NeRV in a supervised learning metric of the cells of ``adata``.",
    "Required: " + _SEMI_SUPERVISED)
spectral = _method_function(
    "spectral", "The semi-supervised spectral framework (a linear map) on ``adata``.",
    "Required: " + _SEMI_SUPERVISED + " Its presets (\"sslfda\", \"ssdne\", ...) are "
    "available through :func:`embed`.")
mbed = _method_function(
    "mbed", "Large-margin embedding (Mbed) of the cells of ``adata``, with predicted classes.",
    _SEMI_SUPERVISED + " Without ``n_classes`` among ``params``, Mbed gets one class "
    "per class of the column (at least 2).",
    extra="""

    Mbed also predicts a class for every cell: the categorical column
    ``adata.obs["mbed"]`` holds it (the categories are the classes of
    ``labels_key``, then "class k" for classes beyond them) and
    ``adata.obsm["mbed_membership"]`` the class probabilities (with
    ``key_added``: ``obs[key_added]`` and ``obsm[key_added + "_membership"]``).""")


# --------------------------------------------------------------------------- annotations

def annotations_from_obs(adata, key):
    """:class:`~nbembed.Annotations` holding the labels of the ``obs`` column ``key``.

    Parameters
    ----------
    adata : anndata.AnnData
    key : str
        A column of class labels, missing for unlabelled cells (see
        :func:`labels_from_obs`); its classes become the class names.

    Returns
    -------
    Annotations

    Raises
    ------
    TypeError, KeyError, ValueError
        As :func:`labels_from_obs`.
    """
    labels, names = labels_from_obs(adata, key)
    return Annotations.from_labels(labels, class_names=names or None)


def annotations_to_obs(adata, annotations, key=DEFAULT_LABELS_KEY, *, copy=False):
    """Write the labels of ``annotations`` to ``adata.obs[key]`` as a categorical column.

    Every class of the annotations is a category (in their order, named by
    their class names, used or not); unlabelled cells are missing (NaN). A
    soft label counts as its most probable class. Constraints (must-links,
    cannot-links) are not written; keep them with ``annotations.to_json()``,
    e.g. in ``adata.uns``.

    Parameters
    ----------
    adata : anndata.AnnData
    annotations : Annotations or Explorer
        The annotations, or an Explorer (its ``annotations`` are written).
    key : str, default "nbembed_labels"
        The column to write (replaced if it exists).
    copy : bool, default False
        Write to a copy of ``adata`` and return it, leaving ``adata`` unchanged.

    Returns
    -------
    anndata.AnnData or None
        The changed copy with ``copy=True``, otherwise None.

    Raises
    ------
    TypeError
        If ``adata`` is not an AnnData, ``annotations`` not annotations or
        ``key`` not a non-empty string.
    ValueError
        If the annotations are for another number of cells.
    """
    _check_adata(adata)
    if not isinstance(annotations, Annotations):
        annotations = getattr(annotations, "annotations", annotations)
    if not isinstance(annotations, Annotations):
        raise TypeError(f"annotations must be an nbembed.Annotations or an Explorer; got "
                        f"{type(annotations).__name__}.")
    if not isinstance(key, str) or not key:
        raise TypeError(f"key must be a non-empty string (the obs column); got {key!r}.")
    if annotations.n_samples != adata.n_obs:
        raise ValueError(f"the annotations are for {annotations.n_samples} points but adata "
                         f"has {adata.n_obs} cells; write them to the AnnData they were "
                         f"made on.")
    if copy:
        adata = adata.copy()
    _write_categorical(adata, key, annotations.to_labels(), annotations.class_names)
    return adata if copy else None
