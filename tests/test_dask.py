"""nbembed.dask: a fitted map placed chunk by chunk on a Dask cluster of two processes."""

import logging
import os

import numpy as np
import pytest

distributed = pytest.importorskip("dask.distributed")
da = pytest.importorskip("dask.array")

from _placement import digits, hssne, mbed  # noqa: E402, F401

import nbembed.dask as nbdask  # noqa: E402
from nbembed import HSSNE, ParametricEmbedding, SpectralSSDR  # noqa: E402
from nbembed.fitted_map import FittedMap, fitted_map  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.ERROR)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def test_cluster_places_rows_as_in_memory(client, hssne, digits):
    X_new = digits[2]
    Y = nbdask.transform(hssne, da.from_array(X_new, chunks=70))
    assert Y.shape == (240, 2) and Y.chunks == ((70, 70, 70, 30), (2,))
    assert Y.dtype == np.float64
    assert np.array_equal(client.compute(Y).result(), hssne.transform(X_new))
    # The chunks ran on the workers, not here.
    pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2 and __import__("os").getpid() not in pids


def test_chunks_their_order_and_threads_change_nothing(client, hssne, digits):
    X_new = digits[2]
    placer = fitted_map(hssne)
    expected = placer.transform(X_new)
    order = np.random.default_rng(2).permutation(len(X_new))
    shuffled = da.from_array(X_new[order], chunks=((1, 99, 17, 0, 123), (30, 34)))
    Y = nbdask.transform(placer, shuffled)
    assert np.array_equal(client.compute(Y).result(), expected[order])
    uneven = nbdask.transform(placer, da.from_array(X_new, chunks=13))
    assert np.array_equal(uneven.compute(scheduler="threads", num_workers=4), expected)
    assert np.array_equal(uneven.compute(scheduler="sync"), expected)


def test_the_map_enters_the_graph_once(hssne, digits):
    placer = fitted_map(hssne)
    Y = nbdask.transform(placer, da.from_array(digits[2], chunks=40))
    graph = dict(Y.__dask_graph__())
    holding = [key for key, task in graph.items()
               if isinstance(getattr(task, "value", None), FittedMap)]
    assert len(holding) == 1
    blocks = [key for key in graph if isinstance(key, tuple) and key[0] == Y.name]
    assert len(blocks) == 6
    assert all(holding[0] in graph[key].dependencies for key in blocks)
    # transform and predict of the same map share that task.
    again = nbdask.transform(fitted_map(hssne), da.from_array(digits[2], chunks=40))
    assert holding[0] in dict(again.__dask_graph__())


def test_a_worker_killed_mid_run_loses_no_row(hssne, digits):
    """A chunk's placement is pure: the chunks of a worker that dies are placed again
    on another (or the restarted one), and the result is complete and the same."""
    X_new = np.tile(digits[2], (10, 1))  # 200 chunks: far more than the kill takes
    expected = fitted_map(hssne).transform(X_new)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
    client = distributed.Client(cluster)
    try:
        future = client.compute(nbdask.transform(hssne, da.from_array(X_new, chunks=12)))
        busy = {}
        while not busy and not future.done():
            busy = {worker: tasks for worker, tasks in client.processing().items() if tasks}
        assert not future.done()
        victim = next(iter(busy))

        async def die():  # a coroutine: run(..., wait=False) takes only those
            os._exit(1)
        client.run(die, workers=[victim], wait=False)
        assert np.array_equal(future.result(timeout=600), expected)
        assert victim not in client.scheduler_info()["workers"]
    finally:
        client.close()
        cluster.close()


def test_mbed_predicts_as_in_memory(client, mbed, digits):
    X_new = da.from_array(digits[2], chunks=50)
    placer = fitted_map(mbed)
    proba, labels = client.compute([nbdask.predict_proba(mbed, X_new),
                                    nbdask.predict(placer, X_new)], sync=True)
    assert proba.shape == (240, 3) and labels.shape == (240,)
    assert np.array_equal(proba, placer.predict_proba(digits[2]))
    np.testing.assert_allclose(proba, mbed.predict_proba(digits[2]), rtol=0, atol=1e-13)
    assert np.array_equal(labels, mbed.predict(digits[2]))


def test_memberships_of_placed_rows_equal_predict_proba(client, mbed, hssne, digits):
    """Place once, classify the places: the same memberships as predict_proba."""
    placer = fitted_map(mbed)
    Y = nbdask.transform(placer, da.from_array(digits[2], chunks=50))
    proba = nbdask.memberships_at(placer, Y)
    assert proba.shape == (240, 3) and proba.chunks == (Y.chunks[0], (3,))
    Y_done, proba_done = client.compute([Y, proba], sync=True)
    assert np.array_equal(proba_done, placer.predict_proba(digits[2]))
    assert np.array_equal(Y_done, placer.transform(digits[2]))
    with pytest.raises(ValueError, match="Y has 64 columns, but the map of Mbed has 3 dimensions"):
        nbdask.memberships_at(placer, da.from_array(digits[2], chunks=50))
    with pytest.raises(ValueError, match="does not classify"):
        nbdask.memberships_at(hssne, Y)
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(TypeError, match="use nbembed.dask.predict_proba"):
        nbdask.memberships_at(placer, dd.from_dask_array(Y))


def test_far_rows_are_counted(client, hssne, digits):
    rows = np.vstack([digits[2][:30], digits[2][:5] + 500.0])
    far = nbdask.far_from_training(hssne, da.from_array(rows, chunks=10))
    assert far.dtype == bool and far.shape == (35,)
    assert int(client.compute(far.sum()).result()) == 5


def test_empty_chunks_are_placed_as_nothing(client, hssne, digits):
    X_new = digits[2][:40]
    X = da.from_array(X_new, chunks=((0, 20, 0, 20, 0), (64,)))
    assert np.array_equal(client.compute(nbdask.transform(hssne, X)).result(),
                          hssne.transform(X_new))
    # Chunks of unknown size, such as a boolean selection leaves.
    selected = da.from_array(X_new, chunks=10)
    selected = selected[selected[:, 0] > 100]  # no row: every chunk empty
    assert np.isnan(selected.shape[0])
    assert client.compute(nbdask.transform(hssne, selected)).result().shape == (0, 2)


def test_bad_input_is_refused_clearly(client, hssne, digits):
    X_new = digits[2]
    with pytest.raises(ValueError, match="X has 10 columns, but the fitted map of HSSNE is "
                                         "expecting 64"):
        nbdask.transform(hssne, da.from_array(X_new[:, :10], chunks=50))
    bad = X_new.copy()
    bad[130, 5] = np.nan
    Y = nbdask.transform(hssne, da.from_array(bad, chunks=50))  # lazy: no error yet
    in_chunk = r"In chunk 2 of X \(rows 100 to 149; .*\): .*NaN.*\(30, 5\)"
    with pytest.raises(ValueError, match=in_chunk):
        client.compute(Y).result()
    with pytest.raises(TypeError, match="dask.array.Array or a dask.dataframe.DataFrame"):
        nbdask.transform(hssne, X_new)
    with pytest.raises(ValueError, match="2-D dask array"):
        nbdask.transform(hssne, da.from_array(X_new[0], chunks=10))
    with pytest.raises(ValueError, match="does not classify"):
        nbdask.predict(hssne, da.from_array(X_new, chunks=50))


def test_dataframes_keep_their_index(client, hssne, mbed, digits):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X_new = digits[2]
    frame = pd.DataFrame(X_new, columns=[f"pixel{i}" for i in range(64)],
                         index=np.arange(1000, 1240))
    X = dd.from_pandas(frame, npartitions=4)
    Y = client.compute(nbdask.transform(hssne, X)).result()
    assert list(Y.columns) == ["hssne0", "hssne1"]
    assert np.array_equal(Y.index, frame.index)
    assert np.array_equal(Y.to_numpy(), hssne.transform(X_new))
    labels = client.compute(nbdask.predict(mbed, X)).result()
    assert np.array_equal(labels.to_numpy(), mbed.predict(X_new))
    proba = nbdask.predict_proba(mbed, X)
    assert list(proba.columns) == ["class0", "class1", "class2"]
    bad = frame.copy()
    bad.iloc[200, 3] = np.nan
    in_partition = r"In partition 3 of X \(index 1180 to 1239; .*\): .*NaN.*\(20, 3\)"
    with pytest.raises(ValueError, match=in_partition):
        client.compute(nbdask.transform(hssne, dd.from_pandas(bad, npartitions=4))).result()
    with pytest.raises(ValueError, match="X has 63 columns"):
        nbdask.transform(hssne, X[X.columns[1:]])
    text = dd.from_pandas(frame.assign(pixel0=frame["pixel0"].astype(str)), npartitions=2)
    with pytest.raises(TypeError, match=r"non-numeric columns \['pixel0'\]"):
        nbdask.transform(hssne, text)


def test_a_map_fitted_on_a_frame_checks_column_names_before_computing(digits):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, _, X_new = digits
    names = [f"pixel{i}" for i in range(64)]
    model = HSSNE(perplexity=10, max_iter=100, random_state=0).fit(pd.DataFrame(X, columns=names))
    swapped = dd.from_pandas(pd.DataFrame(X_new, columns=names[::-1]), npartitions=2)
    with pytest.raises(ValueError, match="same order as they were in fit"):
        nbdask.transform(model, swapped)
    right = dd.from_pandas(pd.DataFrame(X_new, columns=names), npartitions=2)
    assert np.array_equal(nbdask.transform(model, right).compute(scheduler="sync").to_numpy(),
                          model.transform(X_new))


def test_sparse_chunks(client, digits):
    sparse = pytest.importorskip("scipy.sparse")
    X, _, X_new = digits
    model = HSSNE(perplexity=10, max_iter=150, random_state=0).fit(sparse.csr_matrix(X))
    rows = da.from_array(X_new[:100], chunks=30).map_blocks(sparse.csr_matrix, dtype=float)
    assert np.array_equal(client.compute(nbdask.transform(model, rows)).result(),
                          model.transform(sparse.csr_matrix(X_new[:100])))


def test_spectral_and_parametric_maps_place_on_the_cluster(client, digits):
    X, y, X_new = digits
    partial = np.full(len(y), -1)
    for c in range(10):
        partial[np.flatnonzero(y == c)[:4]] = c
    spectral = SpectralSSDR(n_components=3, kernel="rbf").fit(X, partial)
    Y = nbdask.transform(spectral, da.from_array(X_new, chunks=70))
    assert Y.chunks == ((70, 70, 70, 30), (3,))
    assert np.array_equal(client.compute(Y).result(), spectral.transform(X_new))
    rng = np.random.default_rng(5)
    P, P_new = rng.dirichlet(np.full(4, 0.5), size=150), rng.dirichlet(np.full(4, 0.5), size=80)
    pe = ParametricEmbedding(random_state=0).fit(P)
    Y = nbdask.transform(fitted_map(pe), da.from_array(P_new, chunks=((5, 0, 75), (4,))))
    assert np.array_equal(client.compute(Y).result(), pe.transform(P_new))
    with pytest.raises(ValueError, match="measures no distance to the training points"):
        nbdask.far_from_training(spectral, da.from_array(X_new, chunks=70))
    with pytest.raises(ValueError, match="does not classify"):
        nbdask.predict(pe, da.from_array(P_new, chunks=70))
