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
``bokeh.io.output_notebook(notebook_resources())``) or :func:`save_html`.
:func:`notebook_resources` loads BokehJS from the Jupyter server, so that it
is neither fetched from a network nor stored in the notebook (see
:mod:`nbembed.plotting.notebook`).

bokeh is an optional dependency, imported when a function is first called;
install it with ``pip install "nbembed[plot]"``.
"""

from .diagnostics import cost_curve, lambda_path, precision_recall
from .notebook import notebook_resources
from .scatter import save_html, scatter

__all__ = ["scatter", "save_html", "cost_curve", "lambda_path", "precision_recall",
           "notebook_resources"]


def _jupyter_server_extension_points():
    # Enabled by jupyter-config/jupyter_server_config.d/nbembed.json, which
    # pip installs into the environment's etc/jupyter.
    return [{"module": "nbembed.plotting.notebook"}]
