"""DCG and NDCG: graded gains discounted by rank.

For one query with labels l_1..l_n in ranked order, G the gain and D the discount (the ``gain`` and
``discount`` conventions, :class:`~ltr.metrics.conventions.Conventions`):

- DCG@k = Σ_{i<=min(k,n)} G(l_i) D(i)
- NDCG@k = DCG@k / IDCG@k, IDCG@k the DCG@k of the ideal order (the list, or every judged document
  when ``ideal_labels`` is given); a query with IDCG = 0 has no relevant document.

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> v = evaluate(["dcg@3", "ndcg@3"], [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])
>>> round(float(v["dcg@3"][0]), 6), round(float(v["ndcg@3"][0]), 6)
(12.392789, 0.959454)
"""

from __future__ import annotations

import numpy as np

from ltr.metrics.families.base import MetricFamily, RankedQueries


def dcg(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """DCG@k per query; without any positive gain in the ideal set a query has nothing to find."""
    return lists.dcg(k), ~lists.has_gain()


def ndcg(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """DCG@k / IDCG@k per query (0 where IDCG@k = 0, flagged as without relevant documents)."""
    values, idcg = lists.dcg(k), lists.idcg(k)
    return np.divide(values, idcg, out=np.zeros_like(values), where=idcg > 0), ~lists.has_gain()


NDCG = MetricFamily("ndcg", "DCG@k / IDCG@k", binary=False, compute=ndcg, normalised=True)
DCG = MetricFamily("dcg", "sum_{i<=k} G(l_i) D(i)", binary=False, compute=dcg)
