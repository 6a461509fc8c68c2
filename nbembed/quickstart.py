"""Embed scikit-learn's digits with HSSNE and write the result.

Run ``python -m nbembed.quickstart [--alpha 1.0] [--out DIR]``. It prints the
quality measures and writes ``digits_embedding.csv`` and, when bokeh is
installed, ``digits_embedding.html`` (open it in a browser).
"""

import argparse
import pathlib
import sys
import time

import numpy as np

from . import HSSNE, ProgressBar
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
    csv = out / "digits_embedding.csv"
    np.savetxt(csv, np.column_stack([Y, y]), delimiter=",", header="y1,y2,label",
               comments="", fmt=["%.6f", "%.6f", "%d"])
    print(f"wrote {csv}")
    html = _write_html(Y, y, out / "digits_embedding.html", args.alpha)
    if html:
        print(f"wrote {html}")
    return 0


def _write_html(Y, y, path, alpha):
    try:
        from bokeh.io import output_file, save
        from bokeh.models import ColumnDataSource
        from bokeh.palettes import Category10
        from bokeh.plotting import figure
    except ImportError:
        print("bokeh is not installed (pip install 'nbembed[plot]'): no HTML written")
        return None
    colors = [Category10[10][label % 10] for label in y]
    source = ColumnDataSource(dict(x=Y[:, 0], y=Y[:, 1], label=[str(v) for v in y],
                                   color=colors))
    fig = figure(title=f"HSSNE (alpha = {alpha:g}) of scikit-learn digits",
                 tools="pan,wheel_zoom,box_zoom,lasso_select,reset,save,hover",
                 tooltips=[("digit", "@label")], width=700, height=650)
    fig.scatter("x", "y", color="color", legend_field="label", source=source, size=4,
                alpha=0.8)
    output_file(path, title="nbembed quickstart")
    save(fig)
    return path


if __name__ == "__main__":
    sys.exit(main())
