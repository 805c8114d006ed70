"""R@k: the share of the query's relevant documents found in the top k.

R@k = Σ_{i<=k} rel_i / R, R the number of relevant documents of the query (in the ideal set).

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> float(evaluate("r@2", [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])["r@2"][0])
0.5
"""

from __future__ import annotations

import numpy as np

from ltr.metrics.families.base import MetricFamily, RankedQueries


def recall(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """R@k per query (0 where R = 0, flagged as without relevant documents)."""
    hits, n_rel = lists.hits(k), lists.n_rel
    return np.divide(hits, n_rel, out=np.zeros_like(hits), where=n_rel > 0), n_rel == 0


RECALL = MetricFamily(
    "r", "R@k = relevant in top k / R", binary=True, compute=recall, normalised=True, aliases=("recall",)
)
