"""Numba kernels: arrays in, arrays out.

Nothing in this package prints, logs, validates or imports scikit-learn; the
layers above (``affinity``, ``optim``, ``methods``) do that. Every kernel has a
slow, obviously correct NumPy twin in ``tests/reference.py``.

Importing the package first tells Numba where to keep the compiled kernels
(see :mod:`nbembed._numba_cache`): Numba chooses when a kernel is decorated,
so this runs before any kernel module. So does the choice of a bundle of
kernels compiled ahead of time, when the package carries one for this
process (see :mod:`nbembed._prebuilt`), which fixes Numba's target.
"""

from .._numba_cache import install
from .._prebuilt import activate

install()
activate()
