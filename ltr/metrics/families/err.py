"""ERR: expected reciprocal rank under the cascade model (Chapelle et al., 2009).

ERR@k = Σ_{r<=min(k,n)} (1/r) R_r Π_{i<r} (1 − R_i), R_i = (2^{l_i} − 1) / 2^gmax, gmax the
``err_gmax`` convention (the highest grade); a label above gmax is an error. A query whose judged
labels are all 0 has no relevant document.

>>> import numpy as np
>>> from ltr.metrics import evaluate
>>> round(float(evaluate("err", [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])["err"][0]), 6)
0.560098
"""

from __future__ import annotations

import numpy as np

from ltr.core.errors import MetricError
from ltr.metrics import _kernels
from ltr.metrics.families.base import MetricFamily, RankedQueries


def err(lists: RankedQueries, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """ERR@k per query; a label above ``err_gmax`` raises :class:`~ltr.core.errors.MetricError`."""
    r, c = lists.r, lists.c
    top = max(lists.ideal_max_label.max(initial=0), r.labels.max(initial=0))
    if top > c.err_gmax:
        raise MetricError(
            f"err: label {top:g} exceeds err_gmax={c.err_gmax}; set err_gmax to the largest grade"
        )
    stop = (np.exp2(r.labels) - 1.0) / 2.0**c.err_gmax
    return _kernels.cascade_sum(
        stop, r.bounds, r.qgrp, r.offsets, lists.cutoff(k)
    ), lists.ideal_max_label == 0


ERR = MetricFamily(
    "err", "sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i), R = (2^l - 1)/2^gmax", binary=False, compute=err
)
