"""Interactive bokeh figures of embeddings and of how they were optimized.

- :func:`scatter`: the embedding, coloured by class, with hover (optionally
  showing each point's image), lasso selection, pan and wheel zoom and a
  legend whose entries hide their class when clicked;
- :func:`save_html`: write any of these figures to a standalone HTML file;
- :func:`cost_curve`: the cost per iteration of one or several runs, with the
  early-exaggeration phase and live parameter changes marked;
- :func:`lambda_path`: Mbed's annealing path (λ and the margin criterion per
  step, the selected step marked);
- :func:`precision_recall`: precision against recall of neighbour retrieval
  (NeRV's readout for its tradeoff).

Every function takes arrays, histories or fitted estimators and returns the
figure without showing it: call ``bokeh.io.show(fig)`` in a notebook (after
``bokeh.io.output_notebook()``) or :func:`save_html`.

bokeh is an optional dependency, imported when a function is first called;
install it with ``pip install "nbembed[plot]"``.
"""

from .diagnostics import cost_curve, lambda_path, precision_recall
from .scatter import save_html, scatter

__all__ = ["scatter", "save_html", "cost_curve", "lambda_path", "precision_recall"]
