"""Summary statistics of a ranking dataset (what ``python -m ltr.data info`` prints).

>>> import numpy as np
>>> from ltr.data import RankingData
>>> d = RankingData(X=np.array([[1, 0, 5], [2, 0, 5], [3, 0, 5]], np.float32), y=[0, 2, 0], qid=[1, 1, 2])
>>> s = summarize(d)
>>> s["queries"], s["label_histogram"], s["queries_without_relevant"], s["features_used"], s["constant_features"]
(2, {0: 2, 2: 1}, 1, 2, [2, 3])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.data.dataset import RankingData


def _column_stats(X) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per column: min, max, stored non-zero count; plus the number of NaN/inf values."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        nonfinite = int((~np.isfinite(X.data)).sum())
        nz = np.bincount(X.indices[X.data != 0], minlength=X.shape[1])
        mn = np.asarray(X.min(axis=0).toarray()).ravel()
        mx = np.asarray(X.max(axis=0).toarray()).ravel()
        return mn, mx, nz, nonfinite
    nonfinite = int((~np.isfinite(X)).sum())
    mn = np.nanmin(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
    mx = np.nanmax(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
    nz = np.count_nonzero(X, axis=0)
    return mn, mx, nz, nonfinite


def summarize(data: RankingData) -> dict[str, Any]:
    """Queries, docs, docs-per-query distribution, label histogram, queries without a relevant doc
    (all labels 0), features used (some non-zero value), constant features (1-based ids; min == max)."""
    sizes = data.group_sizes
    labels, counts = np.unique(data.y, return_counts=True)
    per_q_max = np.maximum.reduceat(data.y, data.offsets[:-1]) if data.n_queries else np.zeros(0)
    mn, mx, nz, nonfinite = _column_stats(data.X)
    constant = np.flatnonzero(mn == mx) + 1
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
        "features_used": int((nz > 0).sum()),
        "constant_features": constant.tolist(),
        "nonfinite_values": nonfinite,
    }


def format_summary(s: dict[str, Any]) -> str:
    """Human-readable text of :func:`summarize`'s result."""
    d = s["docs_per_query"]
    const = s["constant_features"]
    shown = ", ".join(map(str, const[:20])) + (" ..." if len(const) > 20 else "")
    lines = [
        f"{s['name']}",
        f"  queries {s['queries']:,}   docs {s['docs']:,}   features {s['features']} ({s['storage']})",
        f"  docs/query  min {d['min']}  p25 {d['p25']:g}  median {d['median']:g}  p75 {d['p75']:g}  "
        f"max {d['max']}  mean {d['mean']:.1f}",
        "  labels      " + "  ".join(f"{k}: {v:,}" for k, v in s["label_histogram"].items()),
        f"  queries without a relevant doc {s['queries_without_relevant']:,}   single-doc queries "
        f"{s['single_doc_queries']:,}",
        f"  features used {s['features_used']} of {s['features']}   constant features {len(const)}"
        + (f" ({shown})" if const else ""),
        f"  NaN/inf values {s['nonfinite_values']:,}",
    ]
    return "\n".join(lines)
