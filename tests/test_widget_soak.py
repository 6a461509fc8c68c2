"""A short run of the Explorer soak (benchmarks/soak_explorer.py): random slider
moves, lassos, labels, links, pins, undo and redo, exports, imports and bad
messages, each checked against a mirror kept with the Annotations API alone."""

import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import HSSNE  # noqa: E402
from nbembed.widget import Explorer  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "benchmarks"))
import soak_explorer  # noqa: E402


@pytest.mark.parametrize("seed", [0, 1])
def test_random_actions_keep_every_annotation_once_and_the_pins_asked_for(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(c, 1.0, size=(60, 5)) for c in (0, 6, 12)])
    ex = Explorer(X, method=HSSNE(alpha=1.0, perplexity=10, random_state=0))
    ex.comm = comm = soak_explorer.RecordingComm()
    try:
        ex.wait(iteration=5, timeout=300)
        soak = soak_explorer.Soak(ex, comm, rng)
        for _ in range(150):
            soak.act()
        assert soak.failures == []
        assert sum(soak.counts.values()) == 150 and soak.counts.get("import", 0) > 0
        assert ex.status != "error"
    finally:
        ex.close()


def test_the_mirror_checks_tell_a_lost_or_doubled_annotation():
    from nbembed import Annotations

    a = Annotations(20)
    a.set_labels([1, 2], a.add_class("x"))
    a.add_must_link([3, 4, 5])
    a.add_cannot_link([6], [7, 8])
    b = a.copy()
    assert soak_explorer.same_annotations(a, b) and soak_explorer.duplicates(a) == 0
    for change in (lambda c: c.set_labels([9], 0), lambda c: c.set_labels([1], 0, 0.5),
                   lambda c: c.add_must_link([10, 11]), lambda c: c.add_cannot_link([1], [12]),
                   lambda c: c.add_must_link_pairs([[13, 14]]), lambda c: c.add_class("y")):
        c = a.copy()
        change(c)
        assert not soak_explorer.same_annotations(a, c)
    doubled = a.copy()
    doubled._must_link_groups.append(doubled._must_link_groups[0])
    assert soak_explorer.duplicates(doubled) == 1


def test_the_soak_reports_an_explorer_that_lost_an_annotation():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    ex = Explorer(X, method=HSSNE(alpha=1.0, perplexity=10, random_state=0))
    ex.comm = comm = soak_explorer.RecordingComm()
    try:
        ex.wait(iteration=5, timeout=300)
        soak = soak_explorer.Soak(ex, comm, rng)
        soak._must_link()
        soak.check("must_link")
        assert soak.failures == []
        ex.annotations.undo()  # behind the soak's back
        soak.check("must_link")
        assert len(soak.failures) == 1 and "differ from the mirror" in soak.failures[0]
    finally:
        ex.close()
