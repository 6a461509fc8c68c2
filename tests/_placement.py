"""Fixtures shared by the tests of placing new points (fitted maps, Dask)."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from nbembed import HSSNE, Mbed


@pytest.fixture(scope="module")
def digits():
    """300 shuffled digits to fit (rows, labels) and 240 new rows to place."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    return X[order][:300], y[order][:300], X[order][300:540]


@pytest.fixture(scope="module")
def hssne(digits):
    return HSSNE(perplexity=20, max_iter=300, random_state=0).fit(digits[0])


@pytest.fixture(scope="module")
def mbed(digits):
    return Mbed(n_classes=3, max_iter=100, random_state=0).fit(digits[0])
