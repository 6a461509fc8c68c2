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
