"""The one list of nbembed's public estimators.

Everything that enumerates methods reads :data:`REGISTRY`: the names
:mod:`nbembed` exports, the command line's ``--method`` choices and options,
the scikit-learn compatibility tests (with their small settings and the
checks each estimator is known to fail, with the reason), the methods table
of the API reference and the Explorer's default method. Adding a method is
writing its estimator and adding one :class:`MethodSpec` here (plus its
kernels, tests and docs page); see ``docs/contributing.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..affinity.learning_metric import LearningMetric
from .hssne import HSSNE
from .mbed import Mbed
from .nerv import NeRV, SNeRV
from .parametric import ParametricEmbedding
from .sne import SNE
from .spectral import SpectralSSDR
from .spectral_presets import DNE, LFDA, LPP, MFA, PCA, SELF, SSDNE, SSLFDA, SSMFA

#: The kinds of method, in the order the documentation lists them.
KINDS = {
    "neighbour embedding": "Non-linear embeddings that match input and output neighbourhoods, "
                           "optimized iteratively (a resumable run with live parameters).",
    "class posteriors": "Embeddings of class posteriors p(c | x): objects and classes together.",
    "spectral": "Linear maps (kernelized with the KPCA trick) from one generalized eigenproblem.",
    "metric": "Supervised metrics that other methods embed in; not embeddings themselves.",
}

#: How ``fit`` uses labels ``y`` (the command line's ``--use-labels``).
LABEL_USES = ("optional", "required", "unused")



@dataclass(frozen=True)
class MethodSpec:
    """One public estimator and what the rest of nbembed needs to know about it.

    Attributes
    ----------
    name : str
        Short lower-case name: the command line's ``--method`` value.
    cls : type
        The estimator class; :mod:`nbembed` exports it under its own name.
    kind : str
        A key of :data:`KINDS`.
    description : str
        One line for ``--help`` and the methods table of the API reference.
    labels : {"optional", "required", "unused"}
        Whether ``fit`` learns from labels: if given (the command line passes
        them with ``--use-labels``), always, or never.
    cli_options : tuple of str or None
        Constructor parameters the command line offers as options (keys of
        ``nbembed.cli.OPTIONS``); None keeps the method off the command line.
    check_params : dict
        Constructor arguments that make fits on the tiny data sets of
        scikit-learn's estimator checks fast.
    expected_failed_checks : dict
        scikit-learn check name -> why this estimator cannot pass it.
    """

    name: str
    cls: type
    kind: str
    description: str
    labels: str = "optional"
    cli_options: tuple | None = ()
    check_params: dict = field(default_factory=dict)
    expected_failed_checks: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {', '.join(KINDS)}; got "
                             f"{self.kind!r}.")
        if self.labels not in LABEL_USES:
            raise ValueError(f"{self.name}: labels must be one of {', '.join(LABEL_USES)}; "
                             f"got {self.labels!r}.")

    @property
    def class_name(self):
        return self.cls.__name__

    def check_instance(self):
        """A new estimator with ``check_params``, for scikit-learn's checks."""
        return self.cls(**self.check_params)

    @property
    def live_parameters(self):
        """Name -> :class:`~nbembed.optim.LiveParameter` of the method's runs."""
        return dict(getattr(self.cls, "live_parameters", {}))


_SCHEDULE = dict(max_iter=40, early_exaggeration_iter=10, random_state=0)

_TRANSFORM_IS_NOT_FIT = ("transform places each point against the fixed map, so a training "
                         "point lands near its fitted position, not exactly on it")
_TRANSFORM_CHECKS = dict.fromkeys(("check_transformer_general",
                                   "check_transformer_data_not_an_array"),
                                  _TRANSFORM_IS_NOT_FIT)
_SPECTRAL_CHECKS = dict(n_neighbors=3)


_MBED_DIMENSION = ("the check sets n_components=1, but K class directions at equal angles need "
                   "at least K - 1 dimensions (K = n_classes = 3 here, so that the checks' "
                   "three-class labels are accepted)")


def _graph_spectral(name, cls, description, *, labels="required", semi_supervised=False):
    """The entry of a spectral preset built on a k-NN graph (and γ if semi-supervised)."""
    options = ("gamma",) if semi_supervised else ()
    return MethodSpec(name, cls, "spectral", description, labels=labels,
                      cli_options=options + ("n_neighbors", "n_components"),
                      check_params=_SPECTRAL_CHECKS)


#: Every public estimator, in the order of the documentation.
REGISTRY = (
    MethodSpec(
        "hssne", HSSNE, "neighbour embedding",
        "heavy-tailed symmetric SNE; alpha 1 is t-SNE, 0 symmetric SNE; must-links",
        cli_options=("alpha", "perplexity", "rho", "max_iter", "n_components"),
        check_params=dict(perplexity=3.0, **_SCHEDULE),
        expected_failed_checks=_TRANSFORM_CHECKS),
    MethodSpec(
        "sne", SNE, "neighbour embedding",
        "stochastic neighbour embedding (Gaussian kernels)", labels="unused",
        cli_options=("perplexity", "max_iter", "n_components"),
        check_params=dict(perplexity=3.0, **_SCHEDULE),
        expected_failed_checks=_TRANSFORM_CHECKS),
    MethodSpec(
        "mbed", Mbed, "neighbour embedding",
        "large-margin embedding with K class boundaries; clustering or transductive "
        "classification",
        cli_options=("n_classes", "max_iter", "n_components"),
        check_params=dict(n_classes=3, n_anneal=3, n_iter_init=2, max_iter=8, random_state=0),
        expected_failed_checks={
            **_TRANSFORM_CHECKS,
            **dict.fromkeys(("check_dont_overwrite_parameters",
                             "check_methods_sample_order_invariance",
                             "check_methods_subset_invariance", "check_fit2d_1feature",
                             "check_fit2d_predict1d"), _MBED_DIMENSION),
            **dict.fromkeys(("check_dtype_object", "check_estimator_sparse_array",
                             "check_estimator_sparse_matrix"),
                            "the check's labels go beyond n_classes; Mbed has exactly "
                            "n_classes classes and refuses other labels")}),
    MethodSpec(
        "nerv", NeRV, "neighbour embedding",
        "neighbour retrieval visualizer: a precision-recall tradeoff", labels="unused",
        cli_options=("tradeoff", "n_neighbors", "max_iter", "n_components"),
        check_params=dict(n_neighbors=3.0, max_iter=10, anneal_iter=0, random_state=0),
        expected_failed_checks=_TRANSFORM_CHECKS),
    MethodSpec(
        "snerv", SNeRV, "neighbour embedding",
        "NeRV on a supervised learning metric", labels="required",
        cli_options=("tradeoff", "max_iter", "n_components"),
        check_params=dict(n_neighbors=3.0, max_iter=10, anneal_iter=0, random_state=0,
                          learning_metric=LearningMetric(n_components=2, sigma=1.0, cv=2,
                                                         max_iter=20, random_state=0)),
        expected_failed_checks=_TRANSFORM_CHECKS),
    MethodSpec(
        "pe", ParametricEmbedding, "class posteriors",
        "Parametric Embedding; the input holds class posteriors (rows sum to 1)",
        labels="unused", cli_options=("max_iter", "n_components"),
        check_params=dict(max_iter=20, normalize=True, random_state=0)),
    _graph_spectral("spectral", SpectralSSDR,
                    "the unified semi-supervised spectral framework (a linear map)",
                    semi_supervised=True),
    _graph_spectral("sslfda", SSLFDA, "semi-supervised local Fisher discriminant analysis",
                    semi_supervised=True),
    _graph_spectral("ssdne", SSDNE, "semi-supervised discriminant neighbourhood embedding",
                    semi_supervised=True),
    _graph_spectral("ssmfa", SSMFA, "semi-supervised marginal Fisher analysis",
                    semi_supervised=True),
    _graph_spectral("lpp", LPP, "locality preserving projections (no labels)", labels="unused"),
    MethodSpec(
        "lfda", LFDA, "spectral", "local Fisher discriminant analysis (labelled points only)",
        labels="required", cli_options=("n_components",)),
    _graph_spectral("dne", DNE, "discriminant neighbourhood embedding (labelled points only)"),
    _graph_spectral("mfa", MFA, "marginal Fisher analysis (labelled points only)"),
    MethodSpec(
        "self", SELF, "spectral", "SELF: local Fisher discriminant analysis regularized "
        "toward PCA", labels="required", cli_options=("n_components",),
        expected_failed_checks={
            "check_pipeline_consistency": "make_pipeline names the step after the lower-cased "
                                          "class name, 'self', which scikit-learn's metadata "
                                          "routing cannot take as a step name"}),
    MethodSpec(
        "pca", PCA, "spectral", "principal component analysis inside the framework",
        labels="unused", cli_options=("n_components",)),
    MethodSpec(
        "learning-metric", LearningMetric, "metric",
        "the learning metric: local distances from a conditional class density",
        labels="required", cli_options=None,
        check_params=dict(n_components=3, cv=2, max_iter=50, random_state=0),
        expected_failed_checks={
            "check_classifiers_classes": "-1 marks unlabelled points (nbembed's semi-supervised "
                                         "convention), so the labels {-1, 1} hold one class",
            "check_sample_weight_equivalence_on_dense_data":
                "the k-means++ start of the Gaussians draws from the rows, so a repeated row "
                "and a doubled weight give different starts (as for scikit-learn's KMeans)"}),
)


def _check_unique():
    for attribute in ("name", "cls"):
        values = [getattr(spec, attribute) for spec in REGISTRY]
        duplicated = {v for v in values if values.count(v) > 1}
        if duplicated:
            raise RuntimeError(f"methods registered twice by {attribute}: {duplicated}")


_check_unique()

#: Registry entries by short name.
BY_NAME = {spec.name: spec for spec in REGISTRY}


def get(name_or_class):
    """The :class:`MethodSpec` of a short name, a class name or a class.

    Raises
    ------
    KeyError
        Naming the registered methods.
    """
    for spec in REGISTRY:
        if name_or_class in (spec.name, spec.cls, spec.class_name):
            return spec
    known = ", ".join(spec.name for spec in REGISTRY)
    raise KeyError(f"{name_or_class!r} is not a registered method; registered: {known}.")


def default_method():
    """The estimator the Explorer uses when given none: HSSNE at alpha = 1 (t-SNE)."""
    return BY_NAME["hssne"].cls(alpha=1.0)
