"""Live parameters: what a run accepts while it is going on, and in which range."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validation import check_number


@dataclass(frozen=True)
class LiveParameter:
    """A parameter that may change while a run is going on.

    The accepted values form the interval from ``low`` to ``high``; each end
    is included unless ``low_open`` / ``high_open`` says otherwise, and an
    infinite end is always open. The run, the estimator that makes it and the
    Explorer's sliders all check values with :meth:`validate`, so they accept
    the same values.

    Attributes
    ----------
    name : str
    low, high : float
        Ends of the accepted interval (``high`` may be ``math.inf``).
    slider : tuple of float
        The range a slider should show by default (inside the interval).
    step : float
        Slider resolution.
    description : str
        One line for a tooltip.
    label : str
        Short display name (a Greek letter, say); defaults to ``name``.
    allows_auto : bool
        If True, ``None`` is accepted and means "let the method choose"
        (for example Mbed's annealed λ); a widget shows an "auto" toggle.
    low_open, high_open : bool
        Whether ``low`` / ``high`` itself is excluded: Mbed's λ lies in
        (0, inf), so ``low_open=True``.
    """

    name: str
    low: float
    high: float
    slider: tuple
    step: float
    description: str
    label: str = ""
    allows_auto: bool = False
    low_open: bool = False
    high_open: bool = False

    @property
    def display_name(self):
        return self.label or self.name

    @property
    def interval(self):
        """The accepted interval as text, such as ``"(0, inf)"``."""
        left = "(" if self.low_open or math.isinf(self.low) else "["
        right = ")" if self.high_open or math.isinf(self.high) else "]"
        return f"{left}{self.low:g}, {self.high:g}{right}"

    def validate(self, value):
        """Return ``value`` as a float (or None where automatic is allowed),
        or raise naming the accepted range.

        Raises
        ------
        TypeError
            For a value that is not a real number (or None where ``allows_auto``).
        ValueError
            For NaN or a value outside the interval.
        """
        if value is None and self.allows_auto:
            return None
        return check_number(value, self.name,
                            low=None if math.isinf(self.low) else self.low,
                            high=None if math.isinf(self.high) else self.high,
                            low_open=self.low_open, high_open=self.high_open)
