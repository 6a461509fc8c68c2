"""Labels that cannot work are refused before the expensive work (kernel maps,
neighbour searches, metric fits) starts."""

import numpy as np
import pytest

from nbembed.affinity import knn_graphs
from nbembed.methods.registry import REGISTRY
from nbembed.spectral import kpca, solver

#: Spectral learners whose label cost needs labels of two classes.
LABELLED_SPECTRAL = [spec for spec in REGISTRY
                     if spec.kind == "spectral" and spec.labels != "unused"]


@pytest.fixture
def expensive_work_forbidden(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("expensive work started before the labels were checked")

    monkeypatch.setattr(knn_graphs, "neighbourhood_graph_and_scales", forbidden)
    monkeypatch.setattr(solver, "data_basis", forbidden)
    monkeypatch.setattr(kpca.KernelPCAMap, "fit_transform", forbidden)


@pytest.mark.parametrize("spec", LABELLED_SPECTRAL, ids=[s.name for s in LABELLED_SPECTRAL])
def test_every_point_in_one_class_is_refused_before_the_neighbour_search(
        spec, expensive_work_forbidden):
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="class"):
        spec.cls().fit(X, np.zeros(40, dtype=int))
