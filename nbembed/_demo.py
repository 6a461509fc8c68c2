"""What ``nbembed demo`` needs: the quickstart notebook and the JupyterLab command."""

from __future__ import annotations

import os
import pathlib
import socket
import sys
from importlib import resources


def quickstart_notebook():
    """The quickstart notebook shipped with nbembed (or, in a source checkout,
    ``notebooks/01-quickstart.ipynb``).

    Returns
    -------
    importlib.resources.abc.Traversable or pathlib.Path or None
        None when neither is there.
    """
    packaged = resources.files("nbembed") / "notebooks" / "quickstart.ipynb"
    if packaged.is_file():
        return packaged
    checkout = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "01-quickstart.ipynb"
    if checkout.is_file():
        return checkout
    return None


def running_as_root():
    """Whether this process runs as the superuser (JupyterLab then needs ``--allow-root``)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_command(notebook, *, port, no_browser=False, allow_root=False):
    """The command that opens ``notebook`` in JupyterLab on ``port`` (run it in its folder)."""
    command = [sys.executable, "-m", "jupyterlab", pathlib.Path(notebook).name,
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    return (command + (["--no-browser"] if no_browser else [])
            + (["--allow-root"] if allow_root else []))
