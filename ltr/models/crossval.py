"""Query-level k-fold cross-validation of a configured ranker: out-of-fold scores for every row.

Queries (never single documents) are dealt into ``k`` folds by a seeded permutation. For fold ``f``
the model trains on the other folds; a seeded share ``valid_fraction`` of those training queries is
held out as the validation split (early stopping, the ``feature`` model's column choice), and fold
``f`` is scored by the fitted model. Every query is scored exactly once, so per-query metric values
of the out-of-fold scores can be pooled over folds (scores of different folds are never compared
with each other: every metric is computed within one query).

>>> import numpy as np
>>> [f.tolist() for f in query_folds(7, 3, seed=0)]
[[2, 3, 4], [5, 6], [0, 1]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models.registry import build_ranker


def query_folds(n_queries: int, k: int, *, seed: int) -> list[np.ndarray]:
    """``k`` disjoint, sorted arrays of query positions covering ``0..n_queries-1`` (sizes differ by ≤ 1)."""
    if not 2 <= k <= n_queries:
        raise ConfigError(f"cross-validation: k must be in [2, number of queries = {n_queries}], got {k}")
    perm = np.random.default_rng(seed).permutation(n_queries)
    return [np.sort(part) for part in np.array_split(perm, k)]


def train_valid_split(
    queries: np.ndarray, valid_fraction: float, *, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Split query positions into (train, valid) with a seeded ``valid_fraction`` share held out (≥ 1 query)."""
    if not 0.0 < valid_fraction < 1.0:
        raise ConfigError(f"cross-validation: valid_fraction must be in (0, 1), got {valid_fraction}")
    perm = np.random.default_rng(seed).permutation(queries)
    n_valid = max(1, round(valid_fraction * len(queries)))
    return np.sort(perm[n_valid:]), np.sort(perm[:n_valid])


def cross_val_scores(
    data: RankingData,
    model_cfg: Mapping[str, Any],
    *,
    k: int = 5,
    seed: int = 0,
    valid_fraction: float = 0.2,
    num_threads: int = 1,
) -> tuple[np.ndarray, list[Any]]:
    """Out-of-fold scores (float64, one per row of ``data``) and the fitted fold models.

    The model of fold ``f`` is built with ``seed + f`` (so folds are independent runs).
    """
    scores = np.full(data.n_docs, np.nan)
    models = []
    folds = query_folds(data.n_queries, k, seed=seed)
    for f, test_q in enumerate(folds):
        rest = np.sort(np.concatenate([q for g, q in enumerate(folds) if g != f]))
        train_q, valid_q = train_valid_split(rest, valid_fraction, seed=seed + 1000 + f)
        ranker = build_ranker(model_cfg, seed=seed + f, num_threads=num_threads)
        ranker.fit(
            data.subset(train_q, name=f"{data.name}[fold {f} train]"),
            data.subset(valid_q, name=f"{data.name}[fold {f} valid]"),
        )
        rows = data.row_indices(test_q)
        # scored as queries (a RankingData), so per-query ensembles normalise within each query
        scores[rows] = ranker.predict(data.subset(test_q, name=f"{data.name}[fold {f} test]"))
        models.append(ranker)
    return scores, models
