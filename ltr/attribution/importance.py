"""Rank-aware global feature importance, each number with a bootstrap CI over queries.

Two measures per feature ``j`` (1-based ids), both per query first, then averaged over queries:

* **mean |contribution|**: the mean over a query's documents of |c_ij| (exact contributions,
  :mod:`ltr.attribution.contributions`); how much the feature moves the scores, in score units.
* **ΔNDCG@k** (``metric``, any ltr metric name): metric(original scores) − metric(scores after feature ``j`` is
  replaced by its query mean in every document of the query), the model re-scored on the modified
  features. Replacing by the query mean removes what the feature says *within* a query (the part a
  ranking can use) and keeps its level; ΔNDCG > 0: the ranking needs the feature. It is 0 for a
  feature the model does not use, and for a query whose documents all share one value of it.

Each mean gets :func:`ltr.stats.bootstrap_ci` over queries (seeded; NaN = a query the metric
skips, e.g. no relevant document under ``no_relevant=skip``, left out). Metric values come from
:func:`ltr.metrics.evaluate` with the chosen preset.

>>> X = np.array([[1.0, 5.0], [3.0, 6.0], [10.0, 7.0]])
>>> query_mean_replaced(X, np.array([0, 2, 3]), 0).tolist()
[[2.0, 5.0], [2.0, 6.0], [10.0, 7.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.attribution.contributions import Contributions
from ltr.core.ranking import query_index
from ltr.data import RankingData
from ltr.metrics import evaluate
from ltr.stats import bootstrap_ci


def query_means(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query, the mean of each column of ``values`` (rows of the query), NaN ignored: (n_queries, columns).

    >>> query_means(np.array([[1.0], [np.nan], [4.0]]), np.array([0, 2, 3])).tolist()
    [[1.0], [4.0]]
    """
    q = query_index(offsets)
    n_queries = offsets.shape[0] - 1
    finite = ~np.isnan(values)
    sums = np.zeros((n_queries, values.shape[1]))
    counts = np.zeros((n_queries, values.shape[1]))
    np.add.at(sums, q, np.where(finite, values, 0.0))
    np.add.at(counts, q, finite)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def query_mean_replaced(X: np.ndarray, offsets: np.ndarray, j: int) -> np.ndarray:
    """A copy of dense ``X`` whose column ``j`` (0-based) holds, in every row, its query's mean of that
    column (missing values left out of the mean; a query with none keeps NaN); other columns unchanged."""
    out = np.array(X, copy=True)
    means = query_means(np.asarray(X[:, [j]], dtype=np.float64), offsets)[:, 0]
    out[:, j] = means[query_index(offsets)]
    return out


@dataclass(frozen=True)
class GlobalImportance:
    """Per-query values and their means with CIs; rows of the frames ordered by mean |contribution|."""

    metric: str
    query_ids: np.ndarray
    features: np.ndarray  # 1-based ids explained (every column of the arrays below)
    per_query_abs: np.ndarray  # (n_queries, n_features): mean |c| over the query's documents
    per_query_delta: np.ndarray  # (n_queries, n_features): metric(original) − metric(feature → query mean)
    per_query_metric: np.ndarray  # (n_queries,): metric of the original scores
    abs_ci: np.ndarray  # (n_features, 3): mean, low, high
    delta_ci: np.ndarray  # (n_features, 3)
    confidence: float
    B: int
    seed: int

    def order(self) -> np.ndarray:
        """Column positions by mean |contribution| (largest first; ties by |ΔNDCG|, then feature id)."""
        return np.lexsort((self.features, -np.abs(self.delta_ci[:, 0]), -self.abs_ci[:, 0]))

    def to_frame(self, names: Sequence[str] | None = None) -> Any:
        """One row per feature: ``feature``, ``name``, mean |contribution| and ΔNDCG with their CIs."""
        import pandas as pd  # deferred: pandas (~0.3 s) only for the tables and files

        order = self.order()
        d = self.metric
        return pd.DataFrame(
            {
                "feature": self.features[order],
                "name": [_name(names, int(f)) for f in self.features[order]],
                "mean_abs_contribution": self.abs_ci[order, 0],
                "mean_abs_ci_low": self.abs_ci[order, 1],
                "mean_abs_ci_high": self.abs_ci[order, 2],
                f"delta_{d}": self.delta_ci[order, 0],
                f"delta_{d}_ci_low": self.delta_ci[order, 1],
                f"delta_{d}_ci_high": self.delta_ci[order, 2],
            }
        )

    def per_query_frame(self) -> Any:
        """Long format: ``qid``, ``feature``, ``mean_abs_contribution``, ``delta_<metric>``, ``<metric>``."""
        import pandas as pd  # deferred: pandas (~0.3 s) only for the tables and files

        n_q, n_f = self.per_query_abs.shape
        return pd.DataFrame(
            {
                "qid": np.repeat(self.query_ids, n_f),
                "feature": np.tile(self.features, n_q),
                "mean_abs_contribution": self.per_query_abs.ravel(),
                f"delta_{self.metric}": self.per_query_delta.ravel(),
                self.metric: np.repeat(self.per_query_metric, n_f),
            }
        )


def _name(names: Sequence[str] | None, feature: int) -> str:
    return names[feature - 1] if names is not None else f"f{feature}"


def global_importance(
    ranker: Any,
    data: RankingData,
    contributions: Contributions,
    *,
    metric: str = "ndcg@10",
    preset: str = "ltr",
    B: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    on_feature: Callable[[int], None] | None = None,
) -> GlobalImportance:
    """Both measures of the module docstring for every feature of ``data``; ``on_feature(j)`` after each
    feature's re-scoring (a progress bar). ``contributions`` are ``data``'s rows, as explained."""
    offsets = data.offsets
    original = evaluate(metric, data.y, contributions.score, offsets, preset=preset)[metric]
    X = data.X.toarray() if sp.issparse(data.X) else np.array(data.X, copy=True)
    work = RankingData(X=X, y=data.y, qid=data.qid, name=data.name)
    n_features = data.n_features
    per_query_abs = query_means(np.abs(contributions.values), offsets)
    per_query_delta = np.empty((data.n_queries, n_features))
    q = query_index(offsets)
    for j in range(n_features):
        kept = work.X[:, j].copy()
        means = query_means(kept[:, None].astype(np.float64), offsets)[:, 0]
        work.X[:, j] = means[q]
        scores = np.asarray(ranker.predict(work), dtype=np.float64)
        work.X[:, j] = kept
        replaced = evaluate(metric, data.y, scores, offsets, preset=preset)[metric]
        per_query_delta[:, j] = original - replaced
        if on_feature is not None:
            on_feature(j)
    abs_ci = _cis(per_query_abs, B, seed, confidence)
    delta_ci = _cis(per_query_delta, B, seed, confidence)
    return GlobalImportance(
        metric=metric,
        query_ids=data.query_ids,
        features=np.arange(1, n_features + 1),
        per_query_abs=per_query_abs,
        per_query_delta=per_query_delta,
        per_query_metric=original,
        abs_ci=abs_ci,
        delta_ci=delta_ci,
        confidence=confidence,
        B=B,
        seed=seed,
    )


def _cis(per_query: np.ndarray, B: int, seed: int, confidence: float) -> np.ndarray:
    """(mean, low, high) per column; an all-NaN or constant column gets its mean as both bounds."""
    out = np.full((per_query.shape[1], 3), np.nan)
    for j in range(per_query.shape[1]):
        values = per_query[:, j]
        kept = values[~np.isnan(values)]
        if kept.size == 0:
            continue
        if np.all(kept == kept[0]):
            out[j] = kept[0]
            continue
        r = bootstrap_ci(kept, B=B, seed=seed, confidence=confidence, method="percentile")
        out[j] = (r.estimate, r.low, r.high)
    return out
