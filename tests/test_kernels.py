"""Every Numba kernel against its plain NumPy twin in reference.py."""

import numpy as np
import pytest
import scipy.sparse as sp

import reference as ref
from nbembed._kernels import hssne, perplexity, sne

ALPHAS = [0.0, 0.5, 1.0, 2.0, 1.3]


def _problem(rng, n=37, d=2):
    X = rng.normal(size=(n, 5))
    P = ref.joint_probabilities(X, 8.0)
    Y = rng.normal(size=(n, d))
    return P, Y


def test_dense_p_log_p_sums_every_entry(rng):
    P = ref.joint_probabilities(rng.normal(size=(31, 3)), 5.0)
    P[0, 1] = P[1, 0] = 0.0  # 0 log 0 counts as 0
    values = P[P > 0]
    assert hssne.dense_p_log_p(P) == pytest.approx(np.sum(values * np.log(values)), rel=1e-13)


def _kl(P, Yt, alpha, sparse):
    z = hssne.hssne_z(Yt, alpha)
    if sparse:
        Ps = sp.csr_matrix(P)
        plogh = hssne.sparse_p_log_h(Yt, Ps.indptr, Ps.indices, Ps.data, alpha)
    else:
        plogh = hssne.dense_p_log_h(Yt, P, alpha)
    values = P[P > 0]
    return np.sum(values * np.log(values)) - plogh + np.log(z)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("sparse", [False, True])
def test_hssne_gradient_matches_reference(rng, alpha, d, sparse):
    P, Y = _problem(rng, d=d)
    Yt = np.ascontiguousarray(Y.T)
    grad = np.empty_like(Yt)
    if sparse:
        Ps = sp.csr_matrix(P)
        z, a = hssne.hssne_sparse(Yt, Ps.indptr, Ps.indices, Ps.data, alpha, 1.0, grad)
    else:
        z, a = hssne.hssne_dense(Yt, P, alpha, 1.0, grad)
    np.testing.assert_allclose(grad.T, ref.hssne_grad(P, Y, alpha), rtol=1e-10, atol=1e-14)
    H = ref.power_kernel(ref.sq_distances(Y), alpha)
    np.fill_diagonal(H, 0)
    assert z == pytest.approx(H.sum(), rel=1e-12)
    S = 1.0 / (1.0 + alpha * ref.sq_distances(Y))
    np.testing.assert_allclose(a, (P * S).sum(1), rtol=1e-12)
    assert _kl(P, Yt, alpha, sparse) == pytest.approx(ref.hssne_cost(P, Y, alpha), rel=1e-12)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_sparse_p_log_h_over_several_blocks_of_rows(rng, alpha, d):
    # Rows of 0 to 40 entries, more rows than one block: sum_ij P_ij log H_ij.
    n = 2 * hssne.P_LOG_H_ROWS + 37
    lengths = rng.integers(0, 41, size=n)
    lengths[[0, 5, n - 1]] = 0
    rows = np.repeat(np.arange(n), lengths)
    columns = rng.integers(0, n, size=rows.size)
    P = sp.csr_matrix((rng.random(rows.size), (rows, columns)), shape=(n, n))
    P.sum_duplicates()
    Y = rng.normal(scale=3.0, size=(n, d))
    Yt = np.ascontiguousarray(Y.T)
    coo = P.tocoo()
    tau = np.sum((Y[coo.row] - Y[coo.col]) ** 2, axis=1)
    log_h = -tau if alpha == 0 else -np.log1p(alpha * tau) / alpha
    expected = np.sum(coo.data * log_h)
    got = hssne.sparse_p_log_h(Yt, P.indptr, P.indices, P.data, alpha)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_exaggeration_scales_only_the_attraction(rng, alpha):
    P, Y = _problem(rng)
    Yt = np.ascontiguousarray(Y.T)
    g1, g4 = np.empty_like(Yt), np.empty_like(Yt)
    hssne.hssne_dense(Yt, P, alpha, 1.0, g1)
    hssne.hssne_dense(Yt, P, alpha, 4.0, g4)
    # grad(4P) - grad(P) is 3x the attraction, i.e. 3x the gradient of the P-part alone.
    Q = ref.hssne_q(Y, alpha)
    S = 1.0 / (1.0 + alpha * ref.sq_distances(Y))
    W = P * S
    np.fill_diagonal(W, 0)
    attraction = 4.0 * (W.sum(1)[:, None] * Y - W @ Y)
    np.testing.assert_allclose((g4 - g1).T, 3.0 * attraction, rtol=1e-9, atol=1e-14)
    assert Q.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_fixed_point_update_is_a_scaled_gradient_step(rng, alpha):
    """Eq. 14 of the paper equals y_i - grad_i / (4 A_i)."""
    P, Y = _problem(rng)
    Yt = np.ascontiguousarray(Y.T)
    grad = np.empty_like(Yt)
    _, a = hssne.hssne_dense(Yt, P, alpha, 1.0, grad)
    np.testing.assert_allclose(Y - grad.T / (4 * a[:, None]), ref.hssne_fixed_point(P, Y, alpha),
                               rtol=1e-10, atol=1e-13)


def test_power_kernel_limits():
    tau = np.linspace(0, 5, 11)
    for t in tau:
        h1, s1 = hssne.student_kernel(t, 1.0)
        assert h1 == pytest.approx(1 / (1 + t)) and s1 == pytest.approx(1 / (1 + t))
        hg, sg = hssne.gaussian_kernel(t, 0.0)
        assert hg == pytest.approx(np.exp(-t)) and sg == 1.0
        # The general form approaches the Gaussian as alpha -> 0 and matches closed forms.
        h_small, _ = hssne.power_kernel(t, 1e-7)
        assert h_small == pytest.approx(np.exp(-t), rel=1e-5)
        for alpha, closed in [(0.5, hssne.half_kernel), (2.0, hssne.two_kernel),
                              (1.0, hssne.student_kernel)]:
            assert hssne.power_kernel(t, alpha)[0] == pytest.approx(closed(t, alpha)[0], rel=1e-13)
    assert hssne.has_closed_form(0) and not hssne.has_closed_form(1.7)


@pytest.mark.parametrize("d", [2, 3])
def test_sne_gradient_and_cost_match_reference(rng, d):
    X = rng.normal(size=(31, 4))
    Pc = ref.conditional_probabilities(ref.sq_distances(X), 7.0)
    Y = rng.normal(size=(31, d))
    Yt = np.ascontiguousarray(Y.T)
    M = sp.csr_matrix(Pc + Pc.T)
    grad = np.empty_like(Yt)
    partial = sne.sne_gradient(Yt, M.indptr, M.indices, M.data, Pc.sum(1), 1.0, grad)
    values = Pc[Pc > 0]
    assert partial + np.sum(values * np.log(values)) == pytest.approx(ref.sne_cost(Pc, Y),
                                                                       rel=1e-12)
    np.testing.assert_allclose(grad.T, ref.sne_grad(Pc, Y), rtol=1e-10, atol=1e-14)
    E = np.exp(-ref.sq_distances(Y))
    np.fill_diagonal(E, 0)
    shift, z = sne.sne_normalizers(Yt)
    assert np.all(shift == 0.0)
    np.testing.assert_allclose(z, E.sum(1), rtol=1e-12)


def test_sne_gradient_stays_finite_for_a_far_point(rng):
    """A point 100 units from the rest: exp(-tau) of its row underflows, the
    shifted normalizer does not, and cost and gradient match the reference."""
    X = rng.normal(size=(25, 4))
    Pc = ref.conditional_probabilities(ref.sq_distances(X), 5.0)
    Y = rng.normal(size=(25, 2))
    Y[3] += 100.0
    Yt = np.ascontiguousarray(Y.T)
    M = sp.csr_matrix(Pc + Pc.T)
    grad = np.empty_like(Yt)
    partial = sne.sne_gradient(Yt, M.indptr, M.indices, M.data, Pc.sum(1), 1.0, grad)
    shift, _ = sne.sne_normalizers(Yt)
    assert shift[3] > 700.0 and np.all(np.delete(shift, 3) == 0.0)
    values = Pc[Pc > 0]
    cost = partial + np.sum(values * np.log(values))
    assert np.isfinite(cost) and np.all(np.isfinite(grad))
    D2 = ref.sq_distances(Y)
    np.fill_diagonal(D2, np.inf)
    logQ = -D2 - np.logaddexp.reduce(-D2, axis=1, keepdims=True)
    np.fill_diagonal(logQ, 0.0)
    expected = np.sum(values * np.log(values)) - np.sum(Pc * logQ)
    assert cost == pytest.approx(expected, rel=1e-10)
    Q = np.exp(logQ)
    np.fill_diagonal(Q, 0.0)
    W = Pc - Q + (Pc - Q).T
    expected_grad = 2.0 * (W.sum(1)[:, None] * Y - W @ Y)
    np.testing.assert_allclose(grad.T, expected_grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("perp", [2.0, 5.0, 15.0])
def test_perplexity_calibration_matches_reference(rng, perp):
    X = rng.normal(size=(40, 3)) * [1, 5, 0.1]
    D2 = ref.sq_distances(X)
    P, beta, ties = perplexity.conditional_probabilities(D2, np.log(perp), True)
    assert np.all(ties == 1)
    np.testing.assert_allclose(P, ref.conditional_probabilities(D2, perp), atol=1e-8)
    entropy = -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1)), 0), axis=1)
    np.testing.assert_allclose(np.exp(entropy), perp, rtol=1e-6)
    assert np.all(np.diag(P) == 0)
    # beta reproduces the rows.
    row = np.exp(-beta[0] * D2[0])
    row[0] = 0
    np.testing.assert_allclose(P[0], row / row.sum(), rtol=1e-9)


def test_perplexity_on_neighbour_lists(rng):
    X = rng.normal(size=(30, 3))
    D2 = ref.sq_distances(X)
    order = np.argsort(D2, axis=1)[:, 1:11]
    knn = np.take_along_axis(D2, order, axis=1)
    P, _, _ = perplexity.conditional_probabilities(np.ascontiguousarray(knn), np.log(4.0), False)
    np.testing.assert_allclose(P.sum(1), 1.0)
    entropy = -np.sum(P * np.log(P), axis=1)
    np.testing.assert_allclose(np.exp(entropy), 4.0, rtol=1e-6)


_FIT_ALPHAS = ("import numpy as np\nfrom nbembed import HSSNE\n"
               "X = np.random.default_rng(0).normal(size=(40, 3))\n"
               "for a in ALPHAS:\n"
               "    HSSNE(perplexity=5, max_iter=20, affinity='knn', alpha=a).fit(X)\n"
               "    HSSNE(perplexity=5, max_iter=20, affinity='exact', alpha=a).fit(X)\n")
# Every HSSNE pair kernel, by name and form, with its cache misses and hits.
_REPORT_KERNELS = ("from nbembed._kernels import hssne\n"
                   "for name in ('_DENSE', '_SPARSE', '_Z'):\n"
                   "    for form, f in enumerate(getattr(hssne, name)):\n"
                   "        print(f'{name}[{form}]', len(f.signatures),\n"
                   "              sum(f.stats.cache_misses.values()),\n"
                   "              sum(f.stats.cache_hits.values()))\n")


def _fit_and_report(alphas, env):
    """{kernel: (signatures, cache misses, cache hits)} after fitting ``alphas``
    in a new process."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c",
                           _FIT_ALPHAS.replace("ALPHAS", repr(tuple(alphas))) + _REPORT_KERNELS],
                          env=env, check=True, timeout=600, capture_output=True, text=True)
    return {name: tuple(int(v) for v in values) for name, *values in
            (line.split() for line in done.stdout.strip().splitlines())}


def test_each_form_compiles_on_its_own_and_a_new_alpha_compiles_nothing(tmp_path):
    """With an empty disk cache, fitting alpha = 1 compiles the pair kernels of
    the Student-t form and none of the other four. Alpha is a runtime argument
    of cached kernels: once processes have used alpha = 1, 0.5 and 0.8, another
    process fitting alpha = 1.7 and 1 (dense and kNN affinities) loads every
    HSSNE pair kernel it uses from Numba's disk cache."""
    import os

    # Compiled, not copied from a bundle the package may carry.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NBEMBED_PREBUILT_KERNELS="0")
    first = _fit_and_report((1.0,), env)
    compiled = sorted(name for name, (signatures, _, _) in first.items() if signatures)
    assert compiled and all(name.endswith("[0]") for name in compiled), compiled
    _fit_and_report((0.5, 0.8), env)
    used = {name: counts for name, counts in _fit_and_report((1.7, 1.0), env).items()
            if counts[0]}
    assert {"_DENSE[0]", "_DENSE[4]", "_SPARSE[0]", "_SPARSE[4]"} <= set(used)
    compiled = sorted(name for name, (_, misses, hits) in used.items() if misses or not hits)
    assert not compiled, f"not loaded from the disk cache: {compiled}"


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("sparse", [False, True])
def test_float32_gradient_is_close(rng, alpha, sparse):
    P, Y = _problem(rng, n=300)
    Yt = np.ascontiguousarray(Y.T).astype(np.float32)
    P32 = P.astype(np.float32)
    grad = np.empty((2, 300))
    a32 = np.float32(alpha)
    if sparse:
        Ps = sp.csr_matrix(P32)
        z, _ = hssne.hssne_sparse(Yt, Ps.indptr, Ps.indices, Ps.data, a32, 1.0, grad)
    else:
        z, _ = hssne.hssne_dense(Yt, P32, a32, 1.0, grad)
    expected = ref.hssne_grad(P, Y, alpha)
    assert np.abs(grad.T - expected).max() <= 1e-4 * np.abs(expected).max()
    H = ref.power_kernel(ref.sq_distances(Y), alpha)
    np.fill_diagonal(H, 0)
    assert z == pytest.approx(H.sum(), rel=1e-5)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_symmetric_sum_equals_scipys_a_plus_its_transpose(rng, index_dtype):
    """A + A^T without a transposed copy: the same structure and bits as SciPy's,
    with rows unsorted on input, empty rows, diagonal entries, mirrored and
    one-sided pairs, and duplicates (summed first)."""
    from nbembed.affinity.perplexity import symmetrize

    n, k = 40, 6
    rows = np.repeat(np.arange(n), k)
    cols = np.concatenate([rng.choice(n, k, replace=False) for _ in range(n)])
    cols[::17] = rows[::17]                       # some diagonal entries
    cols[5] = cols[4]                             # a duplicate in row 0
    keep = rows != 7                              # an empty row
    A = sp.coo_matrix((rng.random(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    A = sp.csr_matrix(A)                          # sums the duplicate
    for i in range(n):                            # unsort each row's entries
        span = slice(A.indptr[i], A.indptr[i + 1])
        shuffled = rng.permutation(A.indptr[i + 1] - A.indptr[i])
        A.indices[span], A.data[span] = A.indices[span][shuffled], A.data[span][shuffled]
    A.has_sorted_indices = False
    A.indptr, A.indices = A.indptr.astype(index_dtype), A.indices.astype(index_dtype)
    expected = sp.csr_matrix(A + A.T)
    expected.sum_duplicates()
    expected.data /= expected.data.sum()
    ours = symmetrize(A.copy())
    assert ours.has_sorted_indices
    np.testing.assert_array_equal(ours.indptr, expected.indptr)
    np.testing.assert_array_equal(ours.indices, expected.indices)
    np.testing.assert_array_equal(ours.data, expected.data)
    assert 0 < (A.multiply(A.T) != 0).nnz < A.nnz    # mirrored and one-sided pairs both


def test_symmetric_sum_in_single_precision_rounds_the_double_one_once(rng):
    """Stored in float32, each joint probability is the float64 one rounded (at
    most one unit in the last place apart, from the normalizer), and values
    below float32's normal range are dropped, not kept as subnormals."""
    from nbembed.affinity.perplexity import symmetrize

    n, k = 200, 8
    rows = np.repeat(np.arange(n), k)
    cols = np.concatenate([rng.choice(np.delete(np.arange(n), i), k, replace=False)
                           for i in range(n)])
    values = rng.random(n * k)
    values[::50] = 1e-45                         # far neighbours: subnormal in float32
    P = sp.csr_matrix((values, (rows, cols)), shape=(n, n))
    double = symmetrize(P.copy())
    single = symmetrize(P.copy(), np.float32)
    assert single.dtype == np.float32 and single.has_sorted_indices
    assert np.all(single.data >= np.finfo(np.float32).tiny)
    tiny = double.data < np.finfo(np.float32).tiny
    assert tiny.any()
    kept = sp.csr_matrix((np.where(tiny, 0.0, double.data), double.indices, double.indptr),
                         shape=(n, n))
    kept.eliminate_zeros()
    np.testing.assert_array_equal(single.indptr, kept.indptr)
    np.testing.assert_array_equal(single.indices, kept.indices)
    ulp = np.spacing(kept.data.astype(np.float32))
    assert np.all(np.abs(single.data - kept.data) <= ulp)
    assert single.data.sum(dtype=np.float64) == pytest.approx(1.0, rel=1e-6)


def test_is_symmetric_csr_agrees_with_the_transpose(rng):
    from nbembed._kernels.csr import is_symmetric_csr

    def check(M):
        M = sp.csr_matrix(M)
        M.sort_indices()
        expected = (abs(M - M.T)).max() == 0 and (M != 0).nnz == (M.T != 0).nnz
        assert is_symmetric_csr(M.indptr, M.indices, M.data) == expected
        return expected

    A = sp.random(60, 60, density=0.1, random_state=0, format="csr")
    S = A + A.T
    assert check(S)
    changed = S.copy()
    changed.data[17] *= 1.5
    assert not check(changed)
    one_sided = sp.lil_matrix(S)
    i, j = S.nonzero()
    one_sided[i[3], j[3]] = 0.0
    assert not check(one_sided.tocsr())
    assert not check(A)


def test_normalize_affinities_sparse_equals_dense(rng):
    from nbembed.affinity.perplexity import normalize_affinities

    A = sp.random(40, 40, density=0.2, random_state=1, format="csr")
    A.setdiag(rng.random(40))
    for M in (A, A + A.T):
        sparse = normalize_affinities(M)
        dense = normalize_affinities(M.toarray())
        assert sp.issparse(sparse) and sparse.diagonal().max() == 0
        np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-14, atol=1e-17)
        np.testing.assert_allclose(dense, dense.T, rtol=0, atol=0)
        assert dense.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("max_step_norm", [None, 0.5])
def test_momentum_gains_step_matches_numpy(rng, d, max_step_norm):
    from nbembed._kernels.optimizer import momentum_gains_step

    n = 200
    state = dict(Yt=rng.normal(size=(d, n)), velocity=rng.normal(size=(d, n)),
                 gains=rng.uniform(0.005, 3.0, size=(d, n)))
    state["velocity"][:, :20] = 0.0  # the first step: no sign yet
    mine = {k: v.copy() for k, v in state.items()}
    for momentum in (0.5, 0.8):
        grad = rng.normal(size=(d, n))
        grad[:, 10:30] = 0.0
        expected = ref.momentum_gains_step(state["Yt"], grad, state["velocity"],
                                           state["gains"], momentum, 2.0, 0.01, max_step_norm)
        shortened = momentum_gains_step(mine["Yt"], grad, mine["velocity"], mine["gains"],
                                        momentum, 2.0, 0.01,
                                        0.0 if max_step_norm is None else max_step_norm)
        assert shortened == expected
        for key in state:
            np.testing.assert_allclose(mine[key], state[key], rtol=1e-13, atol=1e-15)
    if max_step_norm is not None:
        assert np.linalg.norm(mine["velocity"], axis=0).max() <= max_step_norm * (1 + 1e-12)
        assert (np.linalg.norm(mine["velocity"], axis=0) > 0.99 * max_step_norm).any()


@pytest.mark.parametrize("alpha, n_steps", [(0.99, 200), (0.2, 18), (0.5, 0)])
def test_spread_steps_match_the_sparse_products(rng, alpha, n_steps):
    from nbembed._kernels.csr import spread_steps
    S = sp.random(60, 60, density=0.1, format="csr", random_state=3)
    S = (S + S.T).tocsr() * 0.1
    T = np.zeros((60, 4))
    T[rng.choice(60, 12, replace=False), rng.integers(0, 4, 12)] = rng.uniform(0.5, 1, 12)
    F = T.copy()
    for _ in range(n_steps):  # the steps as sparse products
        F = alpha * (S @ F) + (1 - alpha) * T
    np.testing.assert_allclose(
        spread_steps(S.indptr.astype(np.int64), S.indices.astype(np.int64), S.data, T, alpha,
                     n_steps), F, rtol=1e-12, atol=1e-15)
