"""bokeh is optional: import it on first use, with an error that names the extra."""

INSTALL_HINT = 'pip install "nbembed[plot]"'


def require_bokeh():
    """Raise ImportError naming the ``plot`` extra when bokeh is missing."""
    try:
        import bokeh  # noqa: F401
    except ImportError as err:
        raise ImportError(f"nbembed.plotting draws with bokeh, which is not installed; "
                          f"install it with: {INSTALL_HINT}") from err
