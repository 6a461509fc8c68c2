"""Smoke test of an installed nbembed's Explorer widget, run by .ci/wheel_smoke.

Checks that the installed package (not a checkout) carries the widget's
JavaScript bundle and that an Explorer on the digits runs a few iterations
and closes. Run it from outside the checkout, with the venv's Python.
"""

import pathlib
import sys

import numpy as np

import nbembed
from nbembed import HSSNE
from nbembed.datasets import load_digits
from nbembed.widget import Explorer
from nbembed.widget.explorer import BUNDLE

ITERATIONS = 5


def check(condition, message):
    if not condition:
        sys.exit(f"widget smoke test failed: {message}")


def main():
    package = pathlib.Path(nbembed.__file__).resolve().parent
    check("site-packages" in package.parts,
          f"nbembed was imported from {package}, not from an installed wheel")
    check(BUNDLE.is_file(), f"the installed package has no widget bundle at {BUNDLE}")
    check(BUNDLE.stat().st_size > 0, f"the widget bundle {BUNDLE} is empty")

    X, y = load_digits()
    labels = np.where(np.arange(len(y)) < 100, y, -1)
    ex = Explorer(X, method=HSSNE(alpha=1.0, random_state=0), labels=labels)
    try:
        check(isinstance(ex._esm, str) and "export" in ex._esm,
              "the widget did not load its JavaScript from the bundle")
        ex.wait(iteration=ITERATIONS, timeout=900)
        check(ex.status != "error", f"the run failed: {ex.error}")
        check(ex.run.iteration >= ITERATIONS,
              f"the run stopped at iteration {ex.run.iteration}, before {ITERATIONS}")
        Y = ex.embedding
        check(Y is not None and Y.shape == (len(X), 2) and np.isfinite(Y).all(),
              "the embedding is missing or not finite")
    finally:
        ex.close()
    check(ex.stop(timeout=5.0), "the Explorer's worker thread did not end on close()")
    print(f"widget smoke test passed: {BUNDLE.stat().st_size} bytes of JavaScript in "
          f"{package}; {ex.run.iteration} iterations on the digits")


if __name__ == "__main__":
    main()
