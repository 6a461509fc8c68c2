"""Datasets: small ones shipped with scikit-learn, a synthetic text-like set, and
benchmark files on disk.

The package itself needs no files from outside: :func:`load_digits` uses the
copy of the UCI digits that scikit-learn ships. Benchmark sets (``.npz`` files
with ``X`` and ``y``) are read from a folder you name, or from the environment
variable ``NBEMBED_DATA``.
"""

import os
import pathlib

import numpy as np
import scipy.sparse as sp

from ._validation import check_number, check_random_state


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


def make_tfidf_documents(n_documents=2000, n_terms=5000, *, topic_share=0.15,
                         topic_terms=500, min_length=50, max_length=200, random_state=None):
    """Synthetic text: sparse tf-idf rows of two classes of documents.

    Every document draws its words from a mixture: with probability
    ``1 - topic_share`` from a vocabulary-wide Zipf law (the frequency of the
    term of rank r proportional to 1 / (r + 2.7)^1.1), else from its class's
    topic, a Zipf law over ``topic_terms`` terms of its own (disjoint between
    the classes). Lengths are uniform in [min_length, max_length] words. The
    counts are weighted by sublinear tf-idf (1 + log tf, smoothed idf) and each
    row is scaled to unit Euclidean norm, as text pipelines do.

    Parameters
    ----------
    n_documents : int, default=2000
        At least 2; the classes alternate, so they differ in size by at most one.
    n_terms : int, default=5000
        Vocabulary size, at least ``2 * topic_terms``.
    topic_share : float, default=0.15
        In [0, 1]: the share of a document's words drawn from its class's topic.
        The smaller, the harder the split.
    topic_terms : int, default=500
        Terms of each class's topic.
    min_length, max_length : int, default=50, 200
        Range of the document lengths in words.
    random_state : int, RandomState or None

    Returns
    -------
    X : scipy.sparse.csr_matrix (n_documents, n_terms)
        Rows of unit norm; no row is all zeros.
    y : ndarray (n_documents,) of int
        The class, 0 or 1.
    """
    from sklearn.feature_extraction.text import TfidfTransformer

    n = check_number(n_documents, "n_documents", low=2, integer=True)
    topic_terms = check_number(topic_terms, "topic_terms", low=1, integer=True)
    d = check_number(n_terms, "n_terms", low=2 * topic_terms, integer=True)
    share = check_number(topic_share, "topic_share", low=0, high=1)
    low = check_number(min_length, "min_length", low=1, integer=True)
    high = check_number(max_length, "max_length", low=low, integer=True)
    rng = check_random_state(random_state)
    background = 1.0 / (rng.permutation(d) + 2.7) ** 1.1
    background /= background.sum()
    terms = rng.permutation(d)
    topic_law = 1.0 / (np.arange(topic_terms) + 2.7)
    topics = np.zeros((2, d))
    for c in range(2):
        topics[c, terms[c * topic_terms:(c + 1) * topic_terms]] = topic_law / topic_law.sum()
    y = np.arange(n) % 2
    lengths = rng.randint(low, high + 1, size=n)
    columns, values = [], []
    for i in range(n):
        words = rng.multinomial(lengths[i], (1 - share) * background + share * topics[y[i]])
        present = np.flatnonzero(words)
        columns.append(present)
        values.append(words[present])
    indptr = np.concatenate([[0], np.cumsum([c.size for c in columns])])
    counts = sp.csr_matrix((np.concatenate(values).astype(np.float64), np.concatenate(columns),
                            indptr), shape=(n, d))
    X = TfidfTransformer(sublinear_tf=True).fit_transform(counts)
    return sp.csr_matrix(X, dtype=np.float64), y.astype(np.int64)


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
