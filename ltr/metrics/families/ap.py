"""AP (MAP over queries): the mean precision at the ranks of the relevant documents.

AP@k = (1/den) Σ_{i<=k} rel_i P@i, rel_i = [l_i >= rel_threshold], den = R (the number of relevant
documents of the query) or min(R, k) (the ``ap_denominator`` convention; AP without ``@k`` always
divides by R).

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> float(evaluate("map", [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])["map"][0])
0.95
"""

from __future__ import annotations

import numpy as np

from ltr.metrics import _kernels
from ltr.metrics.families.base import MetricFamily, RankedQueries


def average_precision(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """AP@k per query (0 where the denominator is 0, flagged as without relevant documents)."""
    r = lists.r
    num = _kernels.precision_sum(lists.rel, r.bounds, r.qgrp, r.offsets, lists.cutoff(k))
    den = lists.n_rel if (lists.c.ap_denominator == "R" or k is None) else np.minimum(lists.n_rel, k)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0), lists.n_rel == 0


AP = MetricFamily(
    "map",
    "AP(@k) = (1/denominator) sum_{relevant i<=k} P@i",
    binary=True,
    compute=average_precision,
    normalised=True,
    aliases=("ap",),
)
