import os
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


def spread(label, values, threshold=None):
    """Print the mean of per-seed (or per-split) results with their spread, and return it.

    Quality tests average enough seeds that the mean sits at least about two standard
    errors from its threshold; the printout shows how far it is on this machine.
    """
    values = np.asarray(values, dtype=float)
    mean = values.mean()
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    se = sd / np.sqrt(values.size)
    line = f"{label}: mean {mean:.4f} sd {sd:.4f} se {se:.4f} (n={values.size})"
    if threshold is not None:
        margin = abs(mean - threshold) / se if se > 0 else np.inf
        line += f", threshold {threshold:.4f} ({margin:.1f} se away)"
    print("\n" + line)
    return mean


@pytest.fixture
def rng():
    return np.random.default_rng(0)


try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the property tests skip themselves without hypothesis
    pass
else:
    # Property-based tests (tests/test_properties_*.py): "ci", the default, is small and
    # derandomized so CI is stable; "thorough" searches much longer, with fresh examples:
    # NBEMBED_HYPOTHESIS_PROFILE=thorough pytest tests/test_properties_*.py
    _SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=25, derandomize=True, deadline=None,
                              suppress_health_check=_SLOW_OK, print_blob=True)
    settings.register_profile("thorough", max_examples=400, deadline=None,
                              suppress_health_check=_SLOW_OK, print_blob=True)
    settings.load_profile(os.environ.get("NBEMBED_HYPOTHESIS_PROFILE", "ci"))
