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
