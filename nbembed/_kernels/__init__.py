"""Numba kernels: arrays in, arrays out.

Nothing in this package prints, logs, validates or imports scikit-learn; the
layers above (``affinity``, ``optim``, ``methods``) do that. Every kernel has a
slow, obviously correct NumPy twin in ``tests/reference.py``.

Importing the package first tells Numba where to keep the compiled kernels
(see :mod:`nbembed._numba_cache`): Numba chooses when a kernel is decorated,
so this runs before any kernel module.
"""

from .._numba_cache import install

install()
