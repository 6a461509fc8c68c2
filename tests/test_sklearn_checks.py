"""scikit-learn's estimator checks on every estimator, with no expected failures."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from nbembed import HSSNE, SNE

# Small perplexity and few iterations: the checks fit on tiny data many times.
ESTIMATORS = [
    HSSNE(perplexity=3.0, n_iter=60, early_exaggeration_iter=20, random_state=0),
    SNE(perplexity=3.0, n_iter=60, early_exaggeration_iter=20, random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
