"""A kernel's sums do not depend on where its arrays lie in memory.

LLVM vectorizes a loop that stores into one array and reads another only when a
run-time check finds them far enough apart; the scalar and the vector version
add a sum's terms in different orders. A loop that both stores and sums would
then give results 1 ulp apart depending on the heap (see
``nbembed._kernels.reduction``). These tests place scratch arrays at every
distance from each other and require bit-equal results, and hold every kernel
loop to the rule.
"""

import ast
import pathlib

import numpy as np
import pytest

import nbembed
from nbembed._kernels import nerv, parametric

#: Scratch arrays are placed this many float64 apart and more (the run-time check
#: of a vectorized loop compares distances up to a few hundred bytes).
GAPS = range(0, 48)


def _two_views(buffer, n, gap):
    """Two arrays of length ``n`` in one buffer, the second ``gap`` elements after the first."""
    return buffer[:n], buffer[n + gap:2 * n + gap]


def test_class_memberships_are_the_same_wherever_the_scratch_lies():
    rng = np.random.default_rng(0)
    K, d = 7, 2
    Phi = rng.normal(size=(K, d))
    log_prior = np.log(rng.dirichlet(np.ones(K)))
    points = rng.normal(size=(100, d))
    buffer = np.empty(2 * K + max(GAPS) + 64)
    results = set()
    for gap in GAPS:
        for first_is_logq in (True, False):
            a, b = _two_views(buffer, K, gap)
            logq, q = (a, b) if first_is_logq else (b, a)
            out = []
            for r in points:
                parametric.log_membership(r, Phi, log_prior, logq, q)
                out.append(logq.tobytes() + q.tobytes())
            results.add(b"".join(out))
    assert len(results) == 1


def test_nerv_row_statistics_are_the_same_wherever_the_scratch_lies():
    rng = np.random.default_rng(1)
    n = 12
    Yt = rng.normal(size=(2, n))
    P = rng.dirichlet(np.ones(n), size=n)
    np.fill_diagonal(P, 0.0)
    P /= P.sum(axis=1, keepdims=True)
    logP = np.log(np.where(P > 0, P, 1e-12))
    buffer = np.empty(2 * n + max(GAPS) + 64)
    results = set()
    for gap in GAPS:
        for order in (0, 1):
            a, b = _two_views(buffer, n, gap)
            tau, e = (a, b) if order == 0 else (b, a)
            out = []
            for i in range(n):
                stats = nerv._row_statistics(Yt, i, P, logP, 1.7, tau, e)
                out.append(np.array(stats).tobytes() + e.tobytes())
            results.add(b"".join(out))
    assert len(results) == 1


def _kernel_modules():
    root = pathlib.Path(nbembed.__file__).parent
    return [path for path in sorted(root.rglob("*.py")) if "njit" in path.read_text()]


def _loops_over_arrays(tree):
    """Innermost ``for`` loops (no loop inside, no call of a function that loops)."""
    looping = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
               and any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(node))}
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For):
            continue
        inside = [n for statement in loop.body for n in ast.walk(statement)]
        if any(isinstance(n, (ast.For, ast.While)) for n in inside):
            continue
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in looping
               for n in inside):
            continue
        yield loop, inside


def _float_names(tree):
    """Names some statement sets to a float literal (``z = 0.0``): float accumulators."""
    return {node.targets[0].id for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, float)}


def _loops_that_store_and_sum(tree):
    """Line numbers of innermost loops that store into an array and add into a float
    (a running product stored at every step, as in a table of powers, is no sum)."""
    floats = _float_names(tree)
    found = []
    for loop, inside in _loops_over_arrays(tree):
        stores = [n for n in inside if isinstance(n, (ast.Assign, ast.AugAssign))
                  and any(isinstance(t, ast.Subscript)
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        sums = [n for n in inside if isinstance(n, ast.AugAssign)
                and isinstance(n.op, (ast.Add, ast.Sub))
                and isinstance(n.target, ast.Name) and n.target.id in floats]
        if stores and sums:
            found.append(loop.lineno)
    return found


def test_no_kernel_loop_both_stores_into_an_array_and_sums_into_a_float():
    offenders = [f"{path.name}:{line}" for path in _kernel_modules()
                 for line in _loops_that_store_and_sum(ast.parse(path.read_text()))]
    assert offenders == []


def test_the_rule_finds_a_loop_that_stores_and_sums_and_only_that():
    tree = ast.parse("z = 0.0\n"
                     "count = 0\n"
                     "for j in range(n):\n"        # line 3: stores and sums
                     "    e = exp(x[j])\n"
                     "    out[j] = e\n"
                     "    z += e\n"
                     "for j in range(n):\n"        # line 7: sums only
                     "    z += x[j]\n"
                     "for j in range(n):\n"        # line 9: stores, counts integers
                     "    out[j] = x[j]\n"
                     "    count += 1\n")
    assert _loops_that_store_and_sum(tree) == [3]
