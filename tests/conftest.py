import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

SHARED_DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def load_shared(name):
    """A dataset from ../shared/data, or skip the test when it is absent."""
    path = SHARED_DATA / name / "data.npz"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return np.load(path, allow_pickle=False)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
