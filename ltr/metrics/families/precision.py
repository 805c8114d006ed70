"""P@k: the share of relevant documents among the top k.

P@k = Σ_{i<=k} rel_i / den, den = k or min(k, n) (the ``p_denominator`` convention; P without ``@k``
divides by the list's length n).

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> float(evaluate("p@10", [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])["p@10"][0])
0.4
"""

from __future__ import annotations

import numpy as np

from ltr.metrics.families.base import MetricFamily, RankedQueries


def precision(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """P@k per query."""
    hits = lists.hits(k)
    if k is None:
        den = lists.sizes.astype(np.float64)
    elif lists.c.p_denominator == "k":
        den = np.full(lists.n_queries, float(k))
    else:
        den = np.minimum(lists.sizes, k).astype(np.float64)
    return np.divide(hits, den, out=np.zeros_like(hits), where=den > 0), lists.n_rel == 0


PRECISION = MetricFamily(
    "p", "P@k = relevant in top k / (k or min(k, n))", binary=True, compute=precision, aliases=("precision",)
)
