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
