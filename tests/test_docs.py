"""The examples of the docstrings run and show what they say.

The site itself is built by ``docs/test_build.py``, with the ``docs`` extra."""

import doctest
import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_svi import _permutation as permutation
from sklearn_svi import _persistence as persistence
from sklearn_svi import _report as report
from sklearn_svi.factorization import _estimator as factorization_estimator
from sklearn_svi.lda import _estimators as lda_estimators
from sklearn_svi.metrics import _coherence as coherence_metrics
from sklearn_svi.metrics import _completion as completion_metrics
from sklearn_svi.metrics import _stability as stability_metrics
from sklearn_svi.mixture import _estimator as mixture_estimator


@pytest.mark.parametrize(
    "module",
    [
        lda_estimators,
        mixture_estimator,
        factorization_estimator,
        completion_metrics,
        coherence_metrics,
        stability_metrics,
        persistence,
        permutation,
        report,
    ],
)
def test_docstring_examples(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
