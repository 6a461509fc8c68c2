"""Bad input that every method must refuse with a clear error."""

import numpy as np
import pytest

from nbembed.methods.registry import REGISTRY

#: Methods whose fit reads annotations.
ANNOTATED = [spec for spec in REGISTRY if getattr(spec.cls, "annotation_kinds", ())]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (20, 4)), rng.normal(5, 1, (20, 4))])
    y = np.repeat([0, 1], 20)
    return X, y


@pytest.mark.parametrize("spec", ANNOTATED, ids=[s.name for s in ANNOTATED])
@pytest.mark.parametrize("annotations", [{"labels": [0, 1]}, [[0, 1]], "labels.json"])
def test_annotations_that_are_not_annotations_are_a_type_error(spec, annotations, data):
    X, y = data
    if spec.name == "pe":
        X = np.full((40, 2), 0.5)
    est = spec.cls(**spec.check_params)
    with pytest.raises(TypeError, match="annotations must be an nbembed.Annotations"):
        est.fit(X, y, annotations=annotations)


@pytest.mark.parametrize("scale, fault", [(1e300, "overflow"), (1e-300, "underflow")])
@pytest.mark.parametrize("spec", [s for s in REGISTRY if s.name != "pe"],
                         ids=[s.name for s in REGISTRY if s.name != "pe"])
def test_data_whose_squared_distances_leave_double_precision_is_refused(spec, scale, fault,
                                                                        data):
    X, y = data
    with pytest.raises(ValueError, match=f"would {fault}.*Divide X by a constant"):
        spec.cls(**spec.check_params).fit(X * scale, y)


def test_all_zero_precomputed_dissimilarities_start_at_random():
    from nbembed import HSSNE

    est = HSSNE(metric="precomputed", perplexity=5.0, max_iter=50, random_state=0)
    Y = est.fit_transform(np.zeros((30, 30)))
    assert np.all(np.isfinite(Y)) and np.ptp(Y, axis=0).min() > 0
