"""scikit-learn baselines: ``random_forest`` (RandomForestRegressor on the grades) and ``linear``
(ridge regression on standardised features). Both are pointwise and fit in one shot: no boosting
rounds, so no early stopping (the validation metric is recorded once, see
:class:`~ltr.models.base.NonIterativeRanker`).

The ltr vocabulary is translated by the table of :mod:`ltr.models.vocabulary` (scikit-learn column;
the result is ``engine_params_``, the estimator's arguments; ``engine_params`` are extra arguments
and win):

* random_forest: n_trees → ``n_estimators``, max_depth → ``max_depth``, num_leaves →
  ``max_leaf_nodes``, min_data_in_leaf → ``min_samples_leaf``, feature_fraction → ``max_features``,
  bagging_fraction → ``max_samples`` (bootstrap share; 1.0 → a full-size bootstrap), seed →
  ``random_state``, num_threads → ``n_jobs`` (0 → -1, all cores).
* linear: alpha → ``Ridge(alpha)`` on features standardised with the training mean and standard
  deviation (``StandardScaler``; constant features get scale 1). The fitted model is folded into
  one weight vector: score = X·w + b with w_j = coef_j / scale_j and b = intercept − Σ_j w_j·mean_j.

Persistence (no pickle anywhere):

* linear: ``model.json`` with ``weights`` and ``bias`` (JSON floats round-trip exactly).
* random_forest: ``model.skops`` written by ``skops.io.dump`` (skops is a dependency of MLflow,
  pinned in ``uv.lock``). Loading trusts exactly one non-default type, ``sklearn.tree._tree.Tree``;
  a file that needs any other type is refused. skops builds objects from a restricted schema
  instead of unpickling, so a tampered file cannot run code on load.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> X = np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32)
>>> data = RankingData(X=X, y=np.round(X[:, 0] > 0), qid=np.repeat([1, 2, 3], 10))
>>> lin = Linear({"alpha": 1.0}).fit(data)
>>> bool(np.allclose(lin.predict(data), X @ lin.weights_ + lin.bias_))
True
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models import vocabulary
from ltr.models.base import NonIterativeRanker, Resolved
from ltr.models.checks import check_finite_features, check_labels_finite, row_weights

SKOPS_FILE = "model.skops"
JSON_FILE = "model.json"
TRUSTED_SKOPS_TYPES = ["sklearn.tree._tree.Tree"]


@functools.cache
def sklearn_parameter_names(estimator: str) -> dict[str, str]:
    """The arguments of the scikit-learn ``estimator`` (``"module:Class"``): its ``get_params()`` keys.

    >>> names = sklearn_parameter_names("sklearn.linear_model:Ridge")
    >>> "positive" in names, "alpha" in names, "alpah" in names
    (True, True, False)
    """
    return {name: name for name in estimator_class(estimator)().get_params()}


def estimator_class(estimator: str) -> type:
    """The class named by ``"module:Class"`` (scikit-learn loads only when a model needs it)."""
    module, _, name = estimator.partition(":")
    return getattr(importlib.import_module(module), name)


class SklearnRanker(NonIterativeRanker):
    """A pointwise scikit-learn regressor on the grades: every label must be a finite number."""

    engine = "sklearn"
    #: the scikit-learn class fitted, ``"module:Class"``; ``engine_params`` are its arguments
    estimator: ClassVar[str] = ""

    def engine_parameter_names(self) -> Mapping[str, str]:
        """The estimator's own arguments (``get_params()``: :func:`sklearn_parameter_names`)."""
        return sklearn_parameter_names(self.estimator)

    def engine_parameter_kind(self) -> str:
        return f"a parameter of scikit-learn's {self.estimator.partition(':')[2]}"

    def _check_data(self, data: RankingData, role: str, max_label: int) -> None:
        check_labels_finite(data, role)


class Linear(SklearnRanker):
    """Ridge regression on standardised features: a linear pointwise baseline."""

    name = "linear"
    estimator = "sklearn.linear_model:Ridge"

    def _check_data(self, data: RankingData, role: str, max_label: int) -> None:
        super()._check_data(data, role, max_label)
        check_finite_features(data, role, model="linear")

    def check_scoring_input(self, data: RankingData, role: str) -> None:
        check_finite_features(data, role, model="linear")

    def _fit_model(self, train: RankingData, valid: RankingData | None, cfg: Resolved, metric: Any) -> None:
        from sklearn.preprocessing import StandardScaler  # deferred: scikit-learn loads only when fitted

        self.engine_params_ = self.with_engine_params(
            vocabulary.translate(self.engine, cfg.params), cfg.engine_params
        )
        X = train.X.astype(np.float64)  # float32 features, float64 fit (as LightGBM accumulates)
        scaler = StandardScaler(with_mean=not train.is_sparse).fit(X)
        ridge = estimator_class(self.estimator)(**self.engine_params_).fit(
            scaler.transform(X), train.y, sample_weight=row_weights(train)
        )
        scale = np.asarray(scaler.scale_, dtype=np.float64)
        mean = np.zeros_like(scale) if scaler.mean_ is None or train.is_sparse else scaler.mean_
        self.weights_ = np.asarray(ridge.coef_, dtype=np.float64) / scale
        self.bias_ = float(ridge.intercept_ - self.weights_ @ mean)

    def _predict(self, X: Any) -> np.ndarray:
        return np.asarray(X @ self.weights_, dtype=np.float64) + self.bias_

    def _save_native(self, path: Path) -> dict[str, str]:
        (path / JSON_FILE).write_text(
            json.dumps({"weights": self.weights_.tolist(), "bias": self.bias_}) + "\n"
        )
        return {"model": JSON_FILE}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        state = json.loads((path / manifest["files"]["model"]).read_text())
        self.weights_ = np.asarray(state["weights"], dtype=np.float64)
        self.bias_ = float(state["bias"])
        if self.weights_.shape != (self.n_features_in_,):
            raise ConfigError(
                f"{path / JSON_FILE}: {self.weights_.shape[0]} weights for {self.n_features_in_} features"
            )


class RandomForest(SklearnRanker):
    """Random forest regression on the grades (Breiman 2001): a strong pointwise baseline."""

    name = "random_forest"
    estimator = "sklearn.ensemble:RandomForestRegressor"

    def translate(self, params: dict[str, Any], engine_params: dict[str, Any]) -> dict[str, Any]:
        """``RandomForestRegressor`` arguments for resolved ltr ``params`` (``engine_params`` win)."""
        runtime = {"seed": self.seed, "num_threads": self.num_threads}
        return self.with_engine_params(
            vocabulary.translate(self.engine, {**params, **runtime}), engine_params
        )

    def _fit_model(self, train: RankingData, valid: RankingData | None, cfg: Resolved, metric: Any) -> None:
        self.engine_params_ = self.translate(cfg.params, cfg.engine_params)
        self.model_ = estimator_class(self.estimator)(**self.engine_params_)
        self.model_.fit(train.X, train.y, sample_weight=row_weights(train))

    def _predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(X)

    def _save_native(self, path: Path) -> dict[str, str]:
        import skops.io as sio  # deferred: skops loads only to save or load a random forest

        sio.dump(self.model_, path / SKOPS_FILE)
        return {"model": SKOPS_FILE}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        import skops.io as sio  # deferred: skops loads only to save or load a random forest

        file = path / manifest["files"]["model"]
        unexpected = sorted(set(sio.get_untrusted_types(file=file)) - set(TRUSTED_SKOPS_TYPES))
        if unexpected:
            raise ConfigError(
                f"{file}: refuses to load types outside scikit-learn's random forest: {', '.join(unexpected)}"
            )
        self.model_ = sio.load(file, trusted=TRUSTED_SKOPS_TYPES)
        self.model_.set_params(n_jobs=int(self.num_threads) or -1)
