"""A first map while a large run is prepared: the data's principal components.

Preparing a run (the neighbour search, the bandwidths) takes seconds at 10^5
points and minutes at 10^6 (docs/benchmarks.md), and the page would show
nothing meanwhile. From ``PREVIEW_MIN_N`` points the Explorer first shows the
points on their two (``n_components``) leading principal components, with
the status "preparing" and iteration 0, for methods that start there
(``init="pca"``, HSSNE's and NeRV's default); the run then starts from the
map already shown (passed as its ``init``, so it is not computed twice).

Threads: functions of their arguments, without state of their own; the
Explorer's worker thread calls them while it prepares the first run.
"""

from __future__ import annotations

import logging

from ..methods._base import initial_embedding, validate_input

logger = logging.getLogger(__name__)

#: Points from which the first preparation is preceded by a principal-component map.
PREVIEW_MIN_N = 50_000


def preview_positions(X, method):
    """The start (n, n_components) of ``method``'s run on the data rows ``X``, its
    principal-component map, or None where the run does not start there: another
    ``init``, dissimilarities or affinities given instead of rows, or rows the
    method would refuse (its own preparation then says why)."""
    params = method.get_params() if callable(getattr(method, "get_params", None)) else {}
    metric = params.get("metric", "euclidean")
    if params.get("init") != "pca" or not isinstance(metric, str) or \
            metric == "precomputed" or params.get("affinity") == "precomputed":
        return None
    n_components = params.get("n_components", 2)
    random_state = params.get("random_state")
    try:
        rows = validate_input(X, min_samples=4, metric=metric, sparse_rows=True)
        return initial_embedding(rows, "pca", n_components, random_state, metric=metric)
    except Exception as err:  # the run's own preparation reports what is wrong
        logger.info("nbembed Explorer: no preview map (%s)", err)
        return None
