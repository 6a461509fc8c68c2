"""Bad input that every method must refuse with a clear error."""

import numpy as np
import pytest
from sklearn.metrics import pairwise_distances

from nbembed import HSSNE, SNE, Mbed, NeRV
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


def test_all_zero_precomputed_dissimilarities_are_refused():
    # All points coincide: there is nothing to embed.
    est = HSSNE(metric="precomputed", perplexity=5.0, max_iter=50, random_state=0)
    with pytest.raises(ValueError, match="no spread: every dissimilarity in X is zero"):
        est.fit_transform(np.zeros((30, 30)))


@pytest.mark.parametrize("make", [
    lambda: HSSNE(metric="precomputed", perplexity=5.0, max_iter=30, random_state=0),
    lambda: SNE(metric="precomputed", perplexity=5.0, max_iter=30, random_state=0),
    lambda: Mbed(n_classes=2, metric="precomputed", max_iter=30, random_state=0),
    lambda: NeRV(metric="precomputed", n_neighbors=5.0, max_iter=5, random_state=0),
], ids=["HSSNE", "SNE", "Mbed", "NeRV"])
def test_transform_refuses_negative_precomputed_dissimilarities_as_fit_does(make, data):
    X, _ = data
    D = pairwise_distances(X)
    negative = D.copy()
    negative[3, 7] = negative[7, 3] = -0.5
    with pytest.raises(ValueError, match="negative"):
        make().fit(negative)
    model = make().fit(D)
    new = pairwise_distances(X[:3] + 0.1, X)
    new[1, 4] = -0.25
    with pytest.raises(ValueError, match=r"dissimilarities of the new points to the training "
                                         r"points\) has 1 negative entry \(the first is -0.25 "
                                         r"at row 1, column 4\).*np.maximum"):
        model.transform(new)
    new[1, 4] = 0.0  # zero is a dissimilarity like any other
    assert np.all(np.isfinite(model.transform(new)))
