"""The Explorer's force arrows (nbembed.widget.arrows)."""

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import HSSNE  # noqa: E402
from nbembed.widget.arrows import MAX_FORCE_POINTS  # noqa: E402
from nbembed.widget.explorer import BROWSER_WRITABLE  # noqa: E402
from test_widget import bundle, make_explorer, update_msg, wait_for  # noqa: E402,F401


@pytest.fixture
def paused_hssne(make_explorer):
    X = np.random.default_rng(0).normal(size=(60, 4))
    ex = make_explorer(X=X, method=HSSNE(alpha=1.0, max_iter=200, early_exaggeration_iter=5,
                                         random_state=0), autostart=False)
    ex.wait(timeout=120)
    return ex


def test_arrows_are_the_terms_of_run_forces_for_the_selected_points(paused_hssne):
    ex = paused_hssne
    assert {"show_forces", "hovered"} <= BROWSER_WRITABLE
    assert ex.phase == "early exaggeration"
    ex.selection = [3, 7]
    assert ex.forces == {}
    ex.show_forces = True
    assert wait_for(lambda: ex.forces.get("points") == [3, 7])
    expected = ex.run.forces([3, 7])
    assert [t["name"] for t in ex.forces["terms"]] == list(expected)
    assert ex.forces["phase"] == "early exaggeration" and ex.forces["exaggeration"] > 1
    for term in ex.forces["terms"]:
        # the push, minus the gradient's part, in the plot's plane (d = 2: the embedding's)
        np.testing.assert_allclose(term["vectors"], -expected[term["name"]], rtol=1e-5,
                                   atol=1e-7)
        assert term["label"] == expected.labels[term["name"]]

    ex.hovered = 5
    assert wait_for(lambda: ex.forces.get("points") == [5])
    ex.hovered = -1
    assert wait_for(lambda: ex.forces.get("points") == [3, 7])

    before = ex.forces["iteration"]
    for _ in range(6):  # past early exaggeration
        ex.step()
        ex.wait(timeout=60)
    assert wait_for(lambda: ex.forces.get("iteration") == before + 6)
    assert wait_for(lambda: ex.phase != "early exaggeration")
    assert ex.forces["phase"] == ex.phase

    ex.show_forces = False
    assert wait_for(lambda: ex.forces == {})


def test_many_selected_points_get_arrows_for_the_first_ones(paused_hssne):
    ex = paused_hssne
    ex.selection = np.arange(60)
    ex.show_forces = True
    assert wait_for(lambda: len(ex.forces.get("points", [])) == MAX_FORCE_POINTS)
    assert ex.forces["points"] == list(range(MAX_FORCE_POINTS))


def test_a_bad_hover_from_the_browser_is_ignored_and_annotations_kept(paused_hssne):
    ex = paused_hssne
    ex.apply("soft_label", [1, 2], new_class="a")
    ex._handle_msg(update_msg({"hovered": 60, "show_forces": True}))
    assert ex.hovered == -1 and ex.show_forces
    assert "Ignored an update of 'hovered'" in ex.notice
    ex._handle_msg(update_msg({"hovered": "x"}))
    assert ex.hovered == -1
    assert ex.annotations.to_labels()[[1, 2]].tolist() == [0, 0]


def test_a_run_without_forces_turns_the_arrows_off_with_a_notice(make_explorer):
    ex = make_explorer(autostart=False)
    ex.wait(timeout=30)
    ex.selection = [1]
    ex.show_forces = True
    assert wait_for(lambda: not ex.show_forces)
    assert "Force arrows are not available" in ex.notice
    assert ex.forces == {}


def test_largest_affinities_and_nearest_points_match_brute_force():
    import scipy.sparse as sp

    from nbembed.widget.arrows import largest_affinities, nearest_in_embedding

    rng = np.random.default_rng(3)
    P = rng.random((30, 30)) * (rng.random((30, 30)) < 0.4)

    class Run:
        objective = type("Objective", (), {"P": P})()

    expected = [j for j in np.argsort(-P[4], kind="stable") if j != 4 and P[4, j] > 0][:5]
    assert largest_affinities(Run, 4, 5, 30).tolist() == expected
    Run.objective.P = sp.csr_matrix(P)
    assert largest_affinities(Run, 4, 5, 30).tolist() == expected
    Run.objective = object()
    assert largest_affinities(Run, 4, 5, 30) is None

    Y = rng.normal(size=(30, 2))
    d = np.linalg.norm(Y - Y[7], axis=1)
    assert nearest_in_embedding(Y, 7, 4).tolist() == np.argsort(d)[1:5].tolist()


def test_neighbour_lines_follow_the_hovered_point(paused_hssne):
    ex = paused_hssne
    assert "show_neighbours" in BROWSER_WRITABLE
    ex.hovered = 11
    ex.show_neighbours = True
    assert wait_for(lambda: ex.neighbours.get("point") == 11)
    P = ex.run.objective.P
    row = np.asarray(P[11].todense()).ravel() if hasattr(P, "todense") else P[11]
    assert set(ex.neighbours["input"]) <= set(np.flatnonzero(row > 0))
    assert row[ex.neighbours["input"][0]] == row[np.arange(60) != 11].max()
    Y = ex.run.embedding
    d = np.linalg.norm(Y - Y[11], axis=1)
    assert ex.neighbours["output"] == np.argsort(d)[1:11].tolist()
    ex.hovered = -1
    assert wait_for(lambda: ex.neighbours == {})
