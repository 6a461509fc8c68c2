"""Compile the kernel forms a run has not used, for the alphas still to come.

The pair kernels of :mod:`.hssne` and the tree walk of :mod:`.barnes_hut` are
compiled once per kernel function ("form"), each on its own, so that a first
run compiles only the form of its alpha. A live session, where the alpha
slider may move to any form next, calls :func:`compile_every_form` once it
has time to spare: each form then gets every signature that another form of
the same kernel was compiled for (from Numba's disk cache where it has them).
"""

from . import barnes_hut, hssne

#: Kernels compiled once per form: a tuple of dispatchers each, indexed by form.
FORM_FAMILIES = (hssne._DENSE, hssne._SPARSE, hssne._Z, barnes_hut._WALK_ALL)


def missing_forms():
    """(dispatcher, signature) pairs that :func:`compile_every_form` would compile."""
    missing = []
    for family in FORM_FAMILIES:
        signatures = {sig for kernel in family for sig in kernel.signatures}
        for kernel in family:
            missing.extend((kernel, sig) for sig in sorted(signatures - set(kernel.signatures),
                                                          key=str))
    return missing


def compile_every_form():
    """Compile every form of each kernel for the signatures any of its forms has.

    Signatures that a run adds while this compiles are compiled too: it
    looks again until nothing is missing (or a round changed nothing).

    Returns
    -------
    int
        How many (form, signature) pairs were compiled or loaded from the cache.
    """
    compiled, before = 0, None
    missing = missing_forms()
    while missing and missing != before:
        for kernel, sig in missing:
            kernel.compile(sig)
        compiled += len(missing)
        before, missing = missing, missing_forms()
    return compiled
