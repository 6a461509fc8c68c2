"""Kernels built once per variant by one factory must not share a name.

Numba names compiled code and its cache entries after the function's qualified
name (and a per-process counter); two variants cached by two processes under
one name could be confused by a third that loads both.
"""

import importlib
import pkgutil

import pytest
from numba.core.dispatcher import Dispatcher

import nbembed._kernels as kernels_package
from nbembed._kernels import barnes_hut, hssne


def _dispatchers(module):
    """The module's own compiled functions, also those held in tuples."""
    found = {}
    for value in vars(module).values():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, Dispatcher) and item.py_func.__module__ == module.__name__:
                found[id(item)] = item
    return list(found.values())


@pytest.mark.parametrize("name", [m.name for m in pkgutil.iter_modules(kernels_package.__path__)])
def test_every_compiled_kernel_of_a_module_has_its_own_name(name):
    module = importlib.import_module(f"{kernels_package.__name__}.{name}")
    names = [d.py_func.__qualname__ for d in _dispatchers(module)]
    assert len(names) == len(set(names)), sorted(names)


@pytest.mark.parametrize("factory, variants", [
    (hssne._repulsion_loop, hssne._FORMS),
    (hssne._dense_loop, hssne._FORMS),
    (barnes_hut._walk_loop, barnes_hut._WALK_FORMS),
])
def test_every_inlined_loop_has_its_own_name(factory, variants):
    names = [factory(kern).__qualname__ for kern in variants]
    assert len(names) == len(set(names)), names


def test_the_per_form_kernels_are_found():
    """The scan above sees the per-form tuples (it would pass vacuously otherwise)."""
    found = set(_dispatchers(hssne))
    assert set(hssne._DENSE) | set(hssne._SPARSE) | set(hssne._Z) <= found
    assert set(barnes_hut._WALK_ALL) <= set(_dispatchers(barnes_hut))


def test_a_serial_twin_has_its_own_name_and_no_threads_and_computes_the_same():
    import numpy as np
    import scipy.sparse as sp

    from nbembed._kernels import csr, locality

    pairs = [(csr.merged_row_lengths, csr.merged_row_lengths_serial),
             (csr.mix_sparse, csr.mix_sparse_serial),
             (locality._permute_csr_into, locality._permute_csr_into_serial)]
    for kernel, twin in pairs:
        assert kernel.targetoptions["parallel"] and not twin.targetoptions.get("parallel")
        assert twin.py_func.__qualname__ == kernel.py_func.__qualname__ + "_serial"
        assert twin.py_func.__code__ is kernel.py_func.__code__
    P = sp.random(300, 300, density=0.05, format="csr", random_state=0, dtype=np.float32)
    P = sp.csr_matrix(P + P.T)
    P.sort_indices()
    order = np.random.default_rng(0).permutation(300)
    got = locality.permute_csr(P.indptr, P.indices, P.data, order, parallel=False)
    for a, b in zip(got, locality.permute_csr(P.indptr, P.indices, P.data, order)):
        assert np.array_equal(a, b)
    assert np.array_equal(csr.merged_row_lengths_serial(P.indptr, P.indices, P.indptr, P.indices),
                          csr.merged_row_lengths(P.indptr, P.indices, P.indptr, P.indices))
