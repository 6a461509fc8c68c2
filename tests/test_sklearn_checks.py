"""scikit-learn's estimator checks on every registered estimator.

The estimators and their small settings come from the registry; so do the
checks each one is expected to fail, with the reason
(``MethodSpec.expected_failed_checks``). The expected failures are strict: a
check that starts to pass must be taken off the list.
"""

import functools

import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

from nbembed.methods.registry import REGISTRY, get

ESTIMATORS = [spec.check_instance() for spec in REGISTRY]


def expected_failures(estimator):
    return get(type(estimator)).expected_failed_checks


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures, xfail_strict=True)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _check_name(check):
    while isinstance(check, functools.partial):
        check = check.func
    return check.__name__


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda spec: spec.name)
def test_expected_failures_name_checks_that_run_and_give_reasons(spec):
    names = {_check_name(check)
             for _, check in estimator_checks_generator(spec.check_instance(), legacy=True)}
    for name, reason in spec.expected_failed_checks.items():
        assert name in names, f"{spec.name}: {name} is not a check scikit-learn runs on it"
        assert len(reason.split()) >= 5, f"{spec.name}: give a reason for {name}"
