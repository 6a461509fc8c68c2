"""Names for the kernels that one factory builds once per variant, and serial twins
of parallel kernels.

Numba names compiled code, its environment and its file in the on-disk cache
after the Python function's qualified name, plus a counter of the process that
compiled it. Closures built by one factory share that name, so two of them
compiled by two processes (test workers, notebook kernels, Dask workers) can
come back from the cache under the same symbol and environment names, which
Numba looks up by name; a process that loads both can then find one's
environment under the other's name (an array that cannot be returned:
"'descr' is NULL"). A name per variant keeps them apart.
"""

import types


def named_variant(function, variant):
    """Rename ``function`` after ``variant``; call it before compiling it.

    Parameters
    ----------
    function : function
        A plain Python function built by a factory (not yet a dispatcher).
    variant : str
        What this instance is specialised for, e.g. its kernel function's name.

    Returns
    -------
    function
        The same function, with ``__name__`` and ``__qualname__`` ending in
        ``_<variant>``.
    """
    suffix = "_" + variant
    function.__name__ += suffix
    function.__qualname__ += suffix
    return function


def serial_twin(kernel):
    """The parallel Numba kernel ``kernel`` compiled once more, serially, under its own name.

    For work done in a thread beside the run's: the run's parallel kernels
    hold :data:`nbembed._config.KERNEL_LOCK` (Numba's default threading layer
    aborts when two threads enter it at once), and on a machine of a few cores
    a second pool of threads would only take turns with the first. In the
    twin ``prange`` is a plain ``range``; flags and results are the kernel's.

    Parameters
    ----------
    kernel : numba Dispatcher
        Compiled with ``parallel=True``.

    Returns
    -------
    numba Dispatcher
        Cached on disk like the kernel, under the name ``<kernel>_serial``.
    """
    from numba import njit

    source = kernel.py_func
    twin = types.FunctionType(source.__code__, source.__globals__, source.__name__,
                              source.__defaults__, source.__closure__)
    twin.__qualname__ = source.__qualname__
    twin.__doc__ = source.__doc__
    twin.__module__ = source.__module__
    flags = {key: value for key, value in kernel.targetoptions.items()
             if key not in ("nopython", "boundscheck", "parallel")}
    return njit(cache=True, **flags)(named_variant(twin, "serial"))
