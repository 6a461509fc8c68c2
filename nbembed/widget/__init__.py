"""The Explorer widget: a live, steerable scatter of an embedding in JupyterLab.

Needs the ``widget`` extra (``pip install nbembed[widget]``). From a source
checkout, build the browser bundle first: ``npm --prefix js ci && npm --prefix
js run build``.
"""

from .explorer import BundleMissingError, Explorer
from .view import VIEWS

__all__ = ["Explorer", "BundleMissingError", "VIEWS"]
