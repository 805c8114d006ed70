"""Exact per-document feature contributions of a fitted ranker: score = bias + Σ_j contribution_j.

One explainer per model family, each exact (never a sampled approximation):

=============================  ==============================================================================
LightGBM (lambdamart, xendcg,  TreeSHAP, LightGBM's own C++: ``booster.predict(X, pred_contrib=True)``; bias =
regression, click-trained)     the trees' expected value (the mean leaf value weighted by training cover)
classification (McRank)        its score Σ_k k·softmax(z)_k is not a sum over features, so the **raw score
                               z_g of one grade** is explained (``grade``; default the highest grade)
XGBoost (lambdamart_xgb, …)    TreeSHAP, XGBoost's own C++: ``predict(DMatrix, pred_contribs=True)``; its bias
                               column holds ``base_score`` (the margin every row starts from; ltr sets no
                               ``base_margin``) plus the trees' expected value; XGBoost works in float32, so
                               the rounding residual (≤ 1e-5 relative, checked) is added to the bias
CatBoost (catboost)            ``get_feature_importance(type="ShapValues")`` (CatBoost's own TreeSHAP)
linear                         w_j·x_j, bias b — **not centred** on a reference: a contribution is the
                               feature's value times its weight (feature value 0 contributes 0)
feature (single feature)       ±x_j for the chosen feature, 0 for the others, bias 0
ensemble_mean, _bagging,       Σ_m w_m·norm(s_m): each member explained, then its contributions scaled by
ensemble_blend                 w_m / spread_q and its bias mapped to w_m·(b_m − location_q) / spread_q
                               (``normalization`` none / zscore / minmax: an affine map per query,
                               :func:`ltr.models.ensembles.fusion.affine_normalization`)
=============================  ==============================================================================

Refused, with the reason (:class:`NotExplainable`, a :class:`~ltr.core.errors.ConfigError`): random forests
(scikit-learn has no native exact contribution output), rank fusion (RRF, Borda) and ``rank``
normalisation (a document's rank depends on the other documents' scores, not on its own features alone),
stacking (a second-level model over float32 copies of the member scores), LightGBM linear trees, and any
model registered from outside ``ltr``. :func:`check_explainable` says so before any data is read.

Every result is checked: contributions + bias must give the ranker's own ``predict`` (the explained raw
score for McRank) to 1e-6 (:data:`TOLERANCE`, relative above 1); a family that did not would be refused
naming the gap, never shown.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> from ltr.models.engines.feature import SingleFeature
>>> d = RankingData(X=np.array([[1, 9], [3, 8]], dtype=np.float32), y=[1, 0], qid=[1, 1])
>>> c = explain_ranker(SingleFeature({"feature": 2, "direction": "asc"}).fit(d), d)
>>> c.values.tolist(), c.bias.tolist(), c.score.tolist()
([[0.0, -9.0], [0.0, -8.0]], [0.0, 0.0], [-9.0, -8.0])
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.models.engines.feature import column
from ltr.models.ensembles.fusion import AFFINE_NORMALIZATIONS, affine_normalization, check_weights
from ltr.models.params import NEURAL_MODELS

#: contributions + bias must equal the score to this (absolute; relative to |score| above 1)
TOLERANCE = 1e-6
#: how far XGBoost's float32 contributions may miss its score before the explanation is refused
XGBOOST_ROUNDING = 1e-5

LIGHTGBM = ("lambdamart", "xendcg", "regression", "lambdamart_unbiased", "lambdamart_clicks")
XGBOOST = ("lambdamart_xgb", "lambdamart_xgb_unbiased", "lambdamart_xgb_clicks")
LINEAR_ENSEMBLES = ("ensemble_mean", "ensemble_bagging", "ensemble_blend")
#: families refused, with the reason a user reads
REFUSED = {
    "random_forest": "a scikit-learn random forest has no exact contribution output of its own "
    "(TreeSHAP over its trees is not part of ltr's dependencies); explain a LightGBM/XGBoost/CatBoost model",
    "ensemble_rrf": "reciprocal rank fusion scores a document by its ranks among the other documents, "
    "not by a sum over its own features",
    "ensemble_borda": "Borda fusion scores a document by its ranks among the other documents, "
    "not by a sum over its own features",
    "ensemble_stack": "stacking scores with a second-level model over (float32 copies of) the member "
    "scores, not a linear combination of them",
    **dict.fromkeys(
        NEURAL_MODELS,
        "a neural network's score is no exact sum of per-feature terms (gradient and sampling attributions "
        "only approximate one); explain a LightGBM/XGBoost/CatBoost or linear model",
    ),
}


class NotExplainable(ConfigError):
    """A model whose score cannot be split exactly into feature contributions (the message says why)."""


@dataclass(frozen=True)
class Contributions:
    """Per-document contributions: ``values[i, j]`` of feature ``j + 1`` (1-based ids) to row ``i``.

    ``score[i] == bias[i] + values[i].sum()`` to :data:`TOLERANCE`; ``explained`` says what ``score`` is
    (``"raw score"``, or for McRank ``"raw score of grade 4"``).
    """

    values: np.ndarray
    bias: np.ndarray
    score: np.ndarray
    explained: str = "raw score"

    @property
    def n_features(self) -> int:
        """The number of features (columns of :attr:`values`)."""
        return int(self.values.shape[1])


def _model_name(ranker: Any) -> str:
    return str(getattr(ranker, "name", type(ranker).__name__))


def check_explainable(ranker: Any, *, grade: int | None = None, where: str = "the model") -> None:
    """Raise :class:`NotExplainable` (naming ``where``) unless :func:`explain_ranker` can explain ``ranker``
    exactly; a ``grade`` is only for McRank (``classification``) and must be one of its classes."""
    name = _model_name(ranker)
    if grade is not None and name != "classification":
        raise ConfigError(
            f"--grade picks one grade's raw score of a classification (McRank) model; {where} is {name}"
        )
    if name in REFUSED:
        raise NotExplainable(f"{where} ({name}) cannot be explained exactly: {REFUSED[name]}")
    if name == "classification":
        classes = int(ranker.num_classes_)
        if grade is not None and not 0 <= grade < classes:
            raise ConfigError(f"--grade {grade}: the model's grades are 0-{classes - 1}")
        return
    if name in LIGHTGBM:
        params = getattr(ranker.booster_, "params", None) or {}
        if str(params.get("linear_tree", "false")).lower() in ("true", "1"):
            raise NotExplainable(
                f"{where} ({name}) has linear trees (linear_tree=true); LightGBM computes no exact "
                "contributions for them"
            )
        return
    if name in XGBOOST or name in ("catboost", "linear", "feature"):
        return
    if name in LINEAR_ENSEMBLES:
        normalization = ranker.params_["normalization"]
        if normalization not in AFFINE_NORMALIZATIONS:
            raise NotExplainable(
                f"{where} ({name}) normalises member scores by rank (normalization={normalization}): a rank "
                f"is not a sum over a document's own features; {', '.join(AFFINE_NORMALIZATIONS)} can be explained"
            )
        for spec, member in zip(ranker.member_specs, ranker.rankers_, strict=True):
            check_explainable(member, where=f"member {spec.label} of {where}")
        return
    raise NotExplainable(
        f"{where} ({name}) cannot be explained exactly: ltr has no exact explainer for this model family "
        f"(explainable: {', '.join(sorted({*LIGHTGBM, *XGBOOST, 'classification', 'catboost', 'linear', 'feature', *LINEAR_ENSEMBLES}))})"
    )


def explain_ranker(ranker: Any, data: RankingData, *, grade: int | None = None) -> Contributions:
    """Exact contributions of every feature to every row of ``data`` (module docstring), checked to sum to
    the ranker's score. ``data`` must have the model's number of features, or, for a model trained on a
    feature selection (``data.features``), the original file's: then the kept columns are explained and
    every other feature's contribution is 0, so ``values[:, j]`` is still feature ``j + 1`` of the file."""
    check_explainable(ranker, grade=grade)
    selection = getattr(ranker, "feature_selection_", None)
    if selection is not None and data.n_features == selection.n_features != int(ranker.n_features_in_):
        kept = explain_ranker(ranker, data.with_features(selection), grade=grade)
        values = np.zeros((kept.values.shape[0], selection.n_features), dtype=kept.values.dtype)
        values[:, selection.columns] = kept.values
        return replace(kept, values=values)
    if data.n_features != int(ranker.n_features_in_):
        raise DataError(
            f"{data.name}: has {data.n_features} feature columns but the model was trained on "
            f"{int(ranker.n_features_in_)}"
        )
    name = _model_name(ranker)
    if name == "classification":
        out = _lightgbm_grade(ranker, data, grade)
        return out
    out = _EXPLAINERS.get(name, _ensemble)(ranker, data)
    score = np.asarray(ranker.predict(data), dtype=np.float64)
    _check_sum(out, score, name)
    return replace(out, score=score)


def _check_sum(out: Contributions, score: np.ndarray, name: str) -> None:
    """Contributions + bias must give ``score`` (the ranker's own) to :data:`TOLERANCE`."""
    total = out.values.sum(axis=1) + out.bias
    gap = np.abs(total - score) / np.maximum(1.0, np.abs(score))
    if gap.size and not gap.max() <= TOLERANCE:
        row = int(np.nanargmax(gap))
        raise NotExplainable(
            f"the {name} contributions of row {row + 1} sum to {total[row]!r}, not its score {score[row]!r} "
            f"(gap {gap[row]:.3g} > {TOLERANCE}); refusing an inexact explanation"
        )


def _dense(matrix: Any) -> np.ndarray:
    return np.asarray(matrix.toarray() if sp.issparse(matrix) else matrix, dtype=np.float64)


def _lightgbm(ranker: Any, data: RankingData) -> Contributions:
    phi = _dense(ranker.booster_.predict(data.X, num_iteration=ranker.n_iterations_, pred_contrib=True))
    return Contributions(phi[:, :-1], phi[:, -1].copy(), phi.sum(axis=1))


def _lightgbm_grade(ranker: Any, data: RankingData, grade: int | None) -> Contributions:
    """McRank: the raw score z_g of one grade (LightGBM's multiclass contributions are per class blocks)."""
    classes = int(ranker.num_classes_)
    g = classes - 1 if grade is None else int(grade)
    phi = _dense(ranker.booster_.predict(data.X, num_iteration=ranker.n_iterations_, pred_contrib=True))
    width = data.n_features + 1
    block = phi[:, g * width : (g + 1) * width]
    raw = np.asarray(
        ranker.booster_.predict(data.X, num_iteration=ranker.n_iterations_, raw_score=True), dtype=np.float64
    ).reshape(-1, classes)[:, g]
    out = Contributions(block[:, :-1], block[:, -1].copy(), raw, explained=f"raw score of grade {g}")
    _check_sum(out, raw, "classification")
    return out


def _xgboost(ranker: Any, data: RankingData) -> Contributions:
    import xgboost as xgb  # deferred: the engine loads only when an XGBoost model is explained

    phi = np.asarray(
        ranker.booster_.predict(xgb.DMatrix(data.X), pred_contribs=True, strict_shape=False), dtype=np.float64
    )
    # XGBoost computes contributions in float32: their float64 sum misses its float32 score by rounding
    # (~1e-7 relative per term). That residual, checked to be rounding-sized, joins the bias, so every row
    # sums to the model's score exactly.
    score = np.asarray(ranker.predict(data), dtype=np.float64)
    residual = score - phi.sum(axis=1)
    worst = np.abs(residual) / np.maximum(1.0, np.abs(score))
    if worst.size and not worst.max() <= XGBOOST_ROUNDING:
        row = int(np.nanargmax(worst))
        raise NotExplainable(
            f"XGBoost's contributions of row {row + 1} miss its score by {residual[row]!r}, more than float32 "
            "rounding; refusing an inexact explanation"
        )
    return Contributions(phi[:, :-1], phi[:, -1] + residual, score)


def _catboost(ranker: Any, data: RankingData) -> Contributions:
    from ltr.models.engines.cat import import_catboost  # deferred: CatBoost is an optional extra

    pool = import_catboost().Pool(data.X)
    phi = np.asarray(ranker.model_.get_feature_importance(pool, type="ShapValues"), dtype=np.float64)
    return Contributions(phi[:, :-1], phi[:, -1].copy(), phi.sum(axis=1))


def _linear(ranker: Any, data: RankingData) -> Contributions:
    w = np.asarray(ranker.weights_, dtype=np.float64)
    X = data.X
    values = _dense(X.multiply(w[None, :]) if sp.issparse(X) else np.asarray(X, dtype=np.float64) * w)
    bias = np.full(data.n_docs, float(ranker.bias_))
    return Contributions(values, bias, values.sum(axis=1) + bias)


def _feature(ranker: Any, data: RankingData) -> Contributions:
    j = int(ranker.feature_)
    x = column(data.X, j)
    missing = np.flatnonzero(np.isnan(x))
    if missing.size:
        raise DataError(
            f"{data.name}: row {int(missing[0]) + 1} has no value (NaN) for feature {j + 1}, which the feature "
            "model ranks last with score -inf: no finite contribution explains it"
        )
    values = np.zeros((data.n_docs, data.n_features))
    values[:, j] = x if ranker.direction_ == "desc" else -x
    return Contributions(values, np.zeros(data.n_docs), values[:, j].copy())


def _ensemble(ranker: Any, data: RankingData) -> Contributions:
    """Σ_m w_m·(s_m − location_q)/spread_q over members (mean: w/Σw; blend: the learned weights)."""
    p = ranker.params_
    n = len(ranker.rankers_)
    if _model_name(ranker) == "ensemble_blend":
        weights = np.asarray(ranker.weights_, dtype=np.float64)
    else:
        weights = check_weights(p["weights"], n)
        weights = weights / weights.sum()
    values = np.zeros((data.n_docs, data.n_features))
    bias = np.zeros(data.n_docs)
    for w, member in zip(weights, ranker.rankers_, strict=True):
        part = explain_ranker(member, data)
        location, spread = affine_normalization(part.score, data.offsets, p["normalization"])
        values += (w / spread)[:, None] * part.values
        bias += w * (part.bias - location) / spread
    return Contributions(values, bias, values.sum(axis=1) + bias)


_EXPLAINERS = {
    **dict.fromkeys(LIGHTGBM, _lightgbm),
    **dict.fromkeys(XGBOOST, _xgboost),
    "catboost": _catboost,
    "linear": _linear,
    "feature": _feature,
}
