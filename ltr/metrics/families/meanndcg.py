"""MeanNDCG: the mean of NDCG@1..NDCG@m, LETOR 4.0's summary of a whole ranked list.

MeanNDCG@k = (1/m) Σ_{j<=m} NDCG@j, m = min(k, n) (``meanndcg`` without ``@k``: the whole list). With
``ties="average"`` each rank's gain is its tie group's mean gain: E[DCG@j] over the random orders of
the tied documents, by linearity.

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> round(float(evaluate("meanndcg@2", [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])["meanndcg@2"][0]), 6)
0.889471
"""

from __future__ import annotations

import numpy as np

from ltr.metrics import _kernels
from ltr.metrics.families.base import MetricFamily, RankedQueries


def mean_ndcg(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """MeanNDCG@k per query (tie groups averaged under ``ties="average"``)."""
    r = lists.r
    expected = lists.gain  # each rank's gain, or its tie group's mean gain (E[DCG@j], by linearity)
    if lists.c.ties == "average" and expected.size:
        group_sizes = np.diff(r.bounds)
        expected = np.repeat(np.add.reduceat(expected, r.bounds[:-1]) / group_sizes, group_sizes)
    values = _kernels.mean_ndcg(
        expected, r.offsets, lists.ideal_gain, lists.ideal_offsets, lists.disc, lists.cutoff(k), lists.sizes
    )
    return values, ~lists.has_gain()


MEAN_NDCG = MetricFamily(
    "meanndcg",
    "(1/m) sum_{j=1..m} NDCG@j, m = min(k, n) (LETOR's MeanNDCG)",
    binary=False,
    compute=mean_ndcg,
    normalised=True,
    aliases=("mean_ndcg",),
)
