"""A model trained with ``data.normalize``, exported to take **raw** features: the transform folded in.

An exported file is fed the features as the engine computes them (raw); the model was trained on
normalised ones (:mod:`ltr.models.normalized`). Where the transform folds into the model exactly, it
is folded, so the written file needs no normaliser; where it cannot be, the export is refused, naming
what the engine would need.

**Trees, ``zscore`` and ``log1p``** (:func:`fold_tree_thresholds`). Both map each float32 value
``x`` to ``x' = g(x)`` (``zscore``: ``float32((x − mean)/std)``; ``log1p``: ``sign(x)·log1p(|x|)`` in
float32), non-decreasing in ``x``, NaN to NaN. So a canonical split ``x' <= t`` (:mod:`ltr.export.trees`)
holds exactly for the float32 ``x <= T`` with ``T`` the largest float32 where ``g(T) <= t`` — about
``mean + std·t`` and ``sign(t)·expm1(|t|)``, but found by bisection over the float32 values with
:meth:`~ltr.data.normalize.Normalizer.values` itself (the very formula ``ltr`` normalises with), so
float rounding cannot move a row across a split. The domain is every float32: ``log1p`` is the
signed form (negatives fold too), ±inf map to ±inf, and NaN keeps the split's missing direction.
A feature constant in training (``std == 0``) normalises every non-missing value to 0: its split
becomes "all non-missing rows go to the side 0 goes" — threshold +inf, the children swapped when
``0 > t`` (and the missing direction flipped with them so missing rows still go where they went).

**Linear models, ``zscore``**: ``b + Σ w_j (x_j − m_j)/s_j = (b − Σ w_j m_j/s_j) + Σ (w_j/s_j) x_j`` —
new weights and bias (constant features: weight 0). ``log1p`` is not linear: refused (the engine
would need a log1p feature transform before the linear model).

**Per-query methods** (``query_minmax``, ``query_zscore``) normalise a document by the other
documents of its query; a per-document model cannot compute that, so every format refuses them. The
engine would need a *query-level* feature normaliser (per query, each feature's min/max or mean/std
over the documents being re-ranked). The normalisers the engines have take constants fixed at upload
— the Elasticsearch/OpenSearch LTR plugin's ``feature_normalizers`` (``min_max`` with
``minimum``/``maximum``, ``standard`` with ``mean``/``standard_deviation``) and Solr LTR's
``org.apache.solr.ltr.norm.MinMaxNormalizer`` (``min``, ``max``) / ``StandardNormalizer`` (``avg``,
``std``) — so they express ``zscore`` (which is folded instead) but not per-query statistics.

The native formats (``--format lightgbm`` / ``xgboost``) write the engine's own file unchanged, so a
normalised model is refused there (export to ONNX or a search-engine format, where it is folded).

>>> import numpy as np
>>> from ltr.data.normalize import Normalizer
>>> from ltr.export.trees import Tree, TreeEnsemble
>>> t = Tree(feature=np.array([0, -1, -1]), threshold=np.array([0.5, 0, 0], np.float32),
...          left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
...          nan_left=np.array([False, False, False]), value=np.array([0.0, -1.0, 2.0]))
>>> z = Normalizer.from_manifest({"method": "zscore", "mean": [10.0], "std": [4.0]}, "m")
>>> folded = fold_normalization(TreeEnsemble((t,), 0.0, 1), z, "model")
>>> float(folded.trees[0].threshold[0])      # x' = (x - 10)/4 <= 0.5  <=>  x <= 12
12.0
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data.normalize import Normalizer
from ltr.export.trees import FLOAT32, ExpectedGrade, Exportable, LinearScorer, Tree, TreeEnsemble

#: the engines' feature normalisers (constants fixed at upload), named in the per-query refusal
ENGINE_NORMALIZERS = (
    "the Elasticsearch/OpenSearch LTR plugin's feature_normalizers (min_max: minimum/maximum, standard: "
    "mean/standard_deviation) and Solr LTR's MinMaxNormalizer (min, max) / StandardNormalizer (avg, std)"
)


def per_query_refusal(method: str, where: str) -> str:
    """The one message for a per-query method at export (module docstring)."""
    stats = "min and max" if method == "query_minmax" else "mean and standard deviation"
    return (
        f"{where}: the model was trained with data.normalize={method}, which normalises each feature by its "
        f"{stats} over the documents of the same query; an exported per-document model cannot compute that. "
        f"The engine would need a query-level feature normaliser (each feature's per-query {stats} over the "
        f"documents being re-ranked); the feature normalisers engines have take constants fixed at upload — "
        f"{ENGINE_NORMALIZERS} — so they cannot. Retrain with data.normalize=none, zscore or log1p "
        "(folded into the exported model), or normalise per query in the application before scoring"
    )


def native_refusal(method: str, engine: str) -> str:
    """The message for a normalised model asked for an engine's own (unchanged) file."""
    return (
        f"--format {engine}: writes the booster's own file, which takes features normalised with "
        f"data.normalize={method}, not the raw features; export to onnx or a search-engine format, where "
        "the normalisation is folded into the split thresholds (docs/export.md)"
    )


def _ordered(x: np.ndarray) -> np.ndarray:
    """float32 → int64 keys in the order of the values (−0 and +0 both 0)."""
    bits = np.asarray(x, dtype=FLOAT32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def _from_ordered(k: np.ndarray) -> np.ndarray:
    bits = np.where(k < 0, (-k) | 0x80000000, k).astype(np.uint32)
    return bits.view(np.int32).view(FLOAT32)


def raw_thresholds(norm: Normalizer, features: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per split: the largest float32 ``T`` with ``norm.values(T) <= t`` (−inf when even −inf exceeds ``t``).

    Bisection over the ordered float32 values (32 steps), every candidate normalised by
    :meth:`~ltr.data.normalize.Normalizer.values`: exact whatever the rounding of the formula.

    >>> z = Normalizer.from_manifest({"method": "zscore", "mean": [0.0], "std": [3.0]}, "m")
    >>> T = raw_thresholds(z, np.array([0]), np.array([np.float32(0.1)]))
    >>> bool(z.values(T, np.array([0]))[0] <= np.float32(0.1) < z.values(np.nextafter(T, np.float32(1)), np.array([0]))[0])
    True
    """
    t = np.asarray(t, dtype=FLOAT32)
    lo = np.full(t.shape, int(_ordered(np.array([-np.inf]))[0]), dtype=np.int64)  # g(-inf) = -inf <= t
    hi = np.full(t.shape, int(_ordered(np.array([np.inf]))[0]), dtype=np.int64)
    all_left = norm.values(_from_ordered(hi), features) <= t
    lo, hi = np.where(all_left, hi, lo), np.where(all_left, hi, hi - 1)
    while np.any(hi > lo):  # invariant: g(lo) <= t, and g > t above hi
        mid = lo + (hi - lo + 1) // 2
        ok = norm.values(_from_ordered(mid), features) <= t
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid - 1)
    return _from_ordered(lo)


def fold_tree_thresholds(tree: Tree, norm: Normalizer) -> Tree:
    """``tree`` over raw features (module docstring): thresholds mapped, constant-feature splits fixed."""
    split = ~tree.is_leaf
    features = np.where(split, tree.feature, 0)
    threshold = np.array(tree.threshold, dtype=FLOAT32, copy=True)
    left, right, nan_left = tree.left.copy(), tree.right.copy(), tree.nan_left.copy()
    constant = split & (~np.isfinite(norm.scale_[features]) if norm.method == "zscore" else False)
    moving = split & ~constant
    if moving.any():
        threshold[moving] = raw_thresholds(norm, features[moving], threshold[moving])
    if np.any(constant):
        right_side = constant & (threshold < 0)  # x' = 0 > t: every non-missing row goes right
        left[right_side], right[right_side] = tree.right[right_side], tree.left[right_side]
        nan_left[right_side] = ~tree.nan_left[right_side]
        threshold[constant] = np.inf
    return replace(tree, threshold=threshold, left=left, right=right, nan_left=nan_left)


def _fold_ensemble(model: TreeEnsemble, norm: Normalizer) -> TreeEnsemble:
    return replace(model, trees=tuple(fold_tree_thresholds(t, norm) for t in model.trees))


def fold_normalization(model: Exportable, norm: Normalizer | None, where: str) -> Exportable:
    """``model`` (trained on normalised features) as a model of the raw features, or a ConfigError."""
    if norm is None or norm.method == "none":
        return model
    if norm.per_query:
        raise ConfigError(per_query_refusal(norm.method, where))
    if isinstance(model, TreeEnsemble):
        return _fold_ensemble(model, norm)
    if isinstance(model, ExpectedGrade):
        return ExpectedGrade(tuple(_fold_ensemble(c, norm) for c in model.classes))
    if norm.method == "zscore":
        w = np.asarray(model.weights, dtype=np.float64) / norm.scale_  # constant features: w / inf = 0
        return LinearScorer(w, float(model.bias - np.sum(w * norm.mean_)))
    raise ConfigError(
        f"{where}: a linear model over data.normalize={norm.method} features is not linear in the raw "
        f"features; the engine would need a {norm.method} transform of each feature before the linear model "
        "(retrain with data.normalize=zscore, which folds into the weights, or none)"
    )
