"""RR (MRR over queries): the reciprocal rank of the first relevant document.

RR@k = 1 / (rank of the first document with l_i >= rel_threshold), 0 when none is in the top k.

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> float(evaluate("mrr", [0, 0, 2, 1], -np.arange(4.0), [0, 4])["mrr"][0])
0.3333333333333333
"""

from __future__ import annotations

import numpy as np

from ltr.metrics import _kernels
from ltr.metrics.families.base import MetricFamily, RankedQueries


def reciprocal_rank(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """RR@k per query: the cascade of binary relevances, stopped at the first relevant document."""
    r = lists.r
    return _kernels.cascade_sum(lists.rel, r.bounds, r.qgrp, r.offsets, lists.cutoff(k)), lists.n_rel == 0


RR = MetricFamily(
    "mrr",
    "RR(@k) = 1 / rank of the first relevant document (0 if none in the top k)",
    binary=True,
    compute=reciprocal_rank,
    aliases=("rr",),
)
