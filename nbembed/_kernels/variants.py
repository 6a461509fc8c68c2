"""Names for the kernels that one factory builds once per variant.

Numba names compiled code, its environment and its file in the on-disk cache
after the Python function's qualified name, plus a counter of the process that
compiled it. Closures built by one factory share that name, so two of them
compiled by two processes (test workers, notebook kernels, Dask workers) can
come back from the cache under the same symbol and environment names, which
Numba looks up by name; a process that loads both can then find one's
environment under the other's name (an array that cannot be returned:
"'descr' is NULL"). A name per variant keeps them apart.
"""


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
