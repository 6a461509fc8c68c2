"""Figures of how an embedding was optimized and how well it retrieves neighbours."""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_number
from ._bokeh import require_bokeh

#: History keys that are not live parameters.
RECORD_KEYS = frozenset({"iteration", "cost", "grad_norm", "exaggeration", "optimizer", "seconds"})

_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def cost_curve(history, *, title=None, y_axis_type="linear", width=700, height=350):
    """The cost per iteration of one run, or of several to compare.

    The early-exaggeration phase is shaded, and every change of a live
    parameter (``run.set_params``) is a dashed vertical line labelled with the
    new value: the cost jumps there because the objective changed.

    Parameters
    ----------
    history : fitted estimator, run, list of dict, or dict of those
        A fitted estimator (its ``history_``), a run (its ``history``), a
        history itself (records with at least ``iteration`` and ``cost``), or
        a dict mapping a legend name to any of these to draw several curves.
    title : str, optional
    y_axis_type : {"linear", "log"}, default="linear"
    width, height : int
        Figure size in pixels.

    Returns
    -------
    bokeh.plotting.figure

    Raises
    ------
    ValueError, TypeError
        For an unfitted estimator or records without ``iteration`` and ``cost``.
    """
    require_bokeh()
    from bokeh.models import BoxAnnotation, ColumnDataSource, HoverTool, Label, Span
    from bokeh.palettes import Category10
    from bokeh.plotting import figure

    curves = _curves(history)
    fig = figure(title=title, width=width, height=height, tools=_TOOLS,
                 x_axis_label="iteration", y_axis_label="cost", y_axis_type=y_axis_type)
    lines, phases, all_params = [], set(), set()
    for k, (name, records, labels, exaggeration_iter) in enumerate(curves):
        color = Category10[10][k % 10]
        params = sorted(set().union(*records) - RECORD_KEYS)
        all_params.update(params)
        columns = {key: [_number(r.get(key)) for r in records]
                   for key in ["iteration", "cost"] + params}
        columns["run"] = [name] * len(records)
        source = ColumnDataSource(columns)
        legend = dict(legend_label=name) if len(curves) > 1 else {}
        lines.append(fig.line("iteration", "cost", source=source, color=color, line_width=2,
                              **legend))
        fig.scatter("iteration", "cost", source=source, color=color, size=3, **legend)

        phase = _exaggeration_phase(records, exaggeration_iter)
        if phase is not None and phase not in phases:
            phases.add(phase)
            fig.add_layout(BoxAnnotation(left=phase[0], right=phase[1], fill_color="gray",
                                         fill_alpha=0.12, line_alpha=0))
            fig.add_layout(Label(x=phase[0], y=5, y_units="screen", x_offset=4,
                                 text="early exaggeration", text_font_size="9pt",
                                 text_color="gray"))
        for iteration, key, value in _parameter_changes(records, params):
            fig.add_layout(Span(location=iteration, dimension="height", line_color=color,
                                line_dash="dashed", line_width=1))
            fig.add_layout(Label(x=iteration, y=24, y_units="screen", x_offset=3,
                                 text=f"{labels.get(key, key)} = {_format(value)}",
                                 text_font_size="9pt", text_color=color))
    tooltips = [("run", "@run"), ("iteration", "@iteration"), ("cost", "@cost{0.0000}")]
    tooltips += [(labels.get(p, p), f"@{{{p}}}") for p in sorted(all_params)]
    fig.add_tools(HoverTool(renderers=lines, tooltips=tooltips, mode="vline"))
    if len(curves) > 1:
        fig.legend.click_policy = "hide"
    return fig


def lambda_path(mbed, *, title=None, width=700, height=400):
    """Mbed's annealing: the margin criterion and λ per step, the chosen step marked.

    Parameters
    ----------
    mbed : fitted Mbed, or any object or dict with the three entries below
        ``lambda_path_`` (λ per annealing step), ``criterion_path_`` (the
        margin criterion per step, larger is better) and ``selected_step_``
        (the index of the returned step in those arrays).
    title : str, optional
    width, height : int

    Returns
    -------
    bokeh.plotting.figure
        The criterion on the left axis, λ on a logarithmic right axis.

    Raises
    ------
    ValueError
        If the paths are missing, differ in length, or the selected step is
        outside them.
    """
    require_bokeh()
    from bokeh.models import (ColumnDataSource, HoverTool, LinearAxis, LinearScale, LogAxis,
                              LogScale, Range1d, Span)
    from bokeh.plotting import figure

    lambdas = _path(mbed, "lambda_path_")
    criterion = _path(mbed, "criterion_path_")
    if lambdas.shape != criterion.shape:
        raise ValueError(f"lambda_path_ and criterion_path_ must have one entry per annealing "
                         f"step; got {lambdas.size} and {criterion.size}.")
    selected = check_number(_entry(mbed, "selected_step_"), "selected_step_", low=0,
                            high=lambdas.size - 1, integer=True)
    steps = np.arange(lambdas.size)
    source = ColumnDataSource(dict(step=steps, lam=lambdas, criterion=criterion))

    fig = figure(title=title, width=width, height=height, tools=_TOOLS,
                 x_axis_label="annealing step", y_axis_label="margin criterion")
    criterion_line = fig.line("step", "criterion", source=source, line_width=2,
                              legend_label="criterion")
    fig.scatter("step", "criterion", source=source, size=6, legend_label="criterion")
    positive = lambdas[np.isfinite(lambdas) & (lambdas > 0)]
    log = positive.size == lambdas.size
    low, high = (positive.min(), positive.max()) if positive.size else (0.0, 1.0)
    fig.extra_y_ranges = {"lambda": Range1d(low / 1.5, high * 1.5) if log else
                          Range1d(low - 0.1 * abs(low) - 1e-12, high + 0.1 * abs(high) + 1e-12)}
    fig.extra_y_scales = {"lambda": LogScale() if log else LinearScale()}
    axis = LogAxis if log else LinearAxis
    fig.add_layout(axis(y_range_name="lambda", axis_label="λ"), "right")
    fig.line("step", "lam", source=source, y_range_name="lambda", color="darkorange",
             line_dash="dashed", line_width=2, legend_label="λ")
    fig.add_layout(Span(location=selected, dimension="height", line_color="firebrick",
                        line_width=2))
    fig.scatter([selected], [criterion[selected]], marker="star", size=16, color="firebrick",
                legend_label=f"selected (step {selected})")
    fig.add_tools(HoverTool(renderers=[criterion_line], mode="vline",
                            tooltips=[("step", "@step"), ("λ", "@lam{0.000}"),
                                      ("criterion", "@criterion{0.000}")]))
    fig.legend.orientation = "horizontal"
    fig.add_layout(fig.legend[0], "below")
    return fig


def precision_recall(precision, recall, labels=None, *, title=None, width=500, height=450):
    """Precision against recall of neighbour retrieval, one point per setting.

    NeRV's tradeoff moves an embedding along this curve: tradeoff 1 favours
    recall (no input neighbour missed), 0 precision (no false neighbours).
    Give one point per tradeoff value, neighbourhood size or method.

    Parameters
    ----------
    precision, recall : array-like of shape (n_points,)
        Values in [0, 1] (mean or smoothed precision and recall).
    labels : sequence of str, optional
        A name per point (for example "λ = 0.1"), drawn beside it and shown
        in the tooltip.
    title : str, optional
    width, height : int

    Returns
    -------
    bokeh.plotting.figure
        Recall on the x axis, precision on the y axis, both from 0 to 1.
    """
    require_bokeh()
    from bokeh.models import ColumnDataSource, HoverTool, Range1d
    from bokeh.plotting import figure

    precision = np.asarray(precision, dtype=np.float64)
    recall = np.asarray(recall, dtype=np.float64)
    if precision.ndim != 1 or precision.shape != recall.shape:
        raise ValueError(f"precision and recall must be 1-D arrays of the same length; got "
                         f"shapes {precision.shape} and {recall.shape}.")
    if labels is None:
        labels = [""] * precision.size
    labels = [str(label) for label in labels]
    if len(labels) != precision.size:
        raise ValueError(f"labels must have one entry per point ({precision.size}); got "
                         f"{len(labels)}.")
    source = ColumnDataSource(dict(precision=precision, recall=recall, label=labels))
    fig = figure(title=title, width=width, height=height, tools=_TOOLS,
                 x_axis_label="recall", y_axis_label="precision",
                 x_range=Range1d(0, 1.02), y_range=Range1d(0, 1.02))
    fig.line("recall", "precision", source=source, line_width=2)
    points = fig.scatter("recall", "precision", source=source, size=8)
    fig.text("recall", "precision", text="label", source=source, x_offset=6, y_offset=-6,
             text_font_size="9pt")
    fig.add_tools(HoverTool(renderers=[points], tooltips=[
        ("", "@label"), ("precision", "@precision{0.000}"), ("recall", "@recall{0.000}")]))
    return fig


# --------------------------------------------------------------------------- helpers

def _curves(history):
    """[(name, records, {parameter: display label}, exaggeration iterations or
    None)] from the accepted inputs."""
    if isinstance(history, dict):
        if not history:
            raise ValueError("history is an empty dict; give at least one run.")
        return [(str(name),) + _curves(item)[0][1:] for name, item in history.items()]
    labels = {name: getattr(p, "display_name", name)
              for name, p in getattr(history, "live_parameters", {}).items()}
    if isinstance(history, (list, tuple)):
        name, records = "cost", history
    elif hasattr(history, "history_"):
        name, records = type(history).__name__, history.history_
    elif hasattr(history, "history"):
        name, records = getattr(history, "name", type(history).__name__), history.history
    elif hasattr(history, "fit"):
        raise ValueError(f"This {type(history).__name__} has no history_: fit it first.")
    else:
        raise TypeError(f"history must be a fitted estimator, a run, a list of records or a "
                        f"dict of those; got {type(history).__name__}.")
    records = list(records)
    if not records:
        raise ValueError("The history is empty: run some iterations first.")
    for record in records:
        if not isinstance(record, dict) or "iteration" not in record or "cost" not in record:
            raise ValueError(f"Every history record must be a dict with 'iteration' and "
                             f"'cost'; got {record!r}.")
    # Records are sparse (every few iterations); the schedule says exactly
    # where early exaggeration ended.
    exaggeration_iter = getattr(history, "exaggeration_iter",
                                getattr(history, "early_exaggeration_iter", None))
    if not isinstance(exaggeration_iter, (int, np.integer)):
        exaggeration_iter = None
    return [(name, records, labels, exaggeration_iter)]


def _number(value):
    """Plottable float: None and infinities become NaN (a gap in the line)."""
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        value = float(value)
        return value if math.isfinite(value) else math.nan
    return math.nan if value is None else value


def _format(value):
    return "auto" if value is None else f"{value:g}" if isinstance(value, (int, float)) \
        else str(value)


def _exaggeration_phase(records, exaggeration_iter):
    """(first, last) iteration of early exaggeration, or None.

    Without the schedule's length, the phase ends at the first record after
    it (records are taken every few iterations).
    """
    exaggerated = [r["iteration"] for r in records if r.get("exaggeration", 1.0) != 1.0]
    if not exaggerated:
        return None
    if exaggeration_iter is not None:
        return min(exaggerated), exaggeration_iter
    later = [r["iteration"] for r in records
             if r["iteration"] > max(exaggerated) and r.get("exaggeration", 1.0) == 1.0]
    return min(exaggerated), min(later) if later else max(exaggerated)


def _parameter_changes(records, params):
    """(iteration, name, new value) wherever a live parameter changed.

    A run records the cost at the end of every ``step`` call, so a change made
    between two calls happened at the earlier record's iteration.
    """
    changes = []
    for before, after in zip(records, records[1:]):
        for key in params:
            if key in before and key in after and before[key] != after[key]:
                changes.append((before["iteration"], key, after[key]))
    return changes


def _entry(obj, name):
    if isinstance(obj, dict):
        if name not in obj:
            raise ValueError(f"Missing {name!r}; expected keys lambda_path_, criterion_path_ "
                             f"and selected_step_.")
        return obj[name]
    if not hasattr(obj, name):
        raise ValueError(f"{type(obj).__name__} has no {name}: pass a fitted Mbed (or an "
                         f"object with lambda_path_, criterion_path_ and selected_step_).")
    return getattr(obj, name)


def _path(obj, name):
    values = np.asarray(_entry(obj, name), dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {values.shape}.")
    return values
