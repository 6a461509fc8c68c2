"""Colouring points in the Explorer by what the run predicts (nbembed.widget.frames)."""

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed.widget import palette  # noqa: E402
from nbembed.widget.traits import UINT16, decode  # noqa: E402
from test_widget import FakeMethod, FakeRun, bundle, make_explorer, wait_for  # noqa: E402,F401


class LateMembershipRun(FakeRun):
    """Like Mbed: no memberships before iteration 20 (its initial SNE), then
    memberships whose largest entry is 1/2 for even points and 1 for odd ones."""

    @property
    def membership(self):
        if self.iteration < 20:
            return None
        n = len(self._Y)
        M = np.zeros((n, 2))
        M[1::2, 1] = 1.0
        M[0::2] = 0.5
        return M


class LateMembershipMethod(FakeMethod):
    def prepare(self, X, y=None, annotations=None, init=None):
        return LateMembershipRun(len(X), **self.run_kwargs)


def test_memberships_that_appear_later_can_colour_by_class_and_confidence(make_explorer):
    ex = make_explorer(X=np.zeros((10, 2)), method=LateMembershipMethod(), frame_rate=60)
    ex.wait(iteration=5)
    ex.pause()
    ex.wait()
    if ex.iteration < 20:
        assert ex.color_options == ["label"]
    ex.resume()
    wait_for(lambda: "confidence" in ex.color_options)
    ex.pause()
    ex.wait()
    assert ex.color_options == ["label", "predicted", "confidence"]

    ex.color_by = "predicted"
    assert decode(ex._codes, UINT16).tolist() == [0, 1] * 5

    ex.color_by = "confidence"
    codes = decode(ex._codes, UINT16)
    top = palette.RAMP_STEPS - 1
    # the ramp spans [0, 1]: 1/2 in the middle, 1 at its end
    assert codes[1::2].tolist() == [top] * 5
    assert codes[0::2].tolist() == [round(0.5 * top)] * 5
    assert [e["name"] for e in ex.legend] == ["0", "1"]

    before = ex.run
    ex.restart()  # the new run has no memberships at first; the colouring stays offered
    wait_for(lambda: ex._adopted is not None and ex._adopted is not before)
    assert ex.color_by == "confidence" and "confidence" in ex.color_options


def test_a_fixed_ramp_range():
    coloring = palette.by_values(np.array([0.25, 0.5, np.nan]), value_range=(0.0, 1.0))
    top = palette.RAMP_STEPS - 1
    assert coloring.codes.tolist() == [round(0.25 * top), round(0.5 * top), palette.RAMP_STEPS]
    assert coloring.continuous
