"""Controls: what the Explorer offers for its run, and the checks of slider values.

When a new run starts, :class:`LiveControls` builds the controls the run
supports: a slider per live parameter (:func:`param_spec`), the annotation
modes it uses and the colour options. Slider values from the browser are
checked as the run will check them before any reaches the worker; values the
run reports back are shown without being sent to it again.

Threads: slider values arrive on the kernel's main thread; the worker thread
adopts a new run and shows the parameters in effect after its steps. Both set
the traits under the Explorer's ``_sync_lock``.
"""

from __future__ import annotations

import math

import traitlets

from ..optim.protocol import check_live_params


def param_spec(p):
    """A live parameter as the browser's slider needs it (JSON: no infinities).

    Parameters
    ----------
    p : LiveParameter

    Returns
    -------
    dict
        ``name``, ``label``, ``description``, ``step`` and ``allows_auto``;
        ``low``/``high``, the accepted interval (None: unbounded), with
        ``low_open``/``high_open`` saying whether the end itself is excluded;
        ``min``/``max``, the slider's range, kept inside the interval.
    """
    finite = (lambda v: float(v) if math.isfinite(v) else None)
    low, high = finite(p.low), finite(p.high)
    slider_min, slider_max = float(p.slider[0]), float(p.slider[1])
    if low is not None and (slider_min < low or (p.low_open and slider_min == low)):
        slider_min = low + float(p.step) if p.low_open else low
    if high is not None and (slider_max > high or (p.high_open and slider_max == high)):
        slider_max = high - float(p.step) if p.high_open else high
    return {"name": p.name, "label": p.display_name, "low": low, "high": high,
            "low_open": bool(p.low_open or low is None),
            "high_open": bool(p.high_open or high is None),
            "min": slider_min, "max": max(slider_min, slider_max), "step": float(p.step),
            "description": p.description, "allows_auto": bool(p.allows_auto)}


def json_numbers(values):
    """Parameter values for the browser: JSON has no infinity or NaN, so those
    (and None) become None, which the browser shows as "auto"."""
    return {name: (float(v) if v is not None and math.isfinite(v) else None)
            for name, v in values.items()}


class LiveControls(traitlets.HasTraits):
    """The run-controls part of :class:`~nbembed.widget.Explorer`.

    A mixin: it uses the Explorer's traits, lock, worker and method, and
    keeps the run it last adopted (``_adopted``) and the live parameters it
    shows.
    """

    #: Live parameters that change nothing now -> why (the browser dims their sliders).
    idle_params = traitlets.Dict().tag(sync=True)

    def _adopt(self, run, Y):
        """Build the controls for a new run."""
        self._show_controls(run)
        with self._sync_lock, self.hold_sync():
            self.annotation_kinds = list(run.annotation_kinds)
            self.method_name = str(getattr(run, "name", type(run).__name__))
            self._show_color_options(run.membership is not None)
            self.n_components = int(Y.shape[1])
            self._adopted = run

    def _show_controls(self, run):
        """Sliders for the live parameters the run declares now (a run may refine
        a slider's range as it learns its scale, as Mbed does once r is known)."""
        self._live_source = run.live_parameters
        self._live = dict(run.live_parameters)
        with self._sync_lock:
            self.param_specs = [param_spec(p) for p in self._live.values()]

    def _show_params_in_effect(self, run):
        """Let the browser show the value an automatic parameter has now, so
        that switching it to manual continues from there, and which parameters
        change nothing now (dimmed, with the reason)."""
        values = json_numbers(run.params_in_effect())
        idle = {name: str(reason) for name, reason in run.idle_params().items()}
        if values != self.param_values or idle != self.idle_params:
            with self._sync_lock, self.hold_sync():
                self.param_values = values
                self.idle_params = idle

    def _set_params_from_run(self, values):
        values = json_numbers(values)
        with self._sync_lock:
            self._params_from_run = True
            try:
                self.params = values
            finally:
                self._params_from_run = False

    @traitlets.validate("params")
    def _valid_params(self, proposal):
        value = proposal["value"]
        if not isinstance(value, dict):
            raise traitlets.TraitError(f"params must be a dict, got {type(value).__name__}.")
        if self._params_from_run:
            return dict(value)
        try:
            checked = self._check_live(value)
        except (TypeError, ValueError) as err:
            raise traitlets.TraitError(str(err)) from None
        for name, v in checked.items():
            if v is not None and not math.isfinite(v):
                raise traitlets.TraitError(f"{name} must be finite, got {value[name]!r}.")
        return {**self.params, **checked}

    def _check_live(self, params):
        """Validate slider values as the run will: through the run once there is
        one, before that through the live parameters the method declares."""
        run = self._adopted
        if run is not None:
            return run.check_params(params)
        declared = getattr(self._method, "live_parameters", None)
        if declared is None:
            raise ValueError(f"{type(self._method).__name__} declares no live parameters and "
                             f"its run has not started yet.")
        return check_live_params(declared, params, type(self._method).__name__)

    @traitlets.observe("params")
    def _params_changed(self, change):
        with self._sync_lock:
            if self._params_from_run:
                return
        old = change["old"] or {}
        changed = {k: v for k, v in change["new"].items() if k not in old or old[k] != v}
        if changed:
            self._worker.set_params(**changed)
