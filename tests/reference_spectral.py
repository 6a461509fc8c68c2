"""Slow, dense, loop-based references for the spectral framework.

Everything is an explicit n x n matrix built pair by pair from the formulas in
docs/spectral.md, independently of nbembed's sparse construction (the graphs of
nbembed.affinity and the costs of nbembed.spectral).
"""

import numpy as np
import scipy.linalg

LOCAL_SCALE_NEIGHBOR = 7


def distances(X):
    diff = X[:, None, :] - X[None, :, :]
    return np.sqrt(np.sum(diff * diff, axis=-1))


def nearest(D, i, candidates, k):
    """The k candidates nearest to i (i itself excluded), nearest first."""
    candidates = [j for j in candidates if j != i]
    order = sorted(candidates, key=lambda j: (D[i, j], j))
    return order[:k]


def neighbourhood_cost(X, k, kind, bandwidth=None, power=1.0):
    """C^u: weight on every pair where one point is among the other's k nearest."""
    n = len(X)
    D = distances(X)
    knn = [nearest(D, i, range(n), k) for i in range(n)]
    scale_k = min(LOCAL_SCALE_NEIGHBOR, n - 1)
    sigma = np.array([D[i, nearest(D, i, range(n), scale_k)[-1]] for i in range(n)])
    if bandwidth is None:
        bandwidth = np.mean([D[i, j] ** 2 for i in range(n) for j in knn[i]])
    C = np.zeros((n, n))
    for i in range(n):
        for j in knn[i]:
            if kind == "heat":
                w = np.exp(-D[i, j] ** 2 / bandwidth)
            else:
                w = np.exp(-D[i, j] ** 2 / (sigma[i] * sigma[j]))
            C[i, j] = C[j, i] = w ** power
    return C


def same_and_other_class_pairs(X, y, k):
    """Dense 0/1 matrices of same-class and other-class k-nearest labelled pairs."""
    n = len(X)
    D = distances(X)
    labelled = [i for i in range(n) if y[i] >= 0]
    near = np.zeros((n, n))
    apart = np.zeros((n, n))
    for i in labelled:
        same = [j for j in labelled if y[j] == y[i]]
        other = [j for j in labelled if y[j] != y[i]]
        for j in nearest(D, i, same, k):
            near[i, j] = near[j, i] = 1.0
        for j in nearest(D, i, other, k):
            apart[i, j] = apart[j, i] = 1.0
    return near, apart


def dne_cost(X, y, k):
    near, apart = same_and_other_class_pairs(X, y, k)
    return near - apart


def lfda_weights(X, y):
    """Sugiyama's W^w and W^b on the labelled points (zero rows for unlabelled).

    Local scaling: sigma_i = distance to x_i's 7th nearest neighbour among all
    points, labelled or not.
    """
    n = len(X)
    D = distances(X)
    labelled = [i for i in range(n) if y[i] >= 0]
    n_l = len(labelled)
    k = min(LOCAL_SCALE_NEIGHBOR, n - 1)
    sigma = [D[i, nearest(D, i, range(n), k)[-1]] for i in range(n)]
    Ww = np.zeros((n, n))
    Wb = np.zeros((n, n))
    for i in labelled:
        for j in labelled:
            if i == j:
                continue
            if y[i] == y[j]:
                n_c = sum(1 for m in labelled if y[m] == y[i])
                a = np.exp(-D[i, j] ** 2 / (sigma[i] * sigma[j]))
                Ww[i, j] = a / n_c
                Wb[i, j] = a * (1.0 / n_l - 1.0 / n_c)
            else:
                Wb[i, j] = 1.0 / n_l
    return Ww, Wb


def laplacian(C):
    return np.diag(C.sum(axis=1)) - C


def quadratic_form(X, M):
    """X_c^T M X_c with X centred (M is n x n)."""
    Xc = X - X.mean(axis=0)
    return Xc.T @ M @ Xc


def pair_objective(Z, C):
    """1/2 sum_ij C_ij ||z_i - z_j||^2, pair by pair."""
    total = 0.0
    n = len(Z)
    for i in range(n):
        for j in range(n):
            total += C[i, j] * np.sum((Z[i] - Z[j]) ** 2)
    return 0.5 * total


def weighted_scatter(X, C):
    return pair_objective(X, np.abs(C))


def lpp(X, C, n_components):
    """LPP by a dense generalized eigenproblem on centred X: bottom eigenvectors
    of X^T L X a = mu X^T D X a. Returns the embedding."""
    Xc = X - X.mean(axis=0)
    M_C = Xc.T @ laplacian(C) @ Xc
    M_B = Xc.T @ np.diag(C.sum(axis=1)) @ Xc
    _, V = scipy.linalg.eigh(M_C, M_B)
    return Xc @ V[:, :n_components]


def centred_kernel(K):
    n = len(K)
    H = np.eye(n) - np.ones((n, n)) / n
    return H @ K @ H


def subspace_distance(A, B):
    """Largest principal angle's sine between the row spaces of A and B."""
    Qa = scipy.linalg.orth(A.T)
    Qb = scipy.linalg.orth(B.T)
    return float(np.linalg.norm(Qb - Qa @ (Qa.T @ Qb), 2))
