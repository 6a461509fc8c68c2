"""BokehJS for notebooks, loaded from the Jupyter server instead of stored in them.

``output_notebook(INLINE)`` works without a network but writes all of BokehJS
(about 4 MB, in two MIME types) into the output of the cell that calls it, so
a notebook saved after running grows by 8 MB. Loading from a CDN keeps it small
but needs the network.

nbembed takes a third way. ``pip install nbembed`` enables a small Jupyter
server extension (this module) in every JupyterLab and Notebook 7 server of
the environment: it serves the installed bokeh's own ``static`` folder at
``<base_url>nbembed/bokehjs/static/`` and tells the kernels it starts where,
through environment variables. :func:`notebook_resources` reads them in the
kernel and points ``bokeh.io.output_notebook`` at that address, so the cell's
output holds only a loader (about 20 kB in its two MIME types) that adds
``<script>`` tags for the origin the page came from.
"""

import os

from ._bokeh import require_bokeh

#: Set in the Jupyter server's environment, and so in its kernels', by the
#: extension: the URL it serves BokehJS at, below the server's base URL.
URL_VARIABLE = "NBEMBED_BOKEHJS_URL"

#: Set with :data:`URL_VARIABLE`: the version of bokeh whose BokehJS is served.
VERSION_VARIABLE = "NBEMBED_BOKEHJS_VERSION"

#: Below the server's base URL; bokeh appends ``static/js/bokeh.min.js`` and the like.
ROUTE = "nbembed/bokehjs/"


def notebook_resources():
    """Where ``bokeh.io.output_notebook`` should load BokehJS from, without a network.

    Returns
    -------
    bokeh.resources.Resources
        In a kernel started by a Jupyter server (JupyterLab, Notebook 7) that
        runs nbembed's server extension with the kernel's version of bokeh:
        BokehJS served by that server, so the saved notebook holds only a small
        loader. Anywhere else (the extension is not enabled, the server runs
        another bokeh, VS Code, nbclient): ``bokeh.resources.INLINE``, which
        also works offline but stores all of BokehJS in the notebook.

    Examples
    --------
    >>> from bokeh.io import output_notebook  # doctest: +SKIP
    >>> output_notebook(notebook_resources(), hide_banner=True)  # doctest: +SKIP
    """
    require_bokeh()
    import bokeh
    from bokeh.resources import INLINE, Resources

    url = os.environ.get(URL_VARIABLE)
    # A kernel from another environment may run another bokeh, whose Python
    # side cannot drive the server's BokehJS.
    if not url or os.environ.get(VERSION_VARIABLE) != bokeh.__version__:
        return INLINE
    # The version in the query lets browsers cache each file until bokeh is upgraded.
    return Resources(mode="server", root_url=url,
                     path_versioner=lambda path: f"{path}?v={bokeh.__version__}")


def _load_jupyter_server_extension(serverapp):
    """Serve the installed BokehJS from ``serverapp`` and tell its kernels where."""
    try:
        import bokeh
        from bokeh.settings import settings
    except ImportError:
        serverapp.log.info("nbembed: bokeh is not installed; BokehJS is not served")
        return
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    class BokehJSHandler(JupyterHandler, web.StaticFileHandler):
        """Files of bokeh's ``static`` folder, for logged-in users."""

        @web.authenticated
        def get(self, path, include_body=True):
            return super().get(path, include_body)

    base_url = serverapp.web_app.settings["base_url"]
    url = url_path_join(base_url, ROUTE)
    pattern = url_path_join(url, "static/(.*)")
    serverapp.web_app.add_handlers(
        ".*$", [(pattern, BokehJSHandler, {"path": str(settings.bokehjs_path())})])
    # Kernels are started with a copy of the server's environment.
    os.environ[URL_VARIABLE] = url
    os.environ[VERSION_VARIABLE] = bokeh.__version__
    serverapp.log.info(f"nbembed: serving BokehJS {bokeh.__version__} at {url}static/")
