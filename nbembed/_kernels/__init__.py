"""Numba kernels: arrays in, arrays out.

Nothing in this package prints, logs, validates or imports scikit-learn; the
layers above (``affinity``, ``optim``, ``methods``) do that. Every kernel has a
slow, obviously correct NumPy twin in ``tests/reference.py``.
"""
