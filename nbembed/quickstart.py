"""Embed scikit-learn's digits with HSSNE and write the result.

Run ``python -m nbembed.quickstart [--alpha 1.0] [--out DIR]``. It prints the
quality measures and writes ``digits_embedding.csv`` and, when bokeh is
installed, ``digits_embedding.html`` (open it in a browser; hover a point to
see its digit). ``nbembed embed`` does the same for your own data files.
"""

import argparse
import pathlib
import sys
import time

import numpy as np

from . import HSSNE, ProgressBar
from .cli import Labels, write_embedding, write_html
from .datasets import load_digits
from .metrics import homogeneity, trustworthiness


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=1.0,
                        help="tail heaviness: 0 Gaussian, 1 t-SNE (default), >1 heavier")
    parser.add_argument("--out", default=".", help="folder for the output files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X, y = load_digits()
    print(f"digits: {X.shape[0]} points, {X.shape[1]} features, {len(np.unique(y))} classes")
    start = time.perf_counter()
    model = HSSNE(alpha=args.alpha, random_state=args.seed)
    Y = model.fit_transform(X, callbacks=ProgressBar())
    seconds = time.perf_counter() - start
    print(f"HSSNE alpha={args.alpha:g}: {model.n_iter_} iterations in {seconds:.1f} s "
          f"(Numba compilation included), KL = {model.kl_divergence_:.4f}")
    print(f"homogeneity (1-NN same class) = {homogeneity(Y, y):.3f}")
    print(f"trustworthiness (k=12)        = {trustworthiness(X, Y, k=12):.3f}")

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    labels = Labels(y)
    print(f"wrote {write_embedding(out / 'digits_embedding.csv', Y, labels)}")
    html = write_html(out / "digits_embedding.html", Y, labels, images=X.reshape(-1, 8, 8),
                      title=f"HSSNE (alpha = {args.alpha:g}) of scikit-learn digits")
    if html:
        print(f"wrote {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
