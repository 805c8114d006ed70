"""Summary statistics of a ranking dataset (what ``python -m ltr.data info`` prints).

Per feature (1-based ids, as in the file): *used* when some value is non-zero and not NaN; *all
missing* when every value is NaN (LightGBM and XGBoost see no value, so it is not used); *constant*
when it has a non-NaN value and all its non-NaN values are equal (an absent sparse entry is 0).
Constant features are reported as inclusive ``[first, last]`` runs, so a file with one token
``2147483646:1`` summarises in memory proportional to its stored entries, not to its width.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> nan = float("nan")
>>> X = np.array([[1, 0, 5, nan], [2, 0, 5, nan], [3, 0, 5, nan]], np.float32)
>>> d = RankingData(X=X, y=[0, 2, 0], qid=[1, 1, 2])
>>> s = summarize(d)
>>> s["queries"], s["label_histogram"], s["queries_without_relevant"], s["features_used"]
(2, {0: 2, 2: 1}, 1, 2)
>>> s["constant_features"], s["constant_feature_ranges"], s["features_all_missing"]
(2, [[2, 3]], 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.data.dataset import RankingData

_ROW_CHUNK = 1 << 16  # dense rows reduced at a time: the temporary copies stay small


class _FeatureStats:
    """Per-column facts for the columns in ``ids`` (0-based, increasing); every other column holds
    only zeros (an unstored sparse column): constant, not used, not missing."""

    def __init__(self, ids, used, all_missing, constant, nonfinite: int) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        self.used = np.asarray(used, dtype=bool)
        self.all_missing = np.asarray(all_missing, dtype=bool)
        self.constant = np.asarray(constant, dtype=bool)
        self.nonfinite = nonfinite


def _dense_stats(X: np.ndarray) -> _FeatureStats:
    n_rows, n_cols = X.shape
    lo = np.full(n_cols, np.inf)
    hi = np.full(n_cols, -np.inf)
    nan = np.zeros(n_cols, dtype=np.int64)
    nonzero = np.zeros(n_cols, dtype=np.int64)  # non-zero and not NaN
    nonfinite = 0
    for start in range(0, n_rows, _ROW_CHUNK):
        block = np.asarray(X[start : start + _ROW_CHUNK], dtype=np.float64)
        is_nan = np.isnan(block)
        nonfinite += int((~np.isfinite(block)).sum())
        nan += is_nan.sum(axis=0)
        nonzero += ((block != 0) & ~is_nan).sum(axis=0)
        lo = np.minimum(lo, np.where(is_nan, np.inf, block).min(axis=0, initial=np.inf))
        hi = np.maximum(hi, np.where(is_nan, -np.inf, block).max(axis=0, initial=-np.inf))
    has_value = nan < n_rows
    return _FeatureStats(
        np.arange(n_cols), nonzero > 0, (nan == n_rows) & (n_rows > 0), has_value & (lo == hi), nonfinite
    )


def _sparse_stats(X) -> _FeatureStats:
    """O(stored entries) work and memory: only the columns that occur are looked at."""
    X = sp.csr_matrix(X)
    n_rows = X.shape[0]
    order = np.argsort(X.indices, kind="stable")
    cols, vals = X.indices[order].astype(np.int64), X.data[order].astype(np.float64)
    ids, starts, stored = np.unique(cols, return_index=True, return_counts=True)
    is_nan = np.isnan(vals)
    if ids.size == 0:
        return _FeatureStats(ids, [], [], [], 0)
    nan = np.add.reduceat(is_nan.astype(np.int64), starts)
    nonzero = np.add.reduceat(((vals != 0) & ~is_nan).astype(np.int64), starts)
    lo = np.minimum.reduceat(np.where(is_nan, np.inf, vals), starts)
    hi = np.maximum.reduceat(np.where(is_nan, -np.inf, vals), starts)
    implicit_zero = stored < n_rows
    lo = np.where(implicit_zero, np.minimum(lo, 0.0), lo)
    hi = np.where(implicit_zero, np.maximum(hi, 0.0), hi)
    has_value = nan < n_rows
    nonfinite = int((~np.isfinite(X.data)).sum())
    return _FeatureStats(ids, nonzero > 0, nan == n_rows, has_value & (lo == hi), nonfinite)


def _runs_outside(n: int, breaks: np.ndarray) -> list[list[int]]:
    """1-based inclusive ``[first, last]`` runs of ``range(n)`` that avoid the sorted 0-based ``breaks``.

    >>> _runs_outside(10, np.array([0, 3, 4, 9]))
    [[2, 3], [6, 9]]
    """
    edges = np.concatenate([[-1], breaks, [n]])
    first, last = edges[:-1] + 1, edges[1:] - 1
    keep = first <= last
    return [[int(a) + 1, int(b) + 1] for a, b in zip(first[keep], last[keep], strict=True)]


def feature_stats(X) -> _FeatureStats:
    """Per-feature facts of a dense or sparse matrix (see the module docstring for the definitions)."""
    return _sparse_stats(X) if sp.issparse(X) else _dense_stats(np.asarray(X))


def summarize(data: RankingData) -> dict[str, Any]:
    """Queries, docs, docs-per-query distribution, label histogram, queries without a relevant doc
    (all labels 0), features used, all missing and constant (their 1-based ``[first, last]`` runs); see the
    module docstring for what each feature count means."""
    sizes = data.group_sizes
    labels, counts = np.unique(data.y, return_counts=True)
    per_q_max = np.maximum.reduceat(data.y, data.offsets[:-1]) if data.n_queries else np.zeros(0)
    stats = feature_stats(data.X)
    not_constant = stats.ids[~stats.constant]
    constant_runs = _runs_outside(data.n_features, not_constant)
    q = np.percentile(sizes, [0, 25, 50, 75, 100]) if sizes.size else np.zeros(5)
    return {
        "name": data.name,
        "queries": data.n_queries,
        "docs": data.n_docs,
        "features": data.n_features,
        "storage": "csr" if data.is_sparse else "dense",
        "docs_per_query": {
            "min": int(q[0]),
            "p25": float(q[1]),
            "median": float(q[2]),
            "p75": float(q[3]),
            "max": int(q[4]),
            "mean": float(sizes.mean()) if sizes.size else 0.0,
        },
        "label_histogram": {
            (int(k) if float(k).is_integer() else float(k)): int(c)
            for k, c in zip(labels, counts, strict=True)
        },
        "queries_without_relevant": int((per_q_max <= 0).sum()),
        "single_doc_queries": int((sizes == 1).sum()),
        "features_used": int(stats.used.sum()),
        "features_all_missing": int(stats.all_missing.sum()),
        "constant_features": data.n_features - int(not_constant.size),
        "constant_feature_ranges": constant_runs,
        "nonfinite_values": stats.nonfinite,
    }


def format_summary(s: dict[str, Any]) -> str:
    """Human-readable text of :func:`summarize`'s result."""
    d = s["docs_per_query"]
    runs = s["constant_feature_ranges"]
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:20]) + (
        " ..." if len(runs) > 20 else ""
    )
    lines = [
        f"{s['name']}",
        f"  queries {s['queries']:,}   docs {s['docs']:,}   features {s['features']} ({s['storage']})",
        f"  docs/query  min {d['min']}  p25 {d['p25']:g}  median {d['median']:g}  p75 {d['p75']:g}  "
        f"max {d['max']}  mean {d['mean']:.1f}",
        "  labels      " + "  ".join(f"{k}: {v:,}" for k, v in s["label_histogram"].items()),
        f"  queries without a relevant doc {s['queries_without_relevant']:,}   single-doc queries "
        f"{s['single_doc_queries']:,}",
        f"  features used {s['features_used']} of {s['features']}   all NaN {s['features_all_missing']}   "
        f"constant {s['constant_features']}" + (f" ({shown})" if runs else ""),
        f"  NaN/inf values {s['nonfinite_values']:,}",
    ]
    return "\n".join(lines)
